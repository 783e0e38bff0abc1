"""Answers a judge should refuse, made from a suite's gold: how lenient is a judge command?

LLM judges are known to accept vague answers. ``pytest-recall judge-audit``
asks the judge about four answers per question, each made from the gold
alone: the gold itself (it should be accepted), a vague answer that commits to
nothing, a partial one (half the gold, or a number rounded away), and a wrong
one (another question's gold). A good judge accepts the first and refuses the
other three; the rate it accepts each is the audit's table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

VARIANTS = ("gold", "vague", "partial", "wrong")
VAGUE_ANSWER = "It was one of the things we discussed earlier; I recall it came up, but the details may vary."
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class AuditQuestion:
    case_id: str
    kind: str
    question: str
    gold: str


@dataclass(frozen=True, slots=True)
class AuditItem:
    """One answer to put to the judge, and whether a sound judge accepts it."""

    question: AuditQuestion
    variant: str
    answer: str

    @property
    def should_accept(self) -> bool:
        return self.variant == "gold"

    def request(self) -> dict[str, Any]:
        """The JSON object the judge command reads, as in a run."""
        question = self.question
        return {
            "case_id": question.case_id,
            "kind": question.kind,
            "question": question.question,
            "gold": question.gold,
            "answer": self.answer,
        }


def partial_of(gold: str) -> str:
    """Half of a gold answer: a number rounded to its leading digit, else the first half of its words."""
    number = _NUMBER.search(gold)
    if number is not None:
        digits = number.group(0).replace(",", "")
        whole = digits.split(".")[0]
        rounded = whole[0] + "0" * (len(whole) - 1) if len(whole) > 1 else str(int(whole) + 1)
        return gold[: number.start()] + f"about {rounded}" + gold[number.end() :]
    words = gold.split()
    return " ".join(words[: max(1, len(words) // 2)]) + (" ..." if len(words) > 1 else " (roughly)")


def audit_items(questions: Sequence[AuditQuestion]) -> list[AuditItem]:
    """Four answers per question; the wrong one is the next question's gold that differs from this one's."""
    items = []
    for index, question in enumerate(questions):
        after = [*questions[index + 1 :], *questions[:index]]
        others = [other.gold for other in after if other.gold != question.gold]
        wrong = others[0] if others else "none of the above"
        for variant, answer in (
            ("gold", question.gold),
            ("vague", VAGUE_ANSWER),
            ("partial", partial_of(question.gold)),
            ("wrong", wrong),
        ):
            items.append(AuditItem(question, variant, answer))
    return items


def audit_table(verdicts: Sequence[tuple[AuditItem, float | None]]) -> dict[str, Any]:
    """Per variant: how many were asked, accepted and unreadable (judge errors), and the acceptance rate."""
    table: dict[str, Any] = {}
    for variant in VARIANTS:
        seen = [score for item, score in verdicts if item.variant == variant]
        readable = [score for score in seen if score is not None]
        accepted = sum(1 for score in readable if score >= 1.0)
        table[variant] = {
            "n": len(seen),
            "accepted": accepted,
            "errors": len(seen) - len(readable),
            "rate": round(accepted / len(readable), 4) if readable else None,
        }
    return table


def question_from(expected: Mapping[str, Any], question: str, case_id: str) -> AuditQuestion | None:
    """A case's gold as an audit question; None when its answer is not text a judge can read."""
    answer = expected.get("answer")
    if isinstance(answer, (dict, list)) or answer is None:
        return None
    return AuditQuestion(case_id, str(expected.get("answer_kind", "money")), question, str(answer))
