"""The run-level verdict, folded from case records.

A pure function over plain records (the same dicts the JSON report and the
``--recall-log`` lines hold), so a merged set of shard reports is graded
exactly as one run would be: medians and percentiles are always recomputed
from raw durations, never averaged.

The arithmetic follows the session-memory-recall grader: the score is the
mean over scored records; a record without a score (an agent that could not
start, a case without gold) counts in ``n_total`` and ``n_skipped_no_gold``
but never in the score. ``n_errors`` says how many of those were errors.
Control records (no-memory baselines) are left out of the main verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_recall.scoring.case_summary import CaseSummary
from pytest_recall.scoring.verdict import scored_a_pass

DEFAULT_THRESHOLD = 0.5


def main_records(summaries: Sequence[CaseSummary]) -> list[CaseSummary]:
    """The case runs that count toward the verdict: everything but control runs."""
    return [r for r in summaries if not r.control]


def _latency_ms(durations: list[float]) -> tuple[float, float, float]:
    if not durations:
        return 0.0, 0.0, 0.0
    ordered = sorted(durations)
    median = round(ordered[len(ordered) // 2] * 1000, 1)
    p95 = round(ordered[int(0.95 * len(ordered))] * 1000, 1) if len(ordered) > 1 else median
    return median, p95, round(sum(ordered) * 1000, 1)


def _by_category(scored: list[CaseSummary]) -> dict[str, float]:
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for record in scored:
        category = record.category
        if category:
            totals[category] = totals.get(category, 0.0) + float(record.score)
            counts[category] = counts.get(category, 0) + 1
    return {category: round(totals[category] / counts[category], 3) for category in counts}


def aggregate(summaries: Sequence[CaseSummary], threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """Fold case runs into the run verdict."""
    counted = main_records(summaries)
    scored = [r for r in counted if r.score is not None]
    mean = sum(float(r.score) for r in scored) / len(scored) if scored else 0.0
    median, p95, total = _latency_ms([float(r.duration_s) for r in counted if r.duration_s is not None])
    costs = [float(r.cost_usd) for r in counted if r.cost_usd is not None]
    return {
        "passed": bool(scored) and mean >= threshold,
        "score": round(mean, 3),
        "n_passed": sum(1 for r in scored if scored_a_pass(r.score, r.error)),
        "n_total": len(counted),
        "n_scored": len(scored),
        "n_skipped_no_gold": len(counted) - len(scored),
        "n_errors": sum(1 for r in counted if r.error),
        "threshold": threshold,
        "by_category": _by_category(scored),
        "latency_ms_median": median,
        "latency_ms_p95": p95,
        "latency_ms_total": total,
        "cost_usd_total": round(sum(costs), 4) if costs else None,
    }
