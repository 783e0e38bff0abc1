"""``--recall-preflight``: one trivial session before any case stops a run that cannot work, with exit status 4."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.sessions.sandbox import check_bwrap

ANSWER = "12345.67"
# One line per run in $PREFLIGHT_AGENT_LOG, so a test sees how often the agent ran, and on what.
AGENT = """
import json, os, sys, time
prompt = sys.argv[-1]
with open(os.environ["PREFLIGHT_AGENT_LOG"], "a") as log:
    log.write(json.dumps({"prompt": prompt, "scope": os.environ["RECALL_SCOPE_DIR"]}) + "\\n")
mode = os.environ["PREFLIGHT_AGENT_MODE"]
if mode == "broken":
    print("Loading config...")
    print("Error: Unknown model: fake", file=sys.stderr)
    raise SystemExit(1)
if mode == "silent":
    raise SystemExit(0)
if mode == "hang":
    time.sleep(60)
memory = os.path.join(os.environ["RECALL_SCOPE_DIR"], "memory.txt")
if prompt.startswith("Reply with"):
    print("READY")
elif prompt.startswith("remember"):
    open(memory, "w").write(prompt.split()[-1])
    print("noted")
else:
    print(open(memory).read() if os.path.exists(memory) else "UNKNOWN")
"""


@pytest.fixture
def agent(recall_suite: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Two cases and the agent; returns a function that runs them in a mode and gives back the runs it logged."""
    script = recall_suite.pytester.path / "agent.py"
    script.write_text(AGENT)
    log = recall_suite.pytester.path / "agent-runs.jsonl"
    monkeypatch.setenv("PREFLIGHT_AGENT_LOG", str(log))
    for case_id in ("case_a", "case_b"):
        recall_suite.add(case_id, [f"remember {ANSWER}", "what was it?"], ANSWER)

    def run(mode: str, *args: str) -> tuple[pytest.RunResult, list[dict[str, Any]]]:
        monkeypatch.setenv("PREFLIGHT_AGENT_MODE", mode)
        log.unlink(missing_ok=True)
        run_log = recall_suite.pytester.path / "run.jsonl"
        result = recall_suite.run(
            "--recall-preflight", f"--recall-log={run_log}", *args, command=shlex.join([sys.executable, str(script)])
        )
        runs = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        return result, runs

    return run


def assert_no_case_ran(recall_suite: Any, result: pytest.RunResult, runs: list[dict[str, Any]]) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [run["prompt"] for run in runs] == ["Reply with the single word READY."]
    run_log = recall_suite.pytester.path / "run.jsonl"
    assert not run_log.exists() or run_log.read_text() == ""  # opened at configure time, never written
    assert not recall_suite.report_path.exists()
    assert "case_a" not in result.stdout.str() and "PASSED" not in result.stdout.str()
    # The preflight's throwaway scope is gone.
    assert not Path(runs[0]["scope"]).exists()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_broken_agent_stops_the_run_before_any_case_with_its_stderr(
    agent: Any, recall_suite: Any, workers: list[str]
) -> None:
    result, runs = agent("broken", *workers)
    assert_no_case_ran(recall_suite, result, runs)
    result.stderr.fnmatch_lines(
        [
            "ERROR: --recall-preflight: the agent failed on a trivial prompt, so no case was run (none was charged).",
            "  command: * 'Reply with the single word READY.'",
            "  result: exit status 1",
            "  stderr (last lines):",
            "    Error: Unknown model: fake",
            "  stdout (last lines):",
            "    Loading config...",
            "  hint: usual causes: *--recall-home-copy*unreachable*--recall-sandbox-bind*",
        ]
    )


def test_a_silent_agent_stops_the_run(agent: Any, recall_suite: Any) -> None:
    result, runs = agent("silent")
    assert_no_case_ran(recall_suite, result, runs)
    result.stderr.fnmatch_lines(["  result: exit status 0, but it printed nothing on stdout", "  stderr: (empty)"])


def test_a_hanging_agent_stops_the_run_at_the_timeout(agent: Any, recall_suite: Any) -> None:
    result, runs = agent("hang", "--recall-timeout=1", "--recall-grace=0.5")
    assert_no_case_ran(recall_suite, result, runs)
    result.stderr.fnmatch_lines(["  result: timed out: no exit within --recall-timeout"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_an_agent_that_answers_passes_the_preflight_once_and_the_cases_run(
    agent: Any, recall_suite: Any, workers: list[str]
) -> None:
    result, runs = agent("good", *workers)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["recall: preflight: the agent answered in * s"])
    prompts = [run["prompt"] for run in runs]
    assert prompts.count("Reply with the single word READY.") == 1
    assert prompts[0] == "Reply with the single word READY." and len(prompts) == 5
    assert len(recall_suite.report()["cases"]) == 2


def test_without_the_flag_no_preflight_runs(recall_suite: Any, agent: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFLIGHT_AGENT_MODE", "good")
    recall_suite.pytester.makeini("[pytest]\nrecall_preflight = false\n")
    script = recall_suite.pytester.path / "agent.py"
    result = recall_suite.run(command=shlex.join([sys.executable, str(script)]))
    result.assert_outcomes(passed=2)
    log = Path(str(recall_suite.pytester.path / "agent-runs.jsonl"))
    assert "READY" not in log.read_text() and "recall: preflight" not in result.stdout.str()


@pytest.mark.skipif(check_bwrap() is not None, reason=f"bwrap unusable here: {check_bwrap()}")
def test_in_the_sandbox_it_catches_a_wrapper_the_static_check_cannot_see(agent: Any, recall_suite: Any) -> None:
    script = recall_suite.pytester.path / "agent.py"
    script.write_text(f"#!{sys.executable}\n{AGENT}")
    script.chmod(0o755)
    # sh is visible in the sandbox, so the configure-time check passes; the script it runs is not bound.
    command = shlex.join(["sh", "-c", f'{script} "$0"'])
    result = recall_suite.run("--recall-preflight", "--recall-sandbox=bwrap", command=command)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["  command (inside the bwrap sandbox): sh -c *", "  result: exit status 127", "*not found*"]
    )
