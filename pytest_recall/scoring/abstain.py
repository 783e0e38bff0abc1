"""The ``abstain`` answer kind: the right answer is that nothing was given.

A memory that invents a figure for an account it never saw is as wrong as
one that forgets a figure it did see. So a question about something never
given expects exactly ``NOT GIVEN`` on the final line, and ``NOT GIVEN``
anywhere a value was due scores 0, like ``UNKNOWN``. The report counts those
as false abstentions: an agent that abstains whenever it is unsure would
otherwise look good on abstention questions and merely forgetful elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_recall.cases import KIND_ABSTAIN
from pytest_recall.scoring.case_summary import CaseSummary

NOT_GIVEN = "NOT GIVEN"


def says_not_given(line: str) -> bool:
    """Whether a final line (already stripped as the seed strips lines) abstains; case is ignored, as for UNKNOWN."""
    return line.upper() == NOT_GIVEN


def score_abstain(tail: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """1 only when the final line is exactly NOT GIVEN; a value, UNKNOWN or prose all score 0."""
    category = expected.get("category")
    if says_not_given(tail):
        return {
            "score": 1.0,
            "reason": "final line is NOT GIVEN: nothing was given",
            "category": category,
            "reported": tail,
        }
    reason = "final line is not NOT GIVEN, yet the question is about something never given"
    return {"score": 0.0, "reason": reason, "category": category, "reported": tail}


def false_abstention(tail: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict for NOT GIVEN where a value was due."""
    reason = "agent answered NOT GIVEN, but the value was given in an earlier session"
    return {"score": 0.0, "reason": reason, "category": expected.get("category"), "reported": NOT_GIVEN}


def false_abstention_rate(summaries: Sequence[CaseSummary]) -> float | None:
    """Of the scored, non-control cases that were due a value, the share answered NOT GIVEN; None if none."""
    due = [r for r in summaries if not r.control and r.score is not None and r.answer_kind != KIND_ABSTAIN]
    if not due:
        return None
    abstained = sum(1 for r in due if says_not_given(str(r.reported or "")))
    return round(abstained / len(due), 4)
