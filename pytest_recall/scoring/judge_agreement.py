"""How far two judges of the same answers agree: the rate, and Cohen's kappa beyond chance.

An LLM judge and the deterministic one each say pass or fail for the same
steps. Raw agreement flatters a lopsided suite (two judges that pass
everything agree 100%), so Cohen's kappa is reported beside it: the share
of the agreement that chance would not give, 1 for perfect, 0 for chance.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_recall.scoring.case_summary import CaseSummary
from pytest_recall.scoring.passing import scored_a_pass


@dataclass(frozen=True, slots=True)
class JudgedTwice:
    """One answer seen by both judges: pass (True) or fail (False) from each."""

    case: str
    kind: str
    deterministic: bool
    llm: bool


@dataclass(frozen=True, slots=True)
class Agreement:
    """Agreement over ``n`` answers; ``kappa`` is None when it is undefined (both judges constant and equal)."""

    n: int
    agreed: int
    kappa: float | None

    @property
    def rate(self) -> float | None:
        return self.agreed / self.n if self.n else None

    def as_dict(self) -> dict[str, Any]:
        rate = self.rate
        kappa = self.kappa
        return {
            "n": self.n,
            "agreed": self.agreed,
            "rate": None if rate is None else round(rate, 4),
            "kappa": None if kappa is None else round(kappa, 4),
        }


def cohens_kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa for two raters of a yes/no label; None for no pairs or when chance agreement is 1."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(1 for first, second in pairs if first == second) / n
    first_yes = sum(1 for first, _ in pairs if first) / n
    second_yes = sum(1 for _, second in pairs if second) / n
    expected = first_yes * second_yes + (1 - first_yes) * (1 - second_yes)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def agreement(judged: Iterable[JudgedTwice]) -> Agreement:
    pairs = [(item.deterministic, item.llm) for item in judged]
    return Agreement(len(pairs), sum(1 for first, second in pairs if first == second), cohens_kappa(pairs))


def agreement_report(judged: Sequence[JudgedTwice]) -> dict[str, Any]:
    """Overall and per kind, and every case where the two judges disagree, for the report and the page."""
    by_kind: dict[str, list[JudgedTwice]] = {}
    for item in judged:
        by_kind.setdefault(item.kind, []).append(item)
    return {
        **agreement(judged).as_dict(),
        "by_kind": {kind: agreement(items).as_dict() for kind, items in sorted(by_kind.items())},
        "disagreements": [
            {"case": item.case, "kind": item.kind, "deterministic": item.deterministic, "llm": item.llm}
            for item in judged
            if item.deterministic != item.llm
        ],
    }


def judged_twice_from(summaries: Iterable[CaseSummary]) -> list[JudgedTwice]:
    """The records whose last answer both judges scored: the built-in judge's score and the LLM judge's.

    A record's ``llm_judge`` carries the built-in score as ``deterministic_score``
    (the record's own score may be the LLM judge's, by the user's choice); a
    ``free`` case has none, and is not compared. An epoch and a control run
    are named as such, since each is an answer of its own.
    """
    judged = []
    for record in summaries:
        llm = record.llm_judge
        if not isinstance(llm, Mapping) or llm.get("score") is None:
            continue
        deterministic = llm.get("deterministic_score", record.score)
        if deterministic is None:
            continue
        name = f"{record.suite}/{record.id}"
        if int(record.epoch or 1) > 1:
            name += f"[epoch{record.epoch}]"
        judged.append(
            JudgedTwice(
                case=name + (" (control)" if record.control else ""),
                kind=str(record.answer_kind or "unknown"),
                deterministic=scored_a_pass(float(deterministic)),
                llm=scored_a_pass(float(llm["score"])),
            )
        )
    return judged
