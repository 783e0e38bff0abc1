"""The bundled seed suite against the reference agents, readable failures, and the judge for users."""

from __future__ import annotations

import json

from pytest_recall.reporting.spool import summary_of_row
from pytest_recall.scoring.grader import aggregate

NOTEBOOK = "pytest_recall.agents.notebook"
AMNESIAC = "pytest_recall.agents.amnesiac"
TOP_LEVEL_FROM_GRADER = (
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
)


def assert_report_matches_grader(report):
    graded = aggregate([summary_of_row(row) for row in report["cases"]], report["threshold"])
    assert {key: report[key] for key in TOP_LEVEL_FROM_GRADER} == {key: graded[key] for key in TOP_LEVEL_FROM_GRADER}


def test_the_notebook_solves_the_seed_suite(recall_suite):
    recall_suite.copy_seed_suite()

    result = recall_suite.run("--recall-timeout=30", command=recall_suite.module(NOTEBOOK))

    result.assert_outcomes(passed=8)
    report = recall_suite.report()
    assert (report["score"], report["passed"], report["n_passed"], report["n_total"]) == (1.0, True, 8, 8)
    assert set(report["by_category"].values()) == {1.0}
    assert_report_matches_grader(report)
    result.stdout.fnmatch_lines(["recall: PASSED  score 1.000  (threshold 0.5)  8/8 cases passed*"])


def test_the_amnesiac_scores_zero_with_readable_failures(recall_suite):
    recall_suite.copy_seed_suite()

    result = recall_suite.run("--recall-timeout=30", command=recall_suite.module(AMNESIAC))

    result.assert_outcomes(failed=8)
    report = recall_suite.report()
    assert (report["score"], report["passed"], report["n_passed"]) == (0.0, False, 0)
    assert {record["reported"] for record in report["cases"]} == {"UNKNOWN"}
    assert_report_matches_grader(report)
    result.stdout.fnmatch_lines(
        [
            "*_ session-memory-recall/case_01 _*",
            "case_01 scored 0.0: agent answered UNKNOWN*",
            "  expected: '27436.42'",
            "  reported: 'UNKNOWN'",
            "  category: closing_balance",
            "  step 2: exit 0 after *s",
            "    stdout (last 1 lines):",
            "      | UNKNOWN",
            "  (-v shows every step's output; the JSON report and --recall-html keep the transcripts)",
            "*_ session-memory-recall/case_02 _*",
        ]
    )
    output = result.stdout.str()
    assert "Traceback" not in output
    assert "pexpect" not in output
    assert "pytest_recall/" not in output
    result.stdout.fnmatch_lines(["recall: FAILED  score 0.000  (threshold 0.5)  0/8 cases passed*"])


def test_a_failure_shows_the_last_lines_of_each_steps_stdout_and_stderr(recall_suite):
    noisy = "\n".join(f"say line {n}" for n in range(1, 10)) + "\nerr warning: cache cold\nerr giving up\nsay 99999.99"
    recall_suite.add("case_01", ["say first step\nerr first step complaint", noisy])

    result = recall_suite.run("--recall-timeout=5", "-v")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "case_01 scored 0.0: final line gives a different value",
            "  expected: '12345.67'",
            "  reported: '99999.99'",
            "  step 1: exit 0 after *",
            "    stdout (last 1 lines):",
            "      | first step",
            "    stderr (last 1 lines):",
            "      | first step complaint",
            "  step 2: exit 0 after *",
            "    stdout (last 6 lines):",
            "      | line 5",
            "*",
            "      | 99999.99",
            "    stderr (last 2 lines):",
            "      | warning: cache cold",
            "      | giving up",
        ]
    )


EXPECTED = {"id": "case_01", "category": "closing_balance", "answer": "27436.42", "answer_kind": "money"}


def test_the_judge_fixture_passes_and_fails_a_users_test_readably(pytester):
    pytester.makepyfile(
        f"""
        EXPECTED = {EXPECTED!r}

        def test_remembered(judge):
            verdict = judge("Checked my notes.\\nThe balance is $27,436.42", EXPECTED)
            assert verdict["score"] == 1.0

        def test_forgot(judge):
            judge("I looked everywhere.\\nUNKNOWN", EXPECTED)

        def test_score_only_returns_the_verdict(judge):
            assert judge.score("UNKNOWN", EXPECTED)["score"] == 0.0
        """
    )

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")

    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_forgot _*",
            "case_01 scored 0.0: agent answered UNKNOWN*",
            "  expected: '27436.42'",
            "  reported: 'UNKNOWN'",
            "  category: closing_balance",
            "  step 1: exit 0 after 0.00s",
            "    stdout (last 2 lines):",
            "      | I looked everywhere.",
            "      | UNKNOWN",
        ]
    )
    assert "Traceback" not in result.stdout.str()


CUSTOM_KIND_CONFTEST = """
def pytest_recall_answer_kinds(config):
    return ["colour"]


def pytest_recall_judge(stdout, expected, config):
    if expected.get("answer_kind") != "colour":
        return None
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    said = lines[-1].lower() if lines else ""
    right = said == expected["answer"]
    return {
        "score": 1.0 if right else 0.0,
        "reason": "same colour" if right else "another colour",
        "category": expected.get("category"),
        "reported": said,
    }
"""


def test_a_conftest_judges_its_own_declared_answer_kind(recall_suite):
    recall_suite.pytester.makeconftest(CUSTOM_KIND_CONFTEST)
    recall_suite.add("case_01_colour_right", ["say noted", "say Teal"], "teal", kind="colour")
    recall_suite.add("case_02_colour_wrong", ["say noted", "say Mauve"], "teal", kind="colour")
    recall_suite.add("case_03_money", ["remember 12345.67", "recall"])
    recall_suite.pytester.makepyfile(
        test_user=f"""
        def test_judge_fixture_uses_the_hook(judge):
            judge("teal", {json.dumps({"id": "u", "category": "c", "answer": "teal", "answer_kind": "colour"})})
        """
    )

    result = recall_suite.run("--recall-timeout=5")

    result.assert_outcomes(passed=3, failed=1)
    records = recall_suite.records()
    assert (records["case_01_colour_right"]["score"], records["case_01_colour_right"]["reason"]) == (1.0, "same colour")
    assert (records["case_02_colour_wrong"]["reported"], records["case_02_colour_wrong"]["reason"]) == (
        "mauve",
        "another colour",
    )
    assert records["case_03_money"]["reason"] == "final line is the expected value"
    result.stdout.fnmatch_lines(["case_02_colour_wrong scored 0.0: another colour", "  expected: 'teal'"])


def test_an_undeclared_answer_kind_is_a_collection_error_even_with_a_judge(recall_suite):
    """Only declared kinds pass collection: a hook that judges a kind must also name it."""
    recall_suite.pytester.makeconftest(CUSTOM_KIND_CONFTEST.replace('["colour"]', "[]"))
    recall_suite.add("case_01", ["say noted", "say teal"], "teal", kind="colour")

    result = recall_suite.run("--recall-timeout=5")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["malformed case: *unknown answer_kind 'colour'*"])
