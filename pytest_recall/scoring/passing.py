"""Whether a score is a pass: the one predicate every case, judge table and tally asks.

It stands alone, importing nothing of the package, so that every judge (the LoCoMo F1's wording, the
judge panel, the audit) can ask it without a cycle through :mod:`~pytest_recall.scoring.verdict`.
"""

from __future__ import annotations

from typing import Any

PASS_MARK = 1.0


def scored_a_pass(score: Any, error: Any = None) -> bool:
    """A run passed when it scored 1.0 and raised no error. The one place that says so."""
    return not error and isinstance(score, (int, float)) and not isinstance(score, bool) and score >= PASS_MARK


def run_passed(
    mean: float, n_scored: int, threshold: float, *, collection_errors: int = 0, stop_decision: str | None = None
) -> bool:
    """Whether a whole run passed, the one place that says so: never with a case that failed to collect; by the
    stop gate's decision when it decided (the cases it left unrun are what its guarantee is about, so the mean
    of those run is not the verdict); else when something was scored and the mean reaches the threshold."""
    if collection_errors:
        return False
    if stop_decision is not None:
        return stop_decision == "above"
    return n_scored > 0 and mean >= threshold
