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
