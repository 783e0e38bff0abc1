"""Figures per workspace mode: ``fresh`` measures the memory an agent keeps itself, ``carry`` memory in the repo.

A run may mix both (the coding suite's ``carry`` category does), and one
mean over both would blur what each measures. Records without a workspace
are left out; a run without any gives an empty mapping.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_recall.scoring.case_summary import CaseSummary
from pytest_recall.scoring.stats import record_score, rounded


def by_workspace(summaries: Sequence[CaseSummary]) -> dict[str, Any]:
    """Mode -> mean score, scored records and the mean per category, for the main (non-control) records."""
    scores: dict[str, dict[str, list[float]]] = {}
    for record in summaries:
        mode = record.workspace
        score = record_score(record)
        if mode is None or record.control or score is None:
            continue
        scores.setdefault(str(mode), {}).setdefault(str(record.category), []).append(score)
    figures: dict[str, Any] = {}
    for mode in sorted(scores):
        every = [s for category in scores[mode].values() for s in category]
        figures[mode] = {
            "score": rounded(sum(every) / len(every)),
            "n": len(every),
            "by_category": {c: rounded(sum(s) / len(s)) for c, s in sorted(scores[mode].items())},
        }
    return figures
