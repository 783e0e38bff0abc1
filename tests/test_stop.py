"""--recall-stop=decided: a run stops starting cases once the score gate is decided, and says so everywhere."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

PASSING = ("say noted", "say 12345.67")
STOP = ("--recall-stop=decided", "--recall-gate=score")


def _suite(recall_suite: Any, count: int, steps: tuple[str, ...] = PASSING) -> None:
    for number in range(count):
        recall_suite.add(f"case_{number:02d}", steps)


def _check_decided(recall_suite: Any, result: pytest.RunResult) -> dict[str, Any]:
    outcomes = result.parseoutcomes()
    ran, not_run = outcomes.get("passed", 0), outcomes.get("skipped", 0)
    assert ran + not_run == 60 and not outcomes.get("failed") and not outcomes.get("errors")
    report = recall_suite.report()
    stop = report["stop"]
    # All pass against 0.5: certain after 30 passes, and the test decides well before that.
    assert stop["decision"] == "above" and stop["decided_after"] < 30
    assert stop["n_not_run"] == not_run >= 60 - 30
    # In-flight cases finish and count; the not-run ones are in neither the score nor n_scored.
    assert report["n_total"] == report["n_scored"] == ran == len(report["cases"])
    # The interval is two-sided at 90%, each side at the decision's 5%: it excludes 0.5 up to its grid step.
    assert report["passed"] is True and stop["interval"][0] > 0.5 - 1 / 400
    result.stdout.fnmatch_lines([f"*decided after {stop['decided_after']} of 60 cases: score at or above*"])
    assert result.ret == 0
    return report


@pytest.mark.slow
def test_an_all_passing_suite_is_decided_early_and_the_rest_not_run(recall_suite: Any) -> None:
    _suite(recall_suite, 60)
    junit = recall_suite.pytester.path / "junit.xml"
    html = recall_suite.pytester.path / "report.html"
    result = recall_suite.run(*STOP, "--recall-threshold=0.5", f"--junitxml={junit}", f"--recall-html={html}")
    report = _check_decided(recall_suite, result)
    assert "decided after" in html.read_text(encoding="utf-8")
    properties = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
    assert properties["recall_stop"].startswith(f"decided after {report['stop']['decided_after']} of 60 cases")


@pytest.mark.slow
def test_decided_early_under_xdist_with_concurrency(recall_suite: Any) -> None:
    _suite(recall_suite, 60)
    result = recall_suite.run(*STOP, "--recall-threshold=0.5", "-n", "2", "--recall-concurrency=2")
    _check_decided(recall_suite, result)


@pytest.mark.slow
def test_a_run_that_cannot_be_decided_early_runs_to_the_end(recall_suite: Any) -> None:
    # Threshold 1.0: only the last case can settle that every case passed.
    _suite(recall_suite, 8)
    result = recall_suite.run(*STOP, "--recall-threshold=1.0")
    result.assert_outcomes(passed=8)
    stop = recall_suite.report()["stop"]
    assert stop["decided_after"] is None and stop["n_not_run"] == 0 and stop["n_fed"] == 8
    result.stdout.fnmatch_lines(["*not decided early: all 8 cases ran*"])


@pytest.mark.slow
def test_a_failing_suite_is_decided_below_and_exits_1(recall_suite: Any) -> None:
    _suite(recall_suite, 40, ("say noted", "say nothing to see"))
    result = recall_suite.run(*STOP, "--recall-threshold=0.5")
    stop = recall_suite.report()["stop"]
    assert stop["decision"] == "below" and stop["decided_after"] < 20
    assert result.ret == 1 and result.parseoutcomes()["skipped"] == stop["n_not_run"] > 0


@pytest.mark.slow
def test_resume_continues_a_decided_run_to_the_end(recall_suite: Any) -> None:
    _suite(recall_suite, 60)
    log = recall_suite.pytester.path / "run.jsonl"
    first = recall_suite.run(*STOP, "--recall-threshold=0.5", f"--recall-log={log}")
    ran = first.parseoutcomes()["passed"]
    assert ran < 60
    rest = recall_suite.run(f"--recall-resume={log}", f"--recall-log={log}", "--recall-threshold=0.5")
    rest.assert_outcomes(passed=60)
    assert "stop" not in recall_suite.report()


MEMORY = ("remember 12345.67", "recall")  # the control's lone last step finds nothing: UNKNOWN


@pytest.mark.slow
def test_memory_against_its_control_decides_the_lift_before_the_end(recall_suite: Any) -> None:
    _suite(recall_suite, 40, MEMORY)
    result = recall_suite.run(*STOP, "--recall-threshold=0.5", "--recall-control", "-n", "2")
    stop = recall_suite.report()["stop"]
    lift = stop["lift"]
    assert stop["decision"] == "above" and lift["decision"] == "positive" and lift["n_pairs"] == 40
    # Every pair fed went up; no new case started once both were decided, so some never ran.
    assert lift["decided_after"] < 20 and lift["estimate"] == 1.0 and stop["n_not_run"] > 0
    assert result.parseoutcomes()["skipped"] == stop["n_not_run"]
    result.stdout.fnmatch_lines(
        [f"*; lift decided after {lift['decided_after']} of 40 pairs: memory better than its control at 95%*"]
    )


@pytest.mark.slow
def test_an_amnesiac_against_its_own_control_never_decides_a_sign_and_runs_to_the_end(recall_suite: Any) -> None:
    # The answer is in the last step itself: memory and control both pass, so every pair is 0.
    _suite(recall_suite, 40)
    result = recall_suite.run(*STOP, "--recall-threshold=0.5", "--recall-control")
    stop = recall_suite.report()["stop"]
    # The gate was decided early, but the lift never is: no case is left out.
    assert stop["decision"] == "above" and stop["decided_after"] < 40 and stop["n_not_run"] == 0
    assert stop["lift"] == {**stop["lift"], "decision": None, "decided_after": None, "n_fed": 40, "estimate": 0.0}
    result.assert_outcomes(passed=80)
    result.stdout.fnmatch_lines(["*; lift undecided after 40 of 40 pairs*"])


def test_the_cases_gate_is_refused_in_one_line(recall_suite: Any) -> None:
    _suite(recall_suite, 1)
    result = recall_suite.run("--recall-stop=decided")
    result.stderr.fnmatch_lines(["*--recall-stop=decided needs --recall-gate=score*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


class _Report:
    """What StopGate reads of a test report: a case's teardown."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid, self.when, self.skipped, self.longrepr = nodeid, "teardown", False, None


def test_results_are_fed_in_drawn_order_whatever_order_they_finish_in(pytestconfig: pytest.Config) -> None:
    from pytest_recall.plugin.stop import StopGate

    ids = [f"cases/s/c{number}::recall" for number in range(20)]
    # The first drawn case fails and finishes last (a timeout): the nineteen quick passes wait for it.
    # What the gate reads of the recorder's summaries: each case's score, by attribute.
    records = {nodeid: SimpleNamespace(score=0.0 if number == 0 else 1.0) for number, nodeid in enumerate(ids)}
    gate = StopGate(pytestconfig, 0.5, records, under_xdist=False)
    gate._plan(ids)
    for nodeid in ids[1:]:
        gate.pytest_runtest_logreport(_Report(nodeid))  # type: ignore[arg-type]
    assert gate.block() is not None and gate.block()["n_fed"] == 0 and gate.decided_after is None  # type: ignore[index]
    gate.pytest_runtest_logreport(_Report(ids[0]))  # type: ignore[arg-type]
    block = gate.block()
    assert block is not None and block["n_fed"] == 20 and gate.signal.reason() is not None
    assert gate.decided_after is not None and gate.decided_after < 20


def test_no_case_stops_the_run_until_the_lift_is_decided_too_and_a_pair_counts_once_both_ran(
    pytestconfig: pytest.Config,
) -> None:
    from pytest_recall.plugin.stop import StopGate

    runs = [f"cases/s/c{number}::recall" for number in range(20)]
    controls = [nodeid.replace("::recall", "::control") for nodeid in runs]
    records = {nodeid: SimpleNamespace(score=1.0) for nodeid in runs}
    records.update({nodeid: SimpleNamespace(score=0.0) for nodeid in controls})
    gate = StopGate(pytestconfig, 0.5, records, under_xdist=False)
    gate._plan([*runs, *controls])
    for nodeid in runs:
        gate.pytest_runtest_logreport(_Report(nodeid))  # type: ignore[arg-type]
    # The gate is decided, but no control has finished: no pair counts yet, and cases still start.
    assert gate.decided_after is not None and gate.signal.reason() is None
    assert gate.lift.block() == {**(gate.lift.block() or {}), "n_fed": 0, "n_pairs": 20, "decision": None}
    for nodeid in controls:
        gate.pytest_runtest_logreport(_Report(nodeid))  # type: ignore[arg-type]
    block = gate.block()
    assert block is not None and block["lift"]["decision"] == "positive" and gate.signal.reason() is not None
    assert block["lift"]["decided_after"] < 20 and block["lift"]["estimate"] == 1.0


@pytest.mark.slow
def test_compare_of_two_real_runs_says_which_is_better_and_when_or_undecided(recall_suite: Any) -> None:
    """An agent that forgets against one that remembers, on 40 cases; then a run against itself."""
    _suite(recall_suite, 40, MEMORY)
    forgets = recall_suite.agent("ignores_memory", sys.executable, str(recall_suite.pytester.path / "none.py"))
    (recall_suite.pytester.path / "none.py").write_text("", encoding="utf-8")
    recall_suite.run(command=forgets)
    base = recall_suite.pytester.path / "base.json"
    recall_suite.report_path.rename(base)
    recall_suite.run()
    new = recall_suite.report_path
    better = _compare(base, new)
    assert better.returncode == 0
    decided = [line for line in better.stdout.splitlines() if line.startswith("Sequential:")]
    assert len(decided) == 1 and decided[0].startswith("Sequential: new better than base, decided after ")
    assert int(decided[0].split("decided after ")[1].split()[0]) < 40 and "case-id order" in decided[0]
    same = _compare(new, new)
    assert "Sequential: undecided after 40 pairs (always-valid test, pairs in case-id order)." in same.stdout


def _compare(base: Path, new: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_recall.cli", "compare", str(base), str(new)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_the_stop_gate_names_a_cases_two_items_as_the_items_do() -> None:
    # stop.py cannot import them (items -> executor -> stop), so it spells them out; they must agree.
    from pytest_recall.plugin import items, stop

    assert (stop._MAIN_RUN, stop._CONTROL_RUN) == (items.RUN_NAME, items.CONTROL_NAME)
