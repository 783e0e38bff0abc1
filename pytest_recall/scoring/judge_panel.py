"""How much a score depends on its judge: several judges' verdicts on the same stored answers, side by side.

Pure arithmetic over pass/fail verdicts, no I/O. Each judge gets its score
with a Wilson interval over the answers it judged (a judge error is counted
apart, never as a fail); the built-in judge's score over the same answers
stands beside them. Pairs of judges get their agreement and Cohen's kappa,
three or more Fleiss' kappa, and the table names the spread (highest score
minus lowest) and every answer on which the judges do not all agree: the
answers whose verdict is the judge's choice, not the agent's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from pytest_recall.scoring.judge_agreement import cohens_kappa
from pytest_recall.scoring.passing import scored_a_pass
from pytest_recall.scoring.stats import wilson_interval


@dataclass(frozen=True, slots=True)
class PanelCase:
    """One stored answer: its name, kind and category, the built-in verdict, each judge's score
    (None for a judge error), and, for a judge asked several times, whether its samples disagreed."""

    case: str
    kind: str
    category: str | None
    deterministic: float | None
    scores: Mapping[str, float | None]
    sample_flips: Mapping[str, bool] = field(default_factory=dict)


def sample_majority(scores: Sequence[float | None]) -> tuple[float | None, bool | None]:
    """One verdict from a judge's samples of one answer, and whether they disagree: a pass when more than half of
    the samples that gave a verdict passed, so a tie is a fail (a judge that cannot make up its mind has not
    accepted the answer); None when no sample gave one. ``flipped`` is None with fewer than two to compare."""
    passes = [scored_a_pass(score) for score in scores if score is not None]
    majority = (1.0 if sum(passes) * 2 > len(passes) else 0.0) if passes else None
    return majority, (len(set(passes)) > 1 if len(passes) >= 2 else None)


def majority_reason(scores: Sequence[float | None]) -> str:
    """How a majority of samples came about, in words: passes, fails and judge errors."""
    passes = sum(1 for score in scores if score is not None and scored_a_pass(score))
    fails = sum(1 for score in scores if score is not None and not scored_a_pass(score))
    errors = len(scores) - passes - fails
    return f"majority of {len(scores)} samples: {passes} pass, {fails} fail" + (
        f", {errors} judge errors" if errors else ""
    )


def _score_row(scores: Sequence[float | None]) -> dict[str, Any]:
    """Passes over the judged answers with their 95% interval; errors said apart."""
    judged = [score for score in scores if score is not None]
    passed = sum(1 for score in judged if scored_a_pass(score))
    low, high = wilson_interval(passed, len(judged))
    return {
        "n": len(judged),
        "passed": passed,
        "errors": len(scores) - len(judged),
        "score": round(passed / len(judged), 4) if judged else None,
        "interval": [round(low, 4), round(high, 4)],
    }


def fleiss_kappa(ratings: Sequence[Sequence[bool]]) -> float | None:
    """Fleiss' kappa for a yes/no label, each answer rated by the same number (two or more) of judges;
    None for no answers or when every verdict is the same (chance agreement is then 1)."""
    if not ratings or len(ratings[0]) < 2:
        return None
    raters = len(ratings[0])
    yes_share = sum(sum(row) for row in ratings) / (len(ratings) * raters)
    chance = yes_share**2 + (1 - yes_share) ** 2
    if chance >= 1.0:
        return None
    observed = sum(
        (sum(row) ** 2 + (raters - sum(row)) ** 2 - raters) / (raters * (raters - 1)) for row in ratings
    ) / len(ratings)
    return (observed - chance) / (1 - chance)


def _verdicts(case: PanelCase, judges: Sequence[str]) -> dict[str, bool]:
    """Pass or fail from each judge that gave a verdict on the case."""
    return {judge: scored_a_pass(score) for judge in judges if (score := case.scores.get(judge)) is not None}


def _pair_row(cases: Sequence[PanelCase], first: str, second: str) -> dict[str, Any]:
    pairs = [
        (scored_a_pass(a), scored_a_pass(b))
        for case in cases
        if (a := case.scores.get(first)) is not None and (b := case.scores.get(second)) is not None
    ]
    agreed = sum(1 for one, other in pairs if one == other)
    kappa = cohens_kappa(pairs)
    return {
        "judges": [first, second],
        "n": len(pairs),
        "agreed": agreed,
        "rate": round(agreed / len(pairs), 4) if pairs else None,
        "kappa": None if kappa is None else round(kappa, 4),
    }


def _by(cases: Sequence[PanelCase], judges: Sequence[str], field: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[PanelCase]] = {}
    for case in cases:
        groups.setdefault(str(getattr(case, field) or "-"), []).append(case)
    return {
        name: {judge: _score_row([case.scores.get(judge) for case in members])["score"] for judge in judges}
        for name, members in sorted(groups.items())
    }


def self_consistency(cases: Sequence[PanelCase], judges: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per judge asked several times per answer: of the answers with two or more verdicts among its samples,
    how many got both pass and fail (its flip rate); a judge asked once has no entry."""
    rows = {}
    for judge in judges:
        flips = [case.sample_flips[judge] for case in cases if judge in case.sample_flips]
        if flips:
            rows[judge] = {"n": len(flips), "flipped": sum(flips), "flip_rate": round(sum(flips) / len(flips), 4)}
    return rows


def panel_table(cases: Sequence[PanelCase], judges: Sequence[str]) -> dict[str, Any]:
    """The judges table: per judge, the built-in judge, pairs, Fleiss' kappa, spread, by kind and category,
    the answers that flip between judges, and (with samples) each judge's flips against itself."""
    per_judge = {judge: _score_row([case.scores.get(judge) for case in cases]) for judge in judges}
    scores = [row["score"] for row in per_judge.values() if row["score"] is not None]
    verdicts = [(case, _verdicts(case, judges)) for case in cases]
    all_judged = [list(said.values()) for _, said in verdicts if len(said) == len(judges)]
    fleiss = fleiss_kappa(all_judged) if len(judges) >= 3 else None
    flips = [
        {"case": case.case, "kind": case.kind, "verdicts": said}
        for case, said in verdicts
        if len(set(said.values())) > 1
    ]
    return {
        "judges": per_judge,
        # A free case has no built-in judge: it is left out of that row, not counted as an error.
        "deterministic": _score_row([case.deterministic for case in cases if case.deterministic is not None]),
        "pairs": [_pair_row(cases, first, second) for first, second in combinations(judges, 2)],
        "fleiss_kappa": None if fleiss is None else round(fleiss, 4),
        "spread": round(max(scores) - min(scores), 4) if len(scores) >= 2 else None,
        "by_kind": _by(cases, judges, "kind"),
        "by_category": _by(cases, judges, "category"),
        "flips": flips,
    } | ({"self_consistency": consistency} if (consistency := self_consistency(cases, judges)) else {})


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_panel(table: Mapping[str, Any], *, shown_flips: int | None = None) -> list[str]:
    """The judges table as terminal lines; past ``shown_flips`` flipping cases, only how many more."""
    lines = [f"  {'judge':<16} {'n':>5} {'passed':>7} {'errors':>7}  score  95% interval"]
    rows = [*table["judges"].items(), ("(built-in)", table["deterministic"])]
    for name, row in rows:
        low, high = row["interval"]
        lines.append(
            f"  {name:<16} {row['n']:>5} {row['passed']:>7} {row['errors']:>7}  {_cell(row['score']):>5}"
            f"  [{low:.2f}, {high:.2f}]"
        )
    for pair in table["pairs"]:
        first, second = pair["judges"]
        lines.append(
            f"  {first} vs {second}: agree {_cell(pair['rate'])} on {pair['n']}, Cohen's kappa {_cell(pair['kappa'])}"
        )
    if table["fleiss_kappa"] is not None:
        lines.append(f"  Fleiss' kappa: {_cell(table['fleiss_kappa'])}")
    lines.append(f"  spread (highest score - lowest): {_cell(table['spread'])}")
    for judge, row in (table.get("self_consistency") or {}).items():
        lines.append(
            f"  {judge} against itself: {row['flipped']} of {row['n']} answers flip between samples, "
            f"flip rate {_cell(row['flip_rate'])}"
        )
    flips = table["flips"]
    lines.append(f"  flips between judges: {len(flips)}")
    for flip in flips[:shown_flips]:
        said = ", ".join(f"{judge} {'pass' if passed else 'fail'}" for judge, passed in flip["verdicts"].items())
        lines.append(f"    {flip['case']}: {said}")
    if shown_flips is not None and len(flips) > shown_flips:
        lines.append(f"    ... and {len(flips) - shown_flips} more (see the report)")
    return lines
