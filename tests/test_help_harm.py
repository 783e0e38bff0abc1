"""Help and harm: the cases memory helped and harmed, named per category, in the report, the summary and the page."""

from __future__ import annotations

from typing import Any

from test_html_report import section_rows

from conftest import RecallSuite
from pytest_recall.cases.model import write_case_folders
from pytest_recall.reporting.html import render_html
from pytest_recall.reporting.merge import case_scalars, report_of_rows
from pytest_recall.reporting.spool import summary_of_row
from pytest_recall.reporting.summary import format_summary
from pytest_recall.scoring.help_harm import help_and_harm
from pytest_recall.suites.coding import iter_cases


def record(case_id: str, category: str, score: float, *, control: bool) -> dict[str, Any]:
    nodeid = f"cases/s/{case_id}::recall" + ("::control" if control else "")
    return {"id": case_id, "suite": "s", "nodeid": nodeid, "category": category, "score": score, "control": control}


OUTCOMES = [  # (case, category, control score, memory score)
    ("a", "recall", 0.0, 1.0),
    ("b", "recall", 0.0, 1.0),
    ("c", "recall", 1.0, 1.0),
    ("d", "scoped", 1.0, 0.0),
    ("e", "scoped", 0.0, 0.0),
]
RECORDS = [
    r
    for c, cat, base, new in OUTCOMES
    for r in (record(c, cat, base, control=True), record(c, cat, new, control=False))
]


def test_helped_and_harmed_cases_are_named_per_category_with_the_exact_p() -> None:
    effect = help_and_harm([summary_of_row(r) for r in RECORDS])
    assert effect is not None
    assert (effect["helped"], effect["harmed"], effect["n"]) == (["s/a", "s/b"], ["s/d"], 5)
    assert effect["p_value"] == 1.0
    assert effect["by_category"]["recall"] == {"n": 3, "helped": ["s/a", "s/b"], "harmed": [], "p_value": 0.5}
    assert effect["by_category"]["scoped"] == {"n": 2, "helped": [], "harmed": ["s/d"], "p_value": 1.0}


def test_a_run_without_a_control_has_no_help_and_harm() -> None:
    assert help_and_harm([summary_of_row(r) for r in RECORDS if not r["control"]]) is None


def test_the_summary_names_harmed_cases_and_the_page_lists_both() -> None:
    records = [{**r, "duration_s": 1.0} for r in RECORDS]
    report = report_of_rows(records, threshold=0.5, command="agent")
    lines = format_summary(report, case_scalars(report))
    assert any("memory helped 2 cases" in line and "harmed 1 case" in line for line in lines)
    assert "  harmed in scoped: s/d" in lines
    page = render_html(report)
    assert "Helped and harmed" in page
    listed = section_rows(page, "help-harm")
    assert listed == [["recall", ["s/a", "s/b"], [], "0.500"], ["scoped", [], ["s/d"], "1.000"]]


def test_a_memory_that_ignores_scope_is_named_where_it_harms(recall_suite: RecallSuite) -> None:
    # Version 1's scoped cases: a rule from elsewhere leaked into a project the control got right.
    write_case_folders(iter_cases(9, 14, version=1), recall_suite.root / "coding")

    result = recall_suite.run("--recall-control", "--recall-concurrency=4", command=recall_suite.agent("leaky_coder"))

    effect = recall_suite.report()["help_harm"]
    assert effect["by_category"]["scoped"]["harmed"] == ["coding/coding_0006", "coding/coding_0013"]
    assert effect["by_category"]["convention"]["helped"] == ["coding/coding_0001", "coding/coding_0008"]
    assert len(effect["helped"]) == 12
    result.stdout.fnmatch_lines(
        ["*memory helped 12 cases*harmed 2 cases*", "*harmed in scoped: coding/coding_0006, coding/coding_0013"]
    )
