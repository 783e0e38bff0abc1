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

Each case weighs the same whatever its number of runs: a record weighs one
over its case's records. When every case ran equally often (the usual
epochs) that is exactly the mean over records; when an earlier report chose
which cases repeat (``--recall-epochs-from``), a repeated case does not
weigh more than one run once, and the score stays the mean of case means.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from pytest_recall.scoring.case_summary import CaseSummary
from pytest_recall.scoring.passing import run_passed, scored_a_pass

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


def case_weights(counted: Sequence[CaseSummary]) -> list[float]:
    """One over the number of runs of each record's case (by suite and id): every case weighs one in all.
    A record without an id or an epoch (not one run of a repeated case, as in the seed's record sets) is a
    case of its own."""
    keys = [
        (r.suite, r.id) if r.id is not None and r.epoch is not None else (None, f"#{index}")
        for index, r in enumerate(counted)
    ]
    runs = Counter(keys)
    return [1.0 / runs[key] for key in keys]


def _weighted_mean(pairs: list[tuple[float, float]]) -> float:
    total = sum(weight for weight, _score in pairs)
    return sum(weight * score for weight, score in pairs) / total if total else 0.0


def _by_category(scored: list[tuple[float, CaseSummary]]) -> dict[str, float]:
    pairs: dict[str, list[tuple[float, float]]] = {}
    for weight, record in scored:
        if record.category:
            pairs.setdefault(record.category, []).append((weight, float(record.score)))
    return {category: round(_weighted_mean(found), 3) for category, found in pairs.items()}


def aggregate(
    summaries: Sequence[CaseSummary],
    threshold: float = DEFAULT_THRESHOLD,
    *,
    collection_errors: int = 0,
    stop_decision: str | None = None,
) -> dict[str, Any]:
    """Fold case runs into the run verdict; ``passed`` also hears of collection errors and a stop gate's decision."""
    counted = main_records(summaries)
    weighted = [(w, r) for w, r in zip(case_weights(counted), counted, strict=True) if r.score is not None]
    scored = [r for _w, r in weighted]
    mean = _weighted_mean([(w, float(r.score)) for w, r in weighted])
    median, p95, total = _latency_ms([float(r.duration_s) for r in counted if r.duration_s is not None])
    costs = [float(r.cost_usd) for r in counted if r.cost_usd is not None]
    return {
        "passed": run_passed(
            mean, len(scored), threshold, collection_errors=collection_errors, stop_decision=stop_decision
        ),
        "score": round(mean, 3),
        "n_passed": sum(1 for r in scored if scored_a_pass(r.score, r.error)),
        "n_total": len(counted),
        "n_scored": len(scored),
        "n_skipped_no_gold": len(counted) - len(scored),
        "n_errors": sum(1 for r in counted if r.error),
        "threshold": threshold,
        "by_category": _by_category(weighted),
        "latency_ms_median": median,
        "latency_ms_p95": p95,
        "latency_ms_total": total,
        "cost_usd_total": round(sum(costs), 4) if costs else None,
    }
