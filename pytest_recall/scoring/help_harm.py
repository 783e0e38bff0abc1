"""Which cases memory helped and which it harmed: named, per category, never averaged away.

With a no-memory control, every case has a pair of outcomes. A case memory
*helped* failed in the control and passed with memory; a case it *harmed*
passed in the control and failed with memory. A mean lift can hide harm
behind help, so both lists are kept whole, with the exact McNemar p of the
two counts, per category and overall. Pure: records in, a JSON-ready mapping out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_recall.scoring.case_summary import CaseSummary
from pytest_recall.scoring.passing import scored_a_pass
from pytest_recall.scoring.stats import CaseFold, control_pairs, mcnemar_exact, rounded


def help_and_harm(summaries: Sequence[CaseSummary]) -> dict[str, Any] | None:
    """The helped and harmed cases of a run with a control; None when the run had none."""
    if not any(summary.control for summary in summaries):
        return None
    pairs, unanswered = control_pairs(summaries)
    categories: dict[str, list[tuple[CaseFold, CaseFold]]] = {}
    for base, new in pairs:
        categories.setdefault(new.category, []).append((base, new))
    overall = _counts(pairs)
    return {
        "helped": overall["helped"],
        "harmed": overall["harmed"],
        "n": overall["n"],
        "p_value": overall["p_value"],
        "by_category": {category: _counts(categories[category]) for category in sorted(categories)},
        "n_unanswered": unanswered,
    }


def _passed(fold: CaseFold) -> bool:
    return bool(fold.scores) and all(scored_a_pass(score) for score in fold.scores)


def _name(fold: CaseFold) -> str:
    return f"{fold.suite}/{fold.case_id}"


def _counts(pairs: Sequence[tuple[CaseFold, CaseFold]]) -> dict[str, Any]:
    helped = [_name(new) for base, new in pairs if not _passed(base) and _passed(new)]
    harmed = [_name(new) for base, new in pairs if _passed(base) and not _passed(new)]
    return {
        "n": len(pairs),
        "helped": helped,
        "harmed": harmed,
        "p_value": rounded(mcnemar_exact(len(helped), len(harmed))),
    }
