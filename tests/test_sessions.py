"""Agent sessions end to end: real processes on a pty, driven by the plugin through pytester.

Each case's steps are scripts for ``tests/agents/scripted.py`` (see its
docstring), so what the agent does is written in the test itself.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

FAST = ("--recall-timeout=5", "--recall-grace=0.5")
REMEMBER = "remember 12345.67\nsay noted"


def process_is_gone(pid: int) -> bool:
    """Dead, or a zombie nobody has reaped yet: either way it runs no more."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            cmdline = handle.read()
    except FileNotFoundError:
        return True
    # A recycled pid would not carry the child's marker argument.
    return state in ("Z", "X") or b"recall-test-hang-child" not in cmdline


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_timeout_kills_the_whole_process_group_then_the_run_goes_on(recall_suite):
    recall_suite.add("case_01_wedged", [REMEMBER, "hang"])
    recall_suite.add("case_02_fine", [REMEMBER, "recall"])

    # Generous enough for the agent to set itself up under load before the TERM arrives.
    result = recall_suite.run("--recall-timeout=2", "--recall-grace=0.5")

    result.assert_outcomes(passed=1, failed=1)
    records = recall_suite.records()
    wedged = records["case_01_wedged"]
    assert wedged["score"] == 0.0
    assert wedged["reason"] == "timeout in step 2"
    last = wedged["steps"][-1]
    assert last["timed_out"] is True
    # It ignored SIGTERM, so only the KILL after the grace period ended it.
    assert (recall_suite.probe_dir / "hang-got-sigterm").exists()
    assert last["signal"] == signal.SIGKILL
    assert (recall_suite.probe_dir / "hang-child-ready").exists()
    child_pid = int((recall_suite.probe_dir / "hang-child-pid").read_text())
    assert process_is_gone(child_pid)
    assert records["case_02_fine"]["score"] == 1.0
    result.stdout.fnmatch_lines(["*case_01_wedged scored 0.0: timeout in step 2*"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_processes_left_running_are_killed_and_counted_before_the_next_step(recall_suite):
    recall_suite.add("case_01", [REMEMBER + "\nleave-child child\nleave-daemon daemon", "recall"])

    result = recall_suite.run(*FAST)

    result.assert_outcomes(passed=1)
    steps = recall_suite.records()["case_01"]["steps"]
    # The child stayed in the process group; the daemon left it with setsid: both are found and killed.
    assert [step["killed_leftovers"] for step in steps] == [2, 0]
    for name in ("child", "daemon"):
        assert process_is_gone(int((recall_suite.probe_dir / f"{name}-pid").read_text()))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_daemon_that_left_the_group_is_killed_after_a_timeout_too(recall_suite):
    recall_suite.add("case_01", [REMEMBER, "leave-daemon daemon\nsleep 30"])

    recall_suite.run("--recall-timeout=1", "--recall-grace=0.2")

    record = recall_suite.records()["case_01"]
    assert record["reason"] == "timeout in step 2"
    assert record["steps"][-1]["killed_leftovers"] == 1
    assert process_is_gone(int((recall_suite.probe_dir / "daemon-pid").read_text()))


def test_a_timeout_in_step_one_ends_the_case_before_step_two(recall_suite):
    recall_suite.add("case_01", ["sleep 30", "recall"])

    result = recall_suite.run("--recall-timeout=0.5", "--recall-grace=0.2")

    result.assert_outcomes(failed=1)
    record = recall_suite.records()["case_01"]
    assert record["reason"] == "timeout in step 1"
    assert [step["step"] for step in record["steps"]] == [1]


@pytest.mark.parametrize(
    ("flag", "case_timeout", "last_step", "expected_reason"),
    [
        pytest.param(None, "1", "sleep 30\nsay 12345.67", "timeout in step 2", id="case-toml-alone"),
        pytest.param(
            "--recall-timeout=30", "1", "sleep 1.5\nsay 12345.67", "final line is the expected value", id="flag-longer"
        ),
        pytest.param("--recall-timeout=1", "30", "sleep 30\nsay 12345.67", "timeout in step 2", id="flag-shorter"),
    ],
)
def test_the_timeout_flag_wins_over_a_case_toml_timeout_which_wins_over_the_default(
    recall_suite, flag, case_timeout, last_step, expected_reason
):
    recall_suite.add("case_01", ["say hello", last_step], toml=f"timeout = {case_timeout}\n")

    recall_suite.run(*([flag] if flag else []), "--recall-grace=0.2")

    assert recall_suite.records()["case_01"]["reason"] == expected_reason


def test_stderr_is_kept_apart_never_judged_but_shown_in_the_transcript(recall_suite):
    recall_suite.add("case_01_answer_on_stderr", [REMEMBER, "err 12345.67\nsay I cannot recall it"])
    recall_suite.add("case_02_decoy_on_stderr", [REMEMBER, "err draft 99999.99 discarded\nsay 12345.67"])

    result = recall_suite.run(*FAST)

    result.assert_outcomes(passed=1, failed=1)
    records = recall_suite.records()
    on_stderr = records["case_01_answer_on_stderr"]
    assert on_stderr["score"] == 0.0
    assert "12345.67" not in on_stderr["steps"][-1]["stdout"]
    assert "12345.67" in on_stderr["steps"][-1]["stderr"]
    decoy = records["case_02_decoy_on_stderr"]
    assert decoy["score"] == 1.0
    assert decoy["steps"][-1]["stderr"] == "draft 99999.99 discarded\n"
    result.stdout.fnmatch_lines(["*stderr (last 1 lines):", "*| 12345.67"])


TERMINAL_NOISE = (
    rb"b'\x1b]0;agent at work\x07\x1b[?25l| thinking\r/ thinking\r- thinking\r\x1b[2K"
    rb"Answer:\n\x1b[1;32m12,345.67\x1b[0m\x1b[?25h\n'"
)


def test_terminal_noise_is_cleaned_before_the_answer_is_judged(recall_suite):
    recall_suite.add("case_01", [REMEMBER, "write " + TERMINAL_NOISE.decode()])

    result = recall_suite.run(*FAST)

    result.assert_outcomes(passed=1)
    record = recall_suite.records()["case_01"]
    assert record["steps"][-1]["stdout"] == "Answer:\n12,345.67\n"
    assert record["reported"] == "12,345.67"


def test_a_non_zero_exit_scores_zero_even_with_the_right_answer(recall_suite):
    recall_suite.add("case_01_last_step", [REMEMBER, "say 12345.67\nexit 3"])
    recall_suite.add("case_02_first_step", [REMEMBER + "\nexit 2", "say 12345.67"])

    result = recall_suite.run(*FAST)

    result.assert_outcomes(failed=2)
    records = recall_suite.records()
    assert records["case_01_last_step"]["score"] == 0.0
    assert records["case_01_last_step"]["reason"] == "agent exited 3"
    assert records["case_01_last_step"]["steps"][-1]["exit_code"] == 3
    assert records["case_02_first_step"]["reason"] == "agent exited 2 in step 1"


def test_empty_stdout_scores_zero(recall_suite):
    recall_suite.add("case_01", [REMEMBER, "err I wrote only to stderr"])

    recall_suite.run(*FAST)

    record = recall_suite.records()["case_01"]
    assert (record["score"], record["reason"]) == (0.0, "empty stdout")


def test_stdin_is_at_end_of_file_so_a_reader_does_not_hang(recall_suite):
    recall_suite.add("case_01", [REMEMBER, "read-stdin\nsay 12345.67"])

    result = recall_suite.run(*FAST)

    result.assert_outcomes(passed=1)
    assert recall_suite.records()["case_01"]["steps"][-1]["stdout"].startswith("read 0 characters from stdin")


def test_the_agent_sees_a_tty_on_stdout_only(recall_suite):
    recall_suite.add("case_01", ["probe tty", "say 12345.67"])

    recall_suite.run(*FAST)

    seen = recall_suite.probe("tty", 1)
    assert (seen["stdout_isatty"], seen["stderr_isatty"], seen["stdin_isatty"]) == (True, False, False)


def test_argv_is_the_split_command_plus_the_prompt_as_one_final_argument(recall_suite):
    prompt = 'probe argv\nsay it\'s "quoted" $HOME; `uname` && echo *\n  trailing  spaces  \n'
    recall_suite.add("case_01", [prompt, "say 12345.67"])
    agent = recall_suite.agent("scripted", "--flag", "two words", "it's")

    recall_suite.run(*FAST, command=agent)

    argv = recall_suite.probe("argv", 1)["argv"]
    assert argv[1:] == ["--flag", "two words", "it's", prompt]


def test_agent_environment_drops_pytest_and_manifest_variables_but_keeps_the_users(recall_suite, monkeypatch):
    monkeypatch.setenv("TRAPTASK_MANIFEST", "/secret/manifest.json")
    monkeypatch.setenv("TRAP_MANIFEST", "/secret/manifest.json")
    monkeypatch.setenv("PYTEST_RECALL_CANARY", "leak")
    monkeypatch.setenv("RECALL_TEST_USER_VAR", "kept")
    recall_suite.add("case_01", ["probe env", "say 12345.67"])

    recall_suite.run(*FAST)

    env = recall_suite.probe("env", 1)["env"]
    assert [name for name in env if name.startswith("PYTEST_")] == []
    assert "TRAPTASK_MANIFEST" not in env
    assert "TRAP_MANIFEST" not in env
    assert env["RECALL_TEST_USER_VAR"] == "kept"
    assert env["RECALL_STEP"] == "1"


def test_scope_dir_is_shared_by_a_cases_steps_only_and_removed_after_it(recall_suite):
    for case_id in ("case_01", "case_02"):
        recall_suite.add(case_id, [f"probe {case_id}", f"probe {case_id}", f"probe {case_id}\nsay 12345.67"])

    result = recall_suite.run(*FAST)

    result.assert_outcomes(passed=2)
    scopes = {}
    for case_id in ("case_01", "case_02"):
        seen = [recall_suite.probe(case_id, step) for step in (1, 2, 3)]
        assert len({probe["scope"] for probe in seen}) == 1
        assert seen[0]["scope_listing"] == []
        for probe in seen:
            scope, cwd = Path(probe["scope"]), Path(probe["cwd"])
            assert not scope.is_relative_to(cwd)
            assert not cwd.is_relative_to(scope)
        scopes[case_id] = Path(seen[0]["scope"])
        assert not scopes[case_id].exists()
    assert scopes["case_01"] != scopes["case_02"]


def test_memory_kept_in_the_scope_dir_is_recalled_in_a_later_step(recall_suite):
    recall_suite.add("case_01", [REMEMBER, "recall"])

    result = recall_suite.run(*FAST)

    result.assert_outcomes(passed=1)


def test_costs_reported_by_the_agent_are_summed_per_case_and_per_run(recall_suite):
    recall_suite.add("case_01_paid", ["cost 0.25\n" + REMEMBER, "cost 0.5\nrecall"])
    recall_suite.add("case_02_free", [REMEMBER, "recall"])

    recall_suite.run(*FAST)

    report = recall_suite.report()
    records = recall_suite.records()
    assert records["case_01_paid"]["cost_usd"] == 0.75
    assert [step["cost_usd"] for step in records["case_01_paid"]["steps"]] == [0.25, 0.5]
    assert records["case_02_free"]["cost_usd"] is None
    assert report["cost_usd_total"] == 0.75


def test_cost_total_is_null_when_no_agent_reports_a_cost(recall_suite):
    recall_suite.add("case_01", [REMEMBER, "recall"])

    recall_suite.run(*FAST)

    assert recall_suite.report()["cost_usd_total"] is None
    assert recall_suite.records()["case_01"]["cost_usd"] is None


def test_no_harness_directory_is_left_behind(recall_suite, monkeypatch, tmp_path):
    """Step dirs, scopes and the harness's own rooms all live under TMPDIR and are all removed."""
    private_tmp = tmp_path / "agent-tmp"
    private_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    recall_suite.add("case_01", [REMEMBER, "recall"])
    recall_suite.add("case_02", [REMEMBER, "hang"])

    recall_suite.run("--recall-timeout=1", "--recall-grace=0.2")

    assert [name for name in os.listdir(private_tmp) if name.startswith("recall-")] == []
