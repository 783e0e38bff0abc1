"""Parallel runs agree with serial ones, and CI gets what it reads: JUnit properties and exit status.

The suite is the bundled seed suite run by the reference notebook agent,
plus one case it cannot answer, so both verdicts appear in every report.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from pytest_recall.plugin.junit import parse_figures_block

NOTEBOOK = "pytest_recall.agents.notebook"
XDIST = {"serial": (), "xdist": ("-n", "2")}
CASE_PROPERTIES = {
    "recall_score",
    "recall_category",
    "recall_reason",
    "recall_reported",
    "recall_duration_s",
    "recall_cost_usd",
}


@pytest.fixture
def seed_suite(recall_suite: Any) -> Any:
    recall_suite.copy_seed_suite()
    recall_suite.add(
        "case_99_unanswerable",
        ["There is nothing to remember here.", "What was the closing balance? If you do not know, say UNKNOWN"],
        answer="1.00",
        category="closing_balance",
        suite="session-memory-recall",
    )
    return recall_suite


def run_notebook(suite: Any, *args: str) -> pytest.RunResult:
    return suite.run(*args, command=suite.module(NOTEBOOK))


def test_serial_and_four_workers_write_the_same_report(seed_suite, without_timing):
    run_notebook(seed_suite).assert_outcomes(passed=8, failed=1)
    serial = seed_suite.report()

    run_notebook(seed_suite, "-n", "4").assert_outcomes(passed=8, failed=1)

    assert without_timing(seed_suite.report()) == without_timing(serial)


def junit(suite: Any) -> ET.Element:
    return ET.parse(suite.pytester.path / "junit.xml").getroot()


def properties(element: ET.Element) -> dict[str, str]:
    found = element.find("properties")
    assert found is not None, f"no properties on {element.tag} {element.attrib}"
    return {prop.attrib["name"]: prop.attrib["value"] for prop in found.findall("property")}


@pytest.mark.parametrize("parallel", XDIST.values(), ids=XDIST.keys())
def test_junit_carries_case_and_run_properties_and_verdict_messages(seed_suite, parallel):
    run_notebook(seed_suite, *parallel, "--junitxml=junit.xml").assert_outcomes(passed=8, failed=1)

    report = seed_suite.report()
    suite = junit(seed_suite).find("testsuite")
    assert suite is not None
    run = properties(suite)
    assert run["recall_score"] == str(report["score"])
    assert run["recall_passed"] == "true"
    assert (run["recall_n_passed"], run["recall_n_total"]) == ("8", "9")
    for category, score in report["by_category"].items():
        assert run[f"recall_category_{category}"] == str(score)
    records = {record["nodeid"]: record for record in report["cases"]}
    testcases = suite.findall("testcase")
    assert len(testcases) == 9
    for testcase in testcases:
        assert testcase.find("properties") is None, "xunit2 allows no properties on a testcase"
        case = parse_figures_block(testcase.findtext("system-out") or "")
        assert set(case) >= CASE_PROPERTIES
        assert "recall_record" not in case, "the whole record stays out of the JUnit file"
        name = testcase.attrib["classname"].rsplit(".", 1)[-1]
        record = next(r for nodeid, r in records.items() if f"/{name}::" in nodeid)
        assert case["recall_score"] == str(record["score"])
        assert case["recall_reason"] == str(record["reason"])
        assert case["recall_reported"] == str(record["reported"])
    # A failed case's message is its verdict; the element text adds the transcripts.
    failures = suite.findall(".//failure")
    assert len(failures) == 1
    assert failures[0].attrib["message"].splitlines() == [
        "case_99_unanswerable scored 0.0: agent answered UNKNOWN: the value did not survive into the new session",
        "  expected: '1.00'",
        "  reported: 'UNKNOWN'",
        "  category: closing_balance",
    ]
    text = failures[0].text or ""
    assert text.startswith(failures[0].attrib["message"])
    assert "  step 2: exit 0 after" in text


def test_the_short_summary_shows_the_verdict(seed_suite):
    # -vv: the summary line is not cut to the terminal's width.
    result = run_notebook(seed_suite, "-rf", "-vv")

    result.stdout.fnmatch_lines(["FAILED *case_99_unanswerable::recall - case_99_unanswerable scored 0.0*"])


@pytest.fixture
def two_of_three(recall_suite: Any) -> Any:
    """Three quick cases for the scripted agent: two remembered, one forgotten (score 0.667)."""
    for name in ("case_01", "case_02"):
        recall_suite.add(name, ["remember 12345.67\nsay noted", "recall"])
    recall_suite.add("case_03", ["say noted", "recall"])
    return recall_suite


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (("--recall-threshold=0.5",), pytest.ExitCode.TESTS_FAILED),
        (("--recall-gate=score", "--recall-threshold=0.5"), pytest.ExitCode.OK),
        (("--recall-gate=score", "--recall-threshold=0.7"), pytest.ExitCode.TESTS_FAILED),
        (("--recall-gate=score", "--recall-threshold=0.5", "-n", "2"), pytest.ExitCode.OK),
    ],
    ids=["cases-gate", "score-reached", "score-missed", "score-reached-xdist"],
)
def test_score_gate_exit_status_follows_the_run_verdict_alone(two_of_three, args, status):
    result = two_of_three.run(*args)

    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == status


def test_score_gate_does_not_hide_an_interrupted_run(two_of_three):
    two_of_three.pytester.makeconftest("def pytest_runtest_teardown(item):\n    raise KeyboardInterrupt\n")

    result = two_of_three.run("--recall-gate=score")

    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert two_of_three.report()["interrupted"] is True


def test_gate_has_an_ini_twin_and_a_bad_value_is_one_line(two_of_three):
    two_of_three.pytester.makeini("[pytest]\nrecall_gate = score\n")
    assert two_of_three.run().ret == pytest.ExitCode.OK

    bad = two_of_three.run("--recall-gate=vibes")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: --recall-gate must be one of cases, score, not 'vibes'"])
