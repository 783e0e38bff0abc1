"""``--recall-epochs-from``: which cases an earlier report shows need no repeats.

Repeats only inform where a case's outcome varies. Choosing which cases to
repeat from this run's own outcomes biases their means (a flaky case that
happened to agree keeps its lucky 0 or 1; ``bench/adaptive_epochs.py``
measures it), so the choice is read from an earlier run instead: its
outcomes are independent of this run's, every case's mean here stays an
unbiased estimate, and so does the score, whatever the allocation.

A case is settled when the earlier report ran it at least twice and it
scored the same every time; a case the report does not hold, or ran once,
is not settled (nothing says it is stable). A ``per_case`` entry that is not
a case's epochs (its suite, its id and a list of scores) makes the report
unusable for the choice, said in one line.

With ``--recall-ci-width`` the same report's per-case scores also say how
many runs each case gets (:mod:`pytest_recall.scoring.repeat_plan`).
"""

from __future__ import annotations

from typing import Any

from pytest_recall.reporting.run_report import RunReport

# (suite, case id): how a case is named across runs, whatever its node id's epoch suffix.
CaseKey = tuple[str, str]


def settled_cases(report: RunReport) -> frozenset[CaseKey]:
    """The cases ``report``'s epochs found stable: at least two runs, and one score in all of them; a ValueError
    naming the first ``per_case`` entry that is not a case's epochs."""
    settled = set()
    for index, case in enumerate(report.per_case or ()):
        scores = case.get("scores") or []
        if not (
            isinstance(case.get("suite"), str)
            and isinstance(case.get("id"), str)
            and isinstance(scores, list)
            and all(score is None or _is_number(score) for score in scores)
        ):
            raise ValueError(f"per_case[{index}] is not a case's epochs (its suite, its id and a list of scores)")
        if len(scores) >= 2 and len(set(scores)) == 1:
            settled.add((case["suite"], case["id"]))
    return frozenset(settled)


def baseline_scores(report: RunReport) -> list[tuple[CaseKey, list[float]]]:
    """Each case ``report``'s epochs scored, with its scores there (a case with none left out: it says nothing)."""
    return [
        ((str(case["suite"]), str(case["id"])), [float(score) for score in scores])
        for case in report.per_case or ()
        if (scores := [score for score in case.get("scores") or () if score is not None])
    ]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
