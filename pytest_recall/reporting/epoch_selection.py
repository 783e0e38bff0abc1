"""``--recall-epochs-from``: which cases an earlier report shows need no repeats.

Repeats only inform where a case's outcome varies. Choosing which cases to
repeat from this run's own outcomes biases their means (a flaky case that
happened to agree keeps its lucky 0 or 1; ``bench/adaptive_epochs.py``
measures it), so the choice is read from an earlier run instead: its
outcomes are independent of this run's, every case's mean here stays an
unbiased estimate, and so does the score, whatever the allocation.

A case is settled when the earlier report ran it at least twice and it
scored the same every time; a case the report does not hold, or ran once,
is not settled (nothing says it is stable).
"""

from __future__ import annotations

from pytest_recall.reporting.run_report import RunReport

# (suite, case id): how a case is named across runs, whatever its node id's epoch suffix.
CaseKey = tuple[str, str]


def settled_cases(report: RunReport) -> frozenset[CaseKey]:
    """The cases ``report``'s epochs found stable: at least two runs, and one score in all of them."""
    settled = set()
    for case in report.per_case or ():
        scores = case.get("scores") or ()
        if len(scores) >= 2 and len(set(scores)) == 1:
            settled.add((str(case["suite"]), str(case["id"])))
    return frozenset(settled)
