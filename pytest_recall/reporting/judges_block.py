"""Several judges in one run (``--recall-judge-cmd`` given more than once): the report's ``judges`` block.

Each judged record keeps the scoring judge's verdict in ``llm_judge`` (so
old readers, merge, resume and compare read it as before) and the other
judges' in ``llm_judges``; the run mode names them all, in the order given,
and the one whose verdict is the score. The block is the judges table of
:mod:`pytest_recall.scoring.judge_panel`, the very one ``pytest-recall
rejudge`` prints, so a run's figures and a re-judging's can be set side by side.
Case names and the built-in score are read here for both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pytest_recall.cases.answer_forms import KIND_FREE
from pytest_recall.scoring.judge_panel import PanelCase, format_panel, panel_table

# The terminal names this many flipping cases; the report and the page list them all.
SHOWN_FLIPS = 5


def case_name(record: Mapping[str, Any]) -> str:
    """How the judges table names a record: suite/id, its epoch past the first, and a control run as such."""
    name = f"{record.get('suite')}/{record.get('id')}"
    if (record.get("epoch") or 1) > 1:
        name += f"[epoch{record['epoch']}]"
    return name + (" (control)" if record.get("control") else "")


def deterministic_score(record: Mapping[str, Any]) -> float | None:
    """The built-in judge's score of the answer: beside the run's judge's verdict when there was one;
    a ``free`` case has none."""
    judged = record.get("llm_judge")
    if isinstance(judged, Mapping):
        value = judged.get("deterministic_score")
    else:
        value = None if record.get("answer_kind") == KIND_FREE else record.get("score")
    return None if value is None else float(value)


def judge_scores(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """Every judge's score of a record in the order given, and which judge scores; None with one judge."""
    mode = (record.get("run_mode") or {}).get("llm_judge")
    others, scoring = record.get("llm_judges"), record.get("llm_judge")
    if not isinstance(mode, Mapping) or not isinstance(others, Mapping) or not isinstance(scoring, Mapping):
        return None
    score_by = mode.get("score_by")
    verdicts = {**others, score_by: scoring}
    scores = {name: (verdicts.get(name) or {}).get("score") for name in mode.get("judges") or {}}
    return {"score_by": score_by, "scores": scores}


def judges_block(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The report's ``judges`` block, or nothing for a run with one judge (or none)."""
    cases, score_by, names = [], None, []
    for record in records:
        given = record.get("judge_scores") if "judge_scores" in record else judge_scores(record)
        if not isinstance(given, Mapping):
            continue
        score_by, names = given["score_by"], list(given["scores"])
        cases.append(
            PanelCase(
                case_name(record),
                str(record.get("answer_kind")),
                record.get("category"),
                deterministic_score(record),
                given["scores"],
            )
        )
    if not cases:
        return {}
    return {"judges": {"score_by": score_by, "table": panel_table(cases, names)}}


def judges_summary_lines(report: Mapping[str, Any]) -> list[str]:
    """The judges table in the terminal, its flipping cases cut short."""
    block = report.get("judges")
    if not isinstance(block, Mapping):
        return []
    table = block["table"]
    lines = [f"  {len(table['judges'])} judges, score by judge {block['score_by']}:"]
    lines += format_panel(table, shown_flips=SHOWN_FLIPS)
    return lines
