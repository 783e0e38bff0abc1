"""The grader as a plain function over case summaries, with tables."""

from __future__ import annotations

import pytest

from pytest_recall.reporting.spool import summary_of_row
from pytest_recall.scoring.case_summary import CaseSummary
from pytest_recall.scoring.grader import DEFAULT_THRESHOLD, aggregate, main_records


def record(
    score: float | None = 1.0,
    *,
    category: str | None = "closing_balance",
    duration_s: float | None = 1.0,
    cost_usd: float | None = None,
    error: str | None = None,
    control: bool = False,
) -> CaseSummary:
    return summary_of_row(
        {
            "score": score,
            "category": category,
            "duration_s": duration_s,
            "cost_usd": cost_usd,
            "error": error,
            "control": control,
        }
    )


@pytest.mark.parametrize(
    ("scores", "threshold", "passed", "score"),
    [
        ([1.0, 0.0], 0.5, True, 0.5),
        ([1.0, 0.0, 0.0], 0.5, False, 0.333),
        ([1.0, 1.0, 0.0], 0.5, True, 0.667),
        ([1.0, 1.0, 0.0], 0.7, False, 0.667),
        ([1.0], 1.0, True, 1.0),
        ([0.0], 0.0, True, 0.0),
        ([0.5, 0.25], 0.375, True, 0.375),
    ],
)
def test_the_run_passes_when_the_mean_reaches_the_threshold(scores, threshold, passed, score):
    verdict = aggregate([record(s) for s in scores], threshold)
    assert (verdict["passed"], verdict["score"], verdict["threshold"]) == (passed, score, threshold)


def test_the_default_threshold_is_one_half():
    assert DEFAULT_THRESHOLD == 0.5
    assert aggregate([record(1.0), record(0.0)])["threshold"] == 0.5


def test_an_empty_run_fails_with_zeros():
    assert aggregate([]) == {
        "passed": False,
        "score": 0.0,
        "n_passed": 0,
        "n_total": 0,
        "n_scored": 0,
        "n_skipped_no_gold": 0,
        "n_errors": 0,
        "threshold": 0.5,
        "by_category": {},
        "latency_ms_median": 0.0,
        "latency_ms_p95": 0.0,
        "latency_ms_total": 0.0,
        "cost_usd_total": None,
    }


def test_a_run_without_gold_fails_even_at_threshold_zero():
    verdict = aggregate([record(None), record(None)], 0.0)
    assert (verdict["passed"], verdict["n_scored"], verdict["n_skipped_no_gold"]) == (False, 0, 2)


def test_errors_count_in_n_errors_and_never_in_the_score():
    records = [record(1.0), record(None, error="agent could not start"), record(None, error="lost: worker crashed")]
    verdict = aggregate(records)
    assert verdict["score"] == 1.0
    assert verdict["passed"] is True
    assert (verdict["n_total"], verdict["n_scored"], verdict["n_skipped_no_gold"]) == (3, 1, 2)
    assert verdict["n_errors"] == 2
    assert verdict["n_passed"] == 1


def test_a_skipped_record_without_error_is_no_error():
    verdict = aggregate([record(0.0), record(None)])
    assert (verdict["n_skipped_no_gold"], verdict["n_errors"]) == (1, 0)


def test_control_records_are_left_out_of_the_verdict():
    records = [
        record(1.0, duration_s=2.0, cost_usd=0.1),
        record(0.0, control=True, duration_s=500.0, cost_usd=9.0),
        record(None, control=True, error="boom"),
    ]
    verdict = aggregate(records)
    assert main_records(records) == [records[0]]
    assert verdict["score"] == 1.0
    assert (verdict["n_total"], verdict["n_errors"]) == (1, 0)
    assert verdict["latency_ms_total"] == 2000.0
    assert verdict["cost_usd_total"] == 0.1


@pytest.mark.parametrize(
    ("scores", "n_passed"),
    [([1.0, 0.5, 0.0, 1.0], 2), ([0.99, 0.5], 0), ([], 0)],
)
def test_only_full_marks_count_as_passed_cases(scores, n_passed):
    assert aggregate([record(s) for s in scores])["n_passed"] == n_passed


def test_by_category_is_the_mean_per_category_rounded_to_three_places():
    records = [
        record(1.0, category="a"),
        record(0.0, category="a"),
        record(1.0, category="a"),
        record(1.0, category="b"),
        record(None, category="c"),
        record(1.0, category=None),
        record(0.0, category=""),
    ]
    assert aggregate(records)["by_category"] == {"a": 0.667, "b": 1.0}


@pytest.mark.parametrize(
    ("durations", "median", "p95", "total"),
    [
        ([], 0.0, 0.0, 0.0),
        ([1.5], 1500.0, 1500.0, 1500.0),
        ([2.0, 1.0], 2000.0, 2000.0, 3000.0),
        ([3.0, 1.0, 2.0], 2000.0, 3000.0, 6000.0),
        ([1.0, 2.0, 3.0, 4.0], 3000.0, 4000.0, 10000.0),
        ([float(n) for n in range(1, 21)], 11000.0, 20000.0, 210000.0),
        ([float(n) for n in range(1, 101)], 51000.0, 96000.0, 5050000.0),
        ([0.00012, 0.00049], 0.5, 0.5, 0.6),
    ],
)
def test_latency_median_and_p95_pick_from_the_sorted_durations(durations, median, p95, total):
    verdict = aggregate([record(1.0, duration_s=d) for d in durations])
    assert (verdict["latency_ms_median"], verdict["latency_ms_p95"], verdict["latency_ms_total"]) == (
        median,
        p95,
        total,
    )


def test_records_without_a_duration_are_left_out_of_latency():
    verdict = aggregate([record(1.0, duration_s=None), record(1.0, duration_s=4.0)])
    assert (verdict["latency_ms_median"], verdict["latency_ms_total"]) == (4000.0, 4000.0)


@pytest.mark.parametrize(
    ("costs", "total"),
    [
        ([None, None], None),
        ([], None),
        ([0.0], 0.0),
        ([0.1, None, 0.2], 0.3),
        ([0.00001, 0.00004], 0.0001),
        ([1.23456, 0.0], 1.2346),
    ],
)
def test_cost_total_is_null_when_no_case_reports_one(costs, total):
    assert aggregate([record(1.0, cost_usd=c) for c in costs])["cost_usd_total"] == total


def test_the_verdict_does_not_depend_on_record_order():
    records = [record(s, category=c, duration_s=d) for s, c, d in [(1.0, "a", 3.0), (0.0, "b", 1.0), (1.0, "a", 2.0)]]
    assert aggregate(records) == aggregate(list(reversed(records)))
