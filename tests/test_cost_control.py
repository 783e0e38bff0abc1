"""Cost under control: a spending limit, every attempt's cost counted, and the sessions a run will start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_recall.cli import main
from pytest_recall.reporting.cost_plan import PlannedRun, SessionRates, plan_lines, planned_sessions
from pytest_recall.reporting.shard import shard_members

ANSWER = "12345.67"
PAID = ("cost 0.5\nremember 12345.67\nsay noted", "cost 0.5\nrecall")
DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.slow
def test_max_cost_stops_starting_cases_says_so_and_resume_runs_the_rest(recall_suite: Any) -> None:
    for number in range(1, 5):
        recall_suite.add(f"case_{number}", PAID, ANSWER)
    log = recall_suite.pytester.path / "run.jsonl"
    result = recall_suite.run("--recall-max-cost=1.5", f"--recall-log={log}")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines([f"*--recall-max-cost=$1.5 reached: 2 case runs not started*--recall-resume={log}*"])
    report = recall_suite.report()
    assert report["max_cost"] == {"max_cost_usd": 1.5, "n_not_started": 2}
    assert sum(record["cost_usd"] for record in report["cases"]) == 2.0
    resumed = recall_suite.run(f"--recall-resume={log}", f"--recall-log={log}")
    resumed.assert_outcomes(passed=4)
    assert "max_cost" not in recall_suite.report()


def test_the_ini_twin_sets_the_limit(recall_suite: Any) -> None:
    recall_suite.add("case_1", PAID, ANSWER)
    recall_suite.add("case_2", PAID, ANSWER)
    recall_suite.pytester.makeini("[pytest]\nrecall_max_cost = 0.5\n")
    recall_suite.run().assert_outcomes(passed=1, skipped=1)


def test_a_bad_limit_is_one_usage_line(recall_suite: Any) -> None:
    recall_suite.add("case_1", PAID, ANSWER)
    result = recall_suite.run("--recall-max-cost=lots")
    result.stderr.fnmatch_lines(["*--recall-max-cost must be an amount of US dollars, like 25 or 2.50, not 'lots'*"])


@pytest.mark.slow
def test_a_retried_case_costs_every_attempt(recall_suite: Any) -> None:
    recall_suite.add("case_a", ["cost 0.25\nexit 3", "recall"], ANSWER)
    recall_suite.run("--recall-retries=2", "--recall-retry-delay=0.1").assert_outcomes(failed=1)
    record = recall_suite.records()["case_a"]
    assert record["attempts"] == 3
    assert record["cost_usd"] == 0.75


def test_planned_sessions_count_a_group_ingest_once_per_epoch() -> None:
    runs = [
        PlannedRun(steps=3, group=None, ingest_steps=0, control=False, epoch=1),
        PlannedRun(steps=3, group=None, ingest_steps=0, control=True, epoch=1),
        PlannedRun(steps=5, group="g", ingest_steps=4, control=False, epoch=1),
        PlannedRun(steps=5, group="g", ingest_steps=4, control=False, epoch=1),
        PlannedRun(steps=5, group="g", ingest_steps=4, control=False, epoch=2),
        PlannedRun(steps=5, group="g", ingest_steps=4, control=True, epoch=1),
    ]
    assert planned_sessions(runs) == 3 + 1 + (4 + 1) + 1 + (4 + 1) + 1
    lines = plan_lines(15, 6, SessionRates(cost_usd=0.02, duration_s=36.0, sessions=40), "old.json")
    assert lines[0] == "recall: this run will start 15 agent sessions for 6 case runs"
    assert "expected cost $0.30 (median $0.0200 per session)" in lines[1] and "0.1 h of sessions" in lines[1]


@pytest.mark.slow
def test_collect_only_prints_the_sessions_and_the_estimate(recall_suite: Any) -> None:
    path = recall_suite.pytester.path
    assert main(["import", "locomo", str(DATA / "locomo_tiny.json"), "--out", str(path / "loc")]) == 0
    assert main(["import", "longmemeval", str(DATA / "longmemeval_tiny.json"), "--out", str(path / "lme")]) == 0
    result = recall_suite.run("loc", "lme", "--collect-only", with_command=False, report=False)
    # LoCoMo: 3 + 2 ingest steps and 12 questions; LongMemEval: 33 steps in 9 cases.
    result.stdout.fnmatch_lines(["recall: this run will start 50 agent sessions for 21 case runs"])
    recall_suite.add("paid", PAID, ANSWER)
    recall_suite.run("cases")
    result = recall_suite.run(
        "loc", "--collect-only", f"--recall-estimate-from={recall_suite.report_path}", "--recall-control", report=False
    )
    result.stdout.fnmatch_lines(
        [
            "recall: this run will start 29 agent sessions for 24 case runs",
            "recall: at the rates of * (2 sessions): expected cost $14.50 (median $0.5000 per session)*",
        ]
    )


def test_a_shard_keeps_a_group_whole() -> None:
    nodeids = [f"loc/conv-{g}/q{q}::recall" for g in range(6) for q in range(5)]
    units = {nodeid: nodeid.rsplit("/", 1)[0] for nodeid in nodeids}
    shards = [shard_members(nodeids, (index, 3), None, units) for index in (1, 2, 3)]
    assert set().union(*shards) == set(nodeids)
    for group in set(units.values()):
        assert sum(1 for shard in shards if any(units[n] == group for n in shard)) == 1
