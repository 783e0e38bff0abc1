"""What real agent CLIs need from the harness, each through a real pytest run (issue 12).

The agent is ``tests/agents/cli_like.py``: it keeps memory in HOME, as stock CLIs do, takes its
prompt wherever the run delivers it, and records what it saw.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

CASE_ENV = ("--recall-env=CLI_LIKE_CASE={case}",)
MEGABYTE = 1 << 20


def remember_case(recall_suite, case_id: str, *, padding: int = 0) -> None:
    """A case whose first prompt is ``padding`` bytes of filler lines (a multiple of 64), then the fact."""
    filler = ("x" * 63 + "\n") * (padding // 64)
    recall_suite.add(case_id, [f"{filler}REMEMBER 12345.67\n", "RECALL the value"])


@pytest.mark.parametrize("mode", ["stdin", "file"])
def test_a_megabyte_prompt_reaches_the_agent_whole_on_stdin_or_in_a_file(recall_suite, mode):
    remember_case(recall_suite, "big", padding=MEGABYTE)

    result = recall_suite.run(f"--recall-prompt={mode}", *CASE_ENV, command=recall_suite.agent("cli_like"))

    result.assert_outcomes(passed=1)
    first = recall_suite.probe("big", 1)
    assert first["via"] == mode
    assert first["prompt_bytes"] == MEGABYTE + len("REMEMBER 12345.67\n")


def test_an_argv_prompt_over_the_limit_is_a_collection_error_and_no_session_runs(recall_suite):
    remember_case(recall_suite, "big", padding=140_032)
    remember_case(recall_suite, "small")

    result = recall_suite.run(*CASE_ENV, command=recall_suite.agent("cli_like"))

    result.assert_outcomes(errors=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*malformed case: *big: step1.txt is 140,050 bytes, more than one command-line argument can hold*"
            "--recall-prompt=stdin*"
        ]
    )
    assert not (recall_suite.probe_dir / "big-step1.json").exists()


@pytest.mark.parametrize("mode", ["fresh", "case"])
def test_the_workdir_is_the_same_path_for_every_step_only_when_asked_and_always_empty(recall_suite, mode):
    remember_case(recall_suite, "c1")
    remember_case(recall_suite, "c2")

    recall_suite.run(f"--recall-workdir={mode}", *CASE_ENV, command=recall_suite.agent("cli_like")).assert_outcomes(
        passed=2
    )

    first, second = recall_suite.probe("c1", 1), recall_suite.probe("c1", 2)
    assert (first["cwd"] == second["cwd"]) is (mode == "case")
    assert first["cwd_listing"] == second["cwd_listing"] == []
    assert recall_suite.probe("c2", 1)["cwd"] != first["cwd"]
    assert not Path(first["cwd"]).exists()


def test_env_templates_are_filled_per_step_and_a_minus_name_unsets(recall_suite, monkeypatch):
    monkeypatch.setenv("CLI_LIKE_GONE", "leaks")
    remember_case(recall_suite, "c1")

    result = recall_suite.run(
        *CASE_ENV,
        "--recall-env=CLI_LIKE_STEP=step {step} of {case} in {workdir}",
        "--recall-env=-CLI_LIKE_GONE",
        command=recall_suite.agent("cli_like"),
    )

    result.assert_outcomes(passed=1)
    for step in (1, 2):
        seen = recall_suite.probe("c1", step)
        assert seen["env"]["CLI_LIKE_CASE"] == "c1"
        assert seen["env"]["CLI_LIKE_STEP"] == f"step {step} of c1 in {seen['cwd']}"
        assert seen["env"]["CLI_LIKE_GONE"] is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("NOEQUALS", "ERROR: --recall-env: 'NOEQUALS' must be NAME=VALUE, or -NAME to unset NAME"),
        ("X={nope}", "ERROR: --recall-env: 'X={nope}': unknown placeholder {nope}; use {scope}, {home}*"),
    ],
)
def test_a_bad_env_setting_is_one_usage_line(recall_suite, value, message):
    remember_case(recall_suite, "c1")

    result = recall_suite.run(f"--recall-env={value}", command=recall_suite.agent("cli_like"))

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_tmpdir_is_private_per_step_and_home_never_lies_under_it(recall_suite):
    remember_case(recall_suite, "c1")

    recall_suite.run(*CASE_ENV, command=recall_suite.agent("cli_like")).assert_outcomes(passed=1)

    first, second = recall_suite.probe("c1", 1), recall_suite.probe("c1", 2)
    for seen in (first, second):
        env = seen["env"]
        assert env["TMPDIR"] == env["TMP"] == env["TEMP"]
        assert not Path(env["HOME"]).is_relative_to(env["TMPDIR"])
        assert not Path(env["RECALL_SCOPE_DIR"]).is_relative_to(env["TMPDIR"])
    assert first["tmp_listing"] == second["tmp_listing"] == [], "a file in step 1's TMPDIR reached step 2"


def test_an_agent_failure_stops_its_case_and_is_reported_as_no_memory_result(recall_suite):
    for case_id in ("c1", "c2", "c3"):
        recall_suite.add(case_id, ["FAIL 1 Error: 'Unknown model: fake'", "RECALL the value"])
    remember_case(recall_suite, "ok")

    result = recall_suite.run(*CASE_ENV, command=recall_suite.agent("cli_like"))

    result.assert_outcomes(failed=3, passed=1)
    records = recall_suite.records()
    for case_id in ("c1", "c2", "c3"):
        assert records[case_id]["outcome"] == "agent_failed"
        assert records[case_id]["score"] == 0.0
        assert [step["step"] for step in records[case_id]["steps"]] == [1], "step 2 ran after step 1 failed"
        assert not (recall_suite.probe_dir / f"{case_id}-step2.json").exists()
    assert records["ok"]["outcome"] == "correct"
    assert recall_suite.report()["by_outcome"] == {
        "correct": 1,
        "partial": 0,
        "wrong": 0,
        "unknown": 0,
        "agent_failed": 3,
        "timed_out": 0,
        "rate_limited": 0,
        "error": 0,
    }
    result.stdout.fnmatch_lines(
        [
            "  agent failures (not memory results, though each scores 0: fix the agent or its setup, then run again):",
            "  3 cases: agent failed in step 1 (exit 1): Error: 'Unknown model: fake'",
        ]
    )


def test_unknown_is_its_own_outcome(recall_suite):
    recall_suite.add("c1", ["nothing to remember here", "RECALL the value"])

    recall_suite.run(*CASE_ENV, command=recall_suite.agent("cli_like")).assert_outcomes(failed=1)

    assert recall_suite.records()["c1"]["outcome"] == "unknown"


def test_records_list_what_the_agent_kept_and_the_report_counts_tokens(recall_suite):
    remember_case(recall_suite, "c1")
    remember_case(recall_suite, "c2")

    recall_suite.run(*CASE_ENV, "--recall-control", command=recall_suite.agent("cli_like")).assert_outcomes(passed=4)

    report = recall_suite.report()
    record = recall_suite.records()["c1"]
    first, last = record["steps"]
    digest = hashlib.sha256(b"12345.67").hexdigest()
    assert first["memory"] == [{"path": "home/.cli_like/memory.txt", "size": 8, "sha256": digest}]
    assert (first["memory_files"], first["memory_bytes"]) == (1, 8)
    assert last["memory"] is None, "nobody reads the memory after the last step"
    assert record["memory_bytes"] == 8 and report["memory_bytes_median"] == 8
    assert first["tokens_in"] == len("REMEMBER 12345.67\n") and first["tokens_out"] == 7
    assert record["tokens_out"] == 14
    assert report["tokens_out_total"] == 28, "the cases' tokens, not the control's"
    assert report["control"]["tokens_out_total"] == 14
    assert report["control"]["home_shared"] is False
    assert record["run_mode"]["home"] == "case" and record["run_mode"]["prompt"] == "argv"
