"""Resumed records are checked against the report's schema, and NaN is never written
(issue 14, item 10).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pytest_recall.plugin.runlog import RunLog

ANSWER = "12345.67"
CASES = ("case_01", "case_02", "case_03")


def strict_json(text: str) -> Any:
    """JSON as the standard has it: no NaN, no Infinity."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_resumed_records_that_do_not_fit_are_refused_one_line_each_and_their_cases_run_again(
    recall_suite: Any,
) -> None:
    for name in CASES:
        recall_suite.add(name, ["say 1.00", f"say {ANSWER}"], ANSWER)
    log = recall_suite.pytester.path / "run.jsonl"
    recall_suite.run(f"--recall-log={log}").assert_outcomes(passed=3)
    lines = log.read_text(encoding="utf-8").splitlines()
    odd = {"case_01": ('"score":1.0', '"score":NaN'), "case_02": ('"epoch":1', '"epoch":"one"')}
    for index, line in enumerate(lines):
        for name, (before, after) in odd.items():
            if f"/{name}::" in line:
                assert before in line
                lines[index] = line.replace(before, after)
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    size_before = log.stat().st_size

    resumed = recall_suite.run(f"--recall-log={log}", f"--recall-resume={log}")
    resumed.assert_outcomes(passed=3)
    resumed.stdout.fnmatch_lines(
        [
            "recall: resume refused the record of cases/suite/case_01::recall: at score: NaN is not a JSON number*",
            "recall: resume refused the record of cases/suite/case_02::recall: at epoch: 'one' is not of type*",
            "recall: resuming from *run.jsonl: 1 scored case records",
        ]
    )
    assert "Traceback" not in resumed.stdout.str()
    assert recall_suite.report()["n_passed"] == 3
    added = log.read_bytes()[size_before:].decode("utf-8").splitlines()
    assert sorted(strict_json(line)["id"] for line in added) == ["case_01", "case_02"]


def test_an_agent_reporting_a_nan_cost_leaves_strict_json_in_the_log_and_the_report(recall_suite: Any) -> None:
    recall_suite.add("nan-cost", ["say 1.00\ncost nan", f"say {ANSWER}\ncost 0.5"], ANSWER)
    log = recall_suite.pytester.path / "run.jsonl"
    recall_suite.run(f"--recall-log={log}").assert_outcomes(passed=1)
    record = strict_json(log.read_text(encoding="utf-8"))
    assert [step["cost_usd"] for step in record["steps"]] == [None, 0.5]
    strict_json(recall_suite.report_path.read_text(encoding="utf-8"))


def test_the_run_log_writes_a_nan_as_null(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "run.jsonl")
    log.append({"nodeid": "x", "score": math.nan, "steps": [{"cost_usd": -math.inf}]})
    log.close()
    written = strict_json((tmp_path / "run.jsonl").read_text())
    assert written == {"nodeid": "x", "score": None, "steps": [{"cost_usd": None}]}
