"""A record as a row of the judges table: its name, kind, built-in score and every judge's score.

Read the same way by a run with several judges (the report's ``judges``
block, :mod:`pytest_recall.reporting.judges_block`) and by ``pytest-recall
rejudge``, so that the two tables of the same answers and judges are the same.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_recall.cases import KIND_FREE
from pytest_recall.reporting.records import CaseRecord
from pytest_recall.scoring import PanelCase


def case_name(record: CaseRecord) -> str:
    """How the judges table names a record: suite/id, its epoch past the first, and a control run as such."""
    name = f"{record.suite}/{record.id}"
    if record.epoch > 1:
        name += f"[epoch{record.epoch}]"
    return name + (" (control)" if record.control else "")


def deterministic_score(record: CaseRecord) -> float | None:
    """The built-in judge's score of the answer: beside the run's judge's verdict when there was one;
    a ``free`` case has none."""
    if record.llm_judge is not None:
        value = record.llm_judge.get("deterministic_score")
    else:
        value = None if record.answer_kind == KIND_FREE else record.score
    return None if value is None else float(value)


def panel_entry(record: CaseRecord) -> tuple[str, PanelCase] | None:
    """The judge whose verdict scores and the record as a row of the judges table (every judge's score, in
    the order given, and with samples whether each judge's disagreed); None but with several judges or
    samples (--recall-judge-samples)."""
    mode = record.run_mode.get("llm_judge")
    if not isinstance(mode, Mapping) or record.llm_judge is None:
        return None
    if record.llm_judges is None and not record.llm_judge.get("samples"):
        return None
    score_by = str(mode.get("score_by"))
    verdicts = {**(record.llm_judges or {}), score_by: record.llm_judge}
    names = mode.get("judges") or {score_by: mode.get("cmd")}
    scores = {name: (verdicts.get(name) or {}).get("score") for name in names}
    flips = {name: flipped for name in names if (flipped := (verdicts.get(name) or {}).get("flipped")) is not None}
    return score_by, PanelCase(
        case_name(record), str(record.answer_kind), record.category, deterministic_score(record), scores, flips
    )
