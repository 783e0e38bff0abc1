"""Issue 65, the fourth red-team pass: what an agent writes never feeds the run's numbers unchecked.

Each run-level test drives a real inner pytest with a hostile agent from
``tests/hostile/`` in the default mode and, where the hole reached it, under
bwrap: the tap's log, the run-wide pause and stop files, and claimed rate
limits.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_servers import LEAKY_SERVER
from test_agent_plants import STEPS, agent_tmp
from test_hostile import HOSTILE_DIR, MODES, mode_args

from pytest_recall.sessions.memory_tap import parse_tap_log
from pytest_recall.sessions.rate_limits import PAUSE_FILE, RUN_PAUSE_BUDGET_S, HostPause
from pytest_recall.sessions.signed_state import RecallStateWarning, SignedState

pytestmark = pytest.mark.usefixtures(agent_tmp.__name__)


def state_planter(*args: str) -> str:
    return shlex.join([sys.executable, str(HOSTILE_DIR / "state_planter.py"), *args])


def add_cases(recall_suite: Any, count: int) -> None:
    for number in range(count):
        recall_suite.add(f"case_{number}", STEPS)


# -- hole 1: the tap's log ------------------------------------------------------------------------

TAP_LINES = {
    "huge-argument-bytes": {"argument_bytes": int("1" + "0" * 400)},
    "nan-text-bytes": {"text_bytes": float("nan")},
    "text-a-list": {"text": [1]},
}


def _call_line(**figures: Any) -> str:
    return json.dumps({"event": "call", "server": "memory", "tool": "search_nodes", **figures})


@pytest.mark.parametrize(
    "line", [*[_call_line(**value) for value in TAP_LINES.values()], "[" * 5000], ids=[*TAP_LINES, "deep"]
)
def test_a_tap_line_that_is_not_the_relays_is_passed_over_and_named(line: str) -> None:
    calls = parse_tap_log((_call_line(argument_bytes=10, text_bytes=5) + "\n" + line + "\n").encode())
    assert len(calls.calls) == 1 and calls.calls[0].text_bytes == 5
    assert calls.fault == "1 line(s) of the MCP tap's log are not the tap's events and were passed over"


def test_list_shaped_annotations_are_no_annotations() -> None:
    tools = {"event": "tools", "server": "memory", "tools": [{"name": "search_nodes", "annotations": [1]}]}
    calls = parse_tap_log(f"{json.dumps(tools)}\n{_call_line()}\n".encode())
    assert [call.kind for call in calls.calls] == ["read"] and calls.fault is None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("planted", list(TAP_LINES), ids=list(TAP_LINES))
def test_a_line_planted_in_the_taps_log_leaves_the_case_a_scored_failure(
    recall_suite: Any, mode: str, planted: str
) -> None:
    config = recall_suite.pytester.path / "mcp.json"
    entry = {"command": sys.executable, "args": [str(LEAKY_SERVER), "{scope}/store.txt"]}
    config.write_text(json.dumps({"mcpServers": {"memory": entry}}), encoding="utf-8")
    add_cases(recall_suite, 2)
    line = _call_line(**TAP_LINES[planted])
    result = recall_suite.run(f"--recall-mcp={config}", *mode_args(mode), command=state_planter("tap-line", line))
    result.assert_outcomes(failed=2)
    report = recall_suite.report()
    assert (report["score"], report["n_errors"]) == (0.0, 0)
    for record in report["cases"]:
        assert record["error"] is None and "passed over" in record["memory_use"]["fault"], record


# -- holes 3 and 4: the run-wide pause and stop files ----------------------------------------------

PLANTED_PAUSES = {
    "a-century": '{"until": 4e9}',
    "a-word": '{"until": "x"}',
    "a-list": "[1]",
    "overflow": '{"until": 1e12}',
}


@pytest.mark.parametrize("planted", list(PLANTED_PAUSES.values()), ids=list(PLANTED_PAUSES))
def test_a_planted_pause_file_is_ignored_with_a_warning(recall_suite: Any, planted: str) -> None:
    add_cases(recall_suite, 3)
    result = recall_suite.run(command=state_planter("pause", planted), timeout=90)
    result.assert_outcomes(failed=3)
    report = recall_suite.report()
    assert (report["score"], report["n_errors"]) == (0.0, 0)
    result.stdout.fnmatch_lines(["*RecallStateWarning: the run's rate-limit pause file * ignored*"])


@pytest.mark.slow
def test_a_planted_stop_decision_is_ignored_under_xdist(recall_suite: Any) -> None:
    add_cases(recall_suite, 8)
    result = recall_suite.run(
        "--recall-stop=decided", "--recall-gate=score", "-n", "2", command=state_planter("stop"), timeout=120
    )
    outcomes = result.parseoutcomes()
    stop = recall_suite.report()["stop"]
    # Cases not run are only those the gate itself decided not to run.
    assert outcomes.get("skipped", 0) == stop["n_not_run"], (outcomes, stop)
    assert stop["n_not_run"] == 0 or stop["decision"] is not None
    result.stdout.fnmatch_lines(["*RecallStateWarning: the run's stop decision*"])


def test_the_pause_file_is_read_only_when_signed_and_in_bounds(tmp_path: Path) -> None:
    secret = "cd" * 32
    pause = HostPause(tmp_path, secret)
    signed = SignedState(tmp_path / PAUSE_FILE, secret, "the pause")
    signed.write({"until": 1e12, "paused_s": 0.0, "refusals": 1, "budget_spent": False})
    with pytest.warns(RecallStateWarning, match="out of bounds"):
        assert pause.until() == 0.0
    (tmp_path / PAUSE_FILE).write_text('{"until": 4e9}', encoding="utf-8")
    with pytest.warns(RecallStateWarning, match="not signed by this run"):
        assert HostPause(tmp_path, secret).until() == 0.0


# -- hole 5: claimed rate limits ------------------------------------------------------------------


def test_the_runs_pauses_stop_at_its_budget(tmp_path: Path) -> None:
    secret = "ef" * 32
    signed = SignedState(tmp_path / PAUSE_FILE, secret, "the pause")
    signed.write({"until": 0.0, "paused_s": RUN_PAUSE_BUDGET_S - 1, "refusals": 40, "budget_spent": False})
    pause = HostPause(tmp_path, secret)
    until = pause.extend(120, 1)
    assert until is not None and until - time.time() <= 1.0
    assert pause.extend(120, 2) is None
    assert pause.state()["budget_spent"] is True and pause.state()["paused_s"] == RUN_PAUSE_BUDGET_S


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_a_case_claiming_a_rate_limit_at_every_attempt_ends_within_its_budget(recall_suite: Any, mode: str) -> None:
    recall_suite.add("case_a", ["remember 12345.67", "recall, or claim a rate limit"])
    claimer = shlex.join([sys.executable, str(HOSTILE_DIR / "rate_claimer.py")])
    started = time.monotonic()
    result = recall_suite.run(
        "--recall-timeout=5", "--recall-rate-limit-attempts=3", *mode_args(mode), command=claimer, timeout=90
    )
    took = time.monotonic() - started
    result.assert_outcomes(failed=1)
    record = recall_suite.records()["case_a"]
    assert (record["outcome"], record["error"]) == ("rate_limited", None)
    limits = recall_suite.report()["rate_limits"]
    # Twice its timeout of 5 s in all, and the sessions' own time: far below one claim's 120 s cap.
    assert limits["paused_s"] <= 10.5 and took < 60, (limits, took)
    assert limits["pause_budget_s"] == RUN_PAUSE_BUDGET_S and limits["budget_spent"] is False
    result.stdout.fnmatch_lines([f"*paused * in all (bound {RUN_PAUSE_BUDGET_S:.0f}s)*"])


# -- hole 2: the retrieval judges pass a shotgun ---------------------------------------------------


@pytest.mark.parametrize("judge", ["contains", "evidence"])
@pytest.mark.parametrize(
    ("count", "why"), [(9000, "bytes returned, more than the 64 KiB"), (60, "60 different amounts returned")]
)
def test_a_shotgun_is_no_retrieval(judge: str, count: int, why: str) -> None:
    from pytest_recall.scoring.retrieval_judge import score_contains, score_evidence

    score = score_contains if judge == "contains" else score_evidence
    printed = "\n".join(f"V-{number:04d} balance {number}.67" for number in range(count))
    verdict = score(printed, {"answer": "12.67", "answer_kind": "money"})
    assert verdict["score"] == 0.0 and why in verdict["reason"], verdict
    assert score("V-0012 balance 12.67", {"answer": "12.67", "answer_kind": "money"})["score"] == 1.0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("judge", ["contains", "evidence"])
def test_an_agent_printing_the_answer_space_fails_the_retrieval_judges(
    recall_suite: Any, mode: str, judge: str
) -> None:
    recall_suite.add("case_0", ["Remember: voucher V-0012 has the balance 12.67.", "What was the balance?"], "12.67")
    result = recall_suite.run(
        f"--recall-answer-judge={judge}", *mode_args(mode), command=state_planter("shotgun", "9000")
    )
    result.assert_outcomes(failed=1)
    record = recall_suite.records()["case_0"]
    assert record["score"] == 0.0 and "no retrieval" in record["reason"], record
