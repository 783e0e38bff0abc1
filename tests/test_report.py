"""The run report: written atomically, in a stable key order; and the JUnit file's per-case properties."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_recall.plugin.junit import parse_figures_block
from pytest_recall.reporting.document import SHARED_KEYS, load_report, step_order
from pytest_recall.reporting.files import write_json_atomic
from pytest_recall.reporting.merge import report_of_rows

REPORT_KEYS = [
    "schema_version",
    "passed",
    "score",
    "n_passed",
    "n_total",
    "n_scored",
    "n_skipped_no_gold",
    "n_errors",
    "threshold",
    "by_category",
    "latency_ms_median",
    "latency_ms_p95",
    "latency_ms_total",
    "cost_usd_total",
    "command",
    "interrupted",
    "cases",
]
RECORD_KEYS = [
    "id",
    "suite",
    "nodeid",
    "category",
    "answer_kind",
    "expected",
    "score",
    "reason",
    "reported",
    "n_candidates",
    "error",
    "outcome",
    "epoch",
    "control",
    "duration_s",
    "cost_usd",
    "tokens_in",
    "tokens_out",
    "memory_bytes",
    "content_hash",
    "command",
    "run_mode",
    "steps",
]
# The documented order of a step's fields is the schema's; a live session's last step adds "terminal".
STEP_KEYS = [key for key in step_order() if key != "terminal"]
JUNIT_PROPERTIES = [
    "recall_score",
    "recall_category",
    "recall_reason",
    "recall_reported",
    "recall_duration_s",
    "recall_cost_usd",
]
REMEMBER = "remember 12345.67\nsay noted"


def assert_documented_order(keys: list[str], documented: list[str]) -> None:
    """Every documented key is there, in the documented order; later additions may sit between."""
    assert [key for key in keys if key in documented] == documented


def stray_files(folder: Path, keep: str) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name != keep)


def test_write_json_atomic_makes_the_folder_and_leaves_nothing_else(tmp_path):
    path = tmp_path / "deep" / "er" / "report.json"

    write_json_atomic(path, {"b": 1, "a": [1, 2], "text": "résumé"})

    assert (
        path.read_text(encoding="utf-8")
        == json.dumps({"b": 1, "a": [1, 2], "text": "résumé"}, indent=2, ensure_ascii=False) + "\n"
    )
    assert stray_files(path.parent, "report.json") == []


def test_write_json_atomic_replaces_the_file_rather_than_rewriting_it(tmp_path):
    """A reader holding the old file keeps reading a whole document: the new one arrives by rename."""
    path = tmp_path / "report.json"
    write_json_atomic(path, {"run": 1})
    with open(path, encoding="utf-8") as reader:
        write_json_atomic(path, {"run": 2, "padding": "x" * 100_000})
        assert json.load(reader) == {"run": 1}
    assert json.loads(path.read_text()) == {"run": 2, "padding": "x" * 100_000}


def test_a_failed_write_keeps_the_old_report_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "report.json"
    write_json_atomic(path, {"run": 1})

    with pytest.raises(TypeError):
        write_json_atomic(path, {"run": 2, "unserialisable": object()})

    assert json.loads(path.read_text()) == {"run": 1}
    assert stray_files(tmp_path, "report.json") == []


def test_build_report_orders_keys_and_cases_stably():
    records = [
        {"nodeid": "cases/s/b::recall", "epoch": 1, "score": 1.0, "category": "x", "duration_s": 1.0},
        {"nodeid": "cases/s/a::recall[epoch2]", "epoch": 2, "score": 0.0, "category": "x", "duration_s": 1.0},
        {"nodeid": "cases/s/a::recall[epoch1]", "epoch": 1, "score": 1.0, "category": "x", "duration_s": 1.0},
    ]
    built = report_of_rows(records, threshold=0.5, command="agent")
    report = built.as_json()
    assert_documented_order(list(report), REPORT_KEYS)
    assert (next(iter(report)), list(report)[-1]) == ("schema_version", "cases")
    assert [case["nodeid"] for case in report["cases"]] == [
        "cases/s/a::recall[epoch1]",
        "cases/s/a::recall[epoch2]",
        "cases/s/b::recall",
    ]
    assert report_of_rows(list(reversed(records)), threshold=0.5, command="agent") == built


def test_load_report_refuses_a_document_that_is_no_report(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not a pytest-recall report"):
        load_report(path)


def test_the_written_report_has_a_stable_key_order_and_sorted_cases(recall_suite):
    recall_suite.add("case_02", [REMEMBER, "recall"])
    recall_suite.add("case_01", [REMEMBER, "cost 0.5\nsay 99999.99"], category="other")
    nested = recall_suite.pytester.path / "out" / "nested" / "report.json"

    result = recall_suite.run("--recall-timeout=5", f"--recall-report={nested}", report=False)

    result.assert_outcomes(passed=1, failed=1)
    text = nested.read_text(encoding="utf-8")
    report = json.loads(text)
    assert_documented_order(list(report), REPORT_KEYS)
    assert (next(iter(report)), list(report)[-1]) == ("schema_version", "cases")
    assert [case["id"] for case in report["cases"]] == ["case_01", "case_02"]
    # Every record, and every step in it, has its keys in one order, the documented one.
    assert len({tuple(case) for case in report["cases"]}) == 1
    # A step leaves out what equals the report's step_defaults; a reader puts it back, in its place.
    for step in (step for case in report["cases"] for step in case["steps"]):
        assert [key for key in STEP_KEYS if key in step] == [key for key in step if key in STEP_KEYS]
        assert not any(key in step and step[key] == value for key, value in report["step_defaults"].items())
    read = load_report(nested)
    assert {tuple(step) for case in read.cases for step in case["steps"]} == {tuple(STEP_KEYS)}
    # The run's mode and command are written once, above the cases, and in no case that shares them.
    assert list(report)[-3:-1] == ["run_mode", "step_defaults"] and report["run_mode"]["home"] == "case"
    assert report["command"]
    assert_documented_order(list(report["cases"][0]), [key for key in RECORD_KEYS if key not in SHARED_KEYS])
    # Indented as json.dump writes it, but one case record a line: a big report stays small and greps well.
    cases = ",\n    ".join(json.dumps(case, ensure_ascii=False, separators=(",", ":")) for case in report["cases"])
    assert text == json.dumps({**report, "cases": []}, indent=2, ensure_ascii=False)[: -len("[]\n}")] + (
        f"[\n    {cases}\n  ]\n}}\n"
    )
    assert stray_files(nested.parent, "report.json") == []
    result.stdout.fnmatch_lines([f"  report: {nested}"])


def junit_properties(path: Path) -> dict[str, dict[str, str | None]]:
    """Each testcase's figures, by its class name (the case folder): under xunit2 they are in system-out."""
    return {
        str(testcase.get("classname")): dict(parse_figures_block(testcase.findtext("system-out") or ""))
        for testcase in ET.parse(path).getroot().iter("testcase")
    }


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_junit_carries_the_recall_properties_of_every_case(recall_suite, xdist):
    recall_suite.add("case_01", ["cost 0.5\n" + REMEMBER, "recall"], category="closing_balance")
    recall_suite.add("case_02", [REMEMBER, "say 99999.99"], category="period_debits")
    junit = recall_suite.pytester.path / "junit.xml"

    result = recall_suite.run("--recall-timeout=5", f"--junitxml={junit}", *xdist)

    result.assert_outcomes(passed=1, failed=1)
    cases = junit_properties(junit)
    assert sorted(cases) == ["cases.suite.case_01", "cases.suite.case_02"]
    first, second = cases["cases.suite.case_01"], cases["cases.suite.case_02"]
    for properties in (first, second):
        assert set(JUNIT_PROPERTIES) <= set(properties)
        assert all(name.startswith("recall_") for name in properties)
    assert (first["recall_score"], first["recall_category"], first["recall_reported"]) == (
        "1.0",
        "closing_balance",
        "12345.67",
    )
    assert (first["recall_cost_usd"], first["recall_reason"]) == ("0.5", "final line is the expected value")
    assert float(first["recall_duration_s"] or 0) > 0
    assert (second["recall_score"], second["recall_category"], second["recall_reported"]) == (
        "0.0",
        "period_debits",
        "99999.99",
    )
    assert second["recall_cost_usd"] == ""
    # The whole record travels to the controller for the JSON report, but stays out of the XML.
    assert "recall_record" not in junit.read_text(encoding="utf-8")
    assert [record["id"] for record in recall_suite.report()["cases"]] == ["case_01", "case_02"]
