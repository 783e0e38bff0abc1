"""Several judges in one run (``--recall-judge-cmd`` given more than once): the report's ``judges`` block.

Each judged record keeps the scoring judge's verdict in ``llm_judge`` (so
old readers, merge, resume and compare read it as before) and the other
judges' in ``llm_judges``; the run mode names them all, in the order given,
and the one whose verdict is the score. The block is the judges table of
:mod:`pytest_recall.scoring.judge_panel`, the very one ``pytest-recall
rejudge`` prints, so a run's figures and a re-judging's can be set side by side;
each record's row of it is :mod:`pytest_recall.reporting.judge_rows`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pytest_recall.reporting.run_report import RunReport
from pytest_recall.scoring import PanelCase, format_panel, panel_table

# The terminal names this many flipping cases; the report and the page list them all.
SHOWN_FLIPS = 5


def judges_block(entries: Iterable[tuple[str, PanelCase] | None]) -> dict[str, Any]:
    """The report's ``judges`` block from each record's :func:`panel_entry`, or nothing with one judge (or none)."""
    given = [entry for entry in entries if entry is not None]
    if not given:
        return {}
    score_by, cases = given[0][0], [case for _, case in given]
    return {"judges": {"score_by": score_by, "table": panel_table(cases, list(cases[0].scores))}}


def judges_summary_lines(report: RunReport) -> list[str]:
    """The judges table in the terminal, its flipping cases cut short."""
    block = report.judges
    if not isinstance(block, Mapping):
        return []
    heading, *rows = judges_table_lines(block)
    return ["  " + heading, *rows]


def judges_table_lines(block: Mapping[str, Any]) -> list[str]:
    """A ``judges`` block as the run's summary shows it, its heading first: ``compare`` prints each run's so."""
    table = block["table"]
    return [
        f"{len(table['judges'])} judges, score by judge {block['score_by']}:",
        *format_panel(table, shown_flips=SHOWN_FLIPS),
    ]
