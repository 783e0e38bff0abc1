"""Answers a judge should refuse, made from a suite's gold: how lenient is a judge command?

LLM judges are known to accept vague answers, and answers written to please
them. ``pytest-recall judge-audit`` asks the judge about nine answers per
question, each made from the gold alone: the gold itself, a vague answer that
commits to nothing, a partial one (half the gold, or a number rounded away), a
wrong one (another question's gold), four that game the judge
(:mod:`pytest_recall.scoring.audit_variants`: a shotgun of values, the gold
negated, a wrong answer that claims to be correct, a hedge) and the gold
reformatted. A sound judge accepts the gold and its reformatting and refuses
the rest; the rate it accepts each is the audit's table, and a judge that
accepts a gaming answer more often than a bound is flagged, since its scores
can be raised by answers that know nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_recall.scoring.audit_variants import (
    claims_correct_of,
    decoys_of,
    hedge_of,
    negated_of,
    reformatted_of,
    shotgun_of,
)
from pytest_recall.scoring.passing import scored_a_pass

GAMING = ("shotgun", "negated", "claims_correct", "hedge")
VARIANTS = ("gold", "vague", "partial", "wrong", *GAMING, "reformatted")
ACCEPTABLE = frozenset({"gold", "reformatted"})
# The share of a gaming variant a judge may accept before it is flagged: a slip now and then, not a habit.
GAMING_BOUND = 0.10
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
        return self.variant in ACCEPTABLE

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
    """Nine answers per question, in VARIANTS order; the wrong one is the next question's gold unlike this one's."""
    items: list[AuditItem] = []
    for index, question in enumerate(questions):
        after = [*questions[index + 1 :], *questions[:index]]
        others = [other.gold for other in after if other.gold != question.gold]
        wrong = others[0] if others else "none of the above"
        gold = question.gold
        decoys = decoys_of(gold, others)
        answers = (
            gold,
            VAGUE_ANSWER,
            partial_of(gold),
            wrong,
            shotgun_of(gold, decoys),
            negated_of(gold),
            claims_correct_of(decoys[0]),
            hedge_of(gold, decoys[0]),
            reformatted_of(gold),
        )
        items.extend(AuditItem(question, variant, answer) for variant, answer in zip(VARIANTS, answers, strict=True))
    return items


def audit_table(verdicts: Sequence[tuple[AuditItem, float | None]], bound: float = GAMING_BOUND) -> dict[str, Any]:
    """Per variant: asked, accepted, unreadable (judge errors), the acceptance rate, the rate expected of a sound
    judge, and whether a gaming variant's rate is over ``bound`` (flagged)."""
    table: dict[str, Any] = {}
    for variant in VARIANTS:
        seen = [score for item, score in verdicts if item.variant == variant]
        readable = [score for score in seen if score is not None]
        accepted = sum(1 for score in readable if scored_a_pass(score))
        rate = round(accepted / len(readable), 4) if readable else None
        table[variant] = {
            "n": len(seen),
            "accepted": accepted,
            "errors": len(seen) - len(readable),
            "rate": rate,
            "expected": 1.0 if variant in ACCEPTABLE else 0.0,
            "flagged": variant in GAMING and rate is not None and rate > bound,
        }
    return table


def flagged(table: Mapping[str, Any]) -> list[str]:
    """The gaming variants the judge accepted above the bound: the answers that would raise its scores."""
    return [variant for variant, row in table.items() if row["flagged"]]


def question_from(expected: Mapping[str, Any], question: str, case_id: str) -> AuditQuestion | None:
    """A case's gold as an audit question; None when its answer is not text a judge can read."""
    answer = expected.get("answer")
    if isinstance(answer, (dict, list)) or answer is None or not str(answer).strip():
        return None
    return AuditQuestion(case_id, str(expected.get("answer_kind", "money")), question, str(answer))


def audit_lines(table: Mapping[str, Any], bound: float) -> list[str]:
    """The table as printed: one row per variant, the rate a sound judge has beside it, and the verdict."""
    lines = [f"  {'answer':<14} {'asked':>6} {'accepted':>9} {'errors':>7}  {'rate':>4}  sound"]
    for variant, row in table.items():
        rate = "-" if row["rate"] is None else f"{row['rate']:.2f}"
        counts = f"{row['n']:>6} {row['accepted']:>9} {row['errors']:>7}"
        mark = "  FLAGGED" if row["flagged"] else ""
        lines.append(f"  {variant:<14} {counts}  {rate:>4}  {row['expected']:.2f}{mark}")
    gamed = flagged(table)
    if gamed:
        lines.append(f"  flagged: accepts {', '.join(gamed)} above {bound:.2f}; its scores can be gamed")
    else:
        lines.append(f"  no gaming answer accepted above {bound:.2f}")
    return lines
