"""The run report as one frozen object: its JSON is the bytes the dict it replaced wrote, and it round-trips.

``tests/data/run_report_small.json`` is the report of a small run (two cases, a control, two epochs, a
category) written by the code before :class:`RunReport` existed, with the clock and the run's folder taken
out. The same run must write the same report: a key moved, dropped or renamed is a change for every
reader of report files.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.reporting.document import load_report, load_report_json, write_report
from pytest_recall.reporting.run_report import RunReport
from pytest_recall.scoring.passing import run_passed

CLONE = Path(__file__).resolve().parent.parent
GOLDEN = CLONE / "tests" / "data" / "run_report_small.json"
REMEMBER = "remember 12345.67\nsay noted"


def small_run(recall_suite: Any) -> tuple[str, str]:
    """The report a small run writes, and the folder it ran in."""
    recall_suite.add("case_02", [REMEMBER, "recall"])
    recall_suite.add("case_01", [REMEMBER, "cost 0.5\nsay 99999.99"], category="other")
    recall_suite.run("--recall-timeout=5", "--recall-control", "--recall-epochs=2", "-p", "no:randomly")
    return recall_suite.report_path.read_text(encoding="utf-8"), str(recall_suite.pytester.path)


def comparable(text: str, root: str, without_timing: Any) -> Any:
    """A report's JSON without what depends on the clock, the run's folder or the harness's version."""
    for folder, name in ((root, "<root>"), (sys.executable, "<python>"), (str(CLONE), "<clone>")):
        text = text.replace(folder, name)
    document = without_timing(json.loads(text))
    protocol = document.get("protocol") or {}
    protocol.pop("harness_version", None)
    return document


def test_the_report_of_a_small_run_is_what_the_dict_wrote(recall_suite, without_timing):
    text, root = small_run(recall_suite)

    if os.environ.get("RECALL_WRITE_GOLDEN"):
        GOLDEN.write_text(json.dumps(comparable(text, root, without_timing), indent=2) + "\n", encoding="utf-8")
    # Compared as text: the keys' order is part of the bytes.
    assert json.dumps(comparable(text, root, without_timing), indent=2) + "\n" == GOLDEN.read_text(encoding="utf-8")


def test_a_report_file_read_and_written_again_has_the_same_bytes(recall_suite, tmp_path):
    text, _root = small_run(recall_suite)

    report = load_report(recall_suite.report_path)
    again = tmp_path / "again.json"
    write_report(again, report)

    assert isinstance(report, RunReport) and report.passed and report.score == 0.5
    assert again.read_text(encoding="utf-8") == text


def test_keys_a_plugin_added_are_kept_after_the_cases_and_optional_blocks_left_out():
    document = {"schema_version": 2, "passed": True, "score": 1.0, "n_passed": 1, "n_total": 1, "threshold": 0.5}
    document |= {"latency_ms_median": 1.0, "latency_ms_p95": 1.0, "latency_ms_total": 1.0, "cases": []}
    document["task_grader"] = {"t": {"ok": True}}

    report = RunReport.from_json(document)

    assert report.added == {"task_grader": {"t": {"ok": True}}}
    written = report.as_json()
    assert list(written)[-2:] == ["cases", "task_grader"] and "stop" not in written and "protocol" not in written
    assert written["cost_usd_total"] is None  # always written, even when unknown


@pytest.mark.parametrize(
    ("mean", "n_scored", "collection_errors", "stop_decision", "passed"),
    [
        (0.5, 2, 0, None, True),
        (0.49, 2, 0, None, False),
        (1.0, 0, 0, None, False),
        (1.0, 2, 1, None, False),
        (1.0, 2, 0, "below", False),
        (0.0, 2, 0, "above", True),
        (0.0, 2, 1, "above", False),
    ],
)
def test_a_run_passes_by_its_mean_unless_collection_failed_or_the_stop_gate_decided(
    mean, n_scored, collection_errors, stop_decision, passed
):
    assert run_passed(mean, n_scored, 0.5, collection_errors=collection_errors, stop_decision=stop_decision) is passed


def test_load_report_json_is_the_reader_of_the_file_and_load_report_its_object(recall_suite):
    small_run(recall_suite)

    document = load_report_json(recall_suite.report_path)
    report = load_report(recall_suite.report_path)

    assert RunReport.from_json(document) == report


def test_no_function_takes_or_gives_a_report_as_a_mapping():
    """A run report travels as the object; only the public hook gets its JSON (the edge where bytes leave)."""
    import ast
    import re

    import pytest_recall

    # What makes or reads a whole run report (``load_report_json``, the file's reader, gives its JSON).
    MAKES_A_REPORT = re.compile(
        r"^((build|load|streamed|summarized|synthetic)_report|merge_reports?\w*|report_of_rows)$"
    )

    package = Path(pytest_recall.__file__).parent
    edges = {"pytest_recall_modify_report"}  # the hook's spec and its implementations: the report's JSON
    loose = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name in edges:
                continue
            typed = [(arg.arg, arg.annotation) for arg in [*node.args.args, *node.args.kwonlyargs]]
            if MAKES_A_REPORT.match(node.name):
                typed.append(("return", node.returns))
            for name, annotation in typed:
                text = ast.unparse(annotation) if annotation is not None else ""
                if (name in ("report", "return")) and any(word in text for word in ("Mapping", "dict", "Any")):
                    loose.append(f"{path.relative_to(package)}:{node.lineno} {node.name}({name}: {text})")
    assert loose == []
