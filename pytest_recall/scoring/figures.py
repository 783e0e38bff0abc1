"""Run figures beyond the seed grader's: outcomes, tokens, memory size, and what the control cost.

The grader reproduces the seed's arithmetic exactly, so these live apart:
they say whether a number means memory (``by_outcome``), what the run used
(tokens), and what the agent kept between sessions (``memory_bytes``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_recall.scoring.case_summary import CaseSummary
from pytest_recall.scoring.grader import main_records
from pytest_recall.scoring.memory_use import memory_figures
from pytest_recall.scoring.verdict import OUTCOMES


def run_figures(summaries: Sequence[CaseSummary]) -> dict[str, Any]:
    """``by_outcome``, token totals and the median memory size, over the runs that count (not the control)."""
    counted = main_records(summaries)
    by_outcome = dict.fromkeys(OUTCOMES, 0)
    for record in counted:
        outcome = record.outcome
        if outcome in by_outcome:
            by_outcome[outcome] += 1
    sizes = [r.memory_bytes for r in counted if isinstance(r.memory_bytes, int)]
    return {
        "by_outcome": by_outcome,
        "tokens_in_total": _total(r.tokens_in for r in counted),
        "tokens_out_total": _total(r.tokens_out for r in counted),
        "memory_bytes_median": statistics.median(sizes) if sizes else None,
    }


def control_figures(summaries: Sequence[CaseSummary], run_mode: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What the control runs cost, whether their HOME was shared with the memory runs', and whether memory leaked.

    On a run with ``--recall-mcp`` (in ``run_mode``, the run's, or in a
    record's), a control that scores above 0 found what an MCP server kept
    outside the control's fresh scope (server-memory with no
    ``MEMORY_FILE_PATH`` keeps one store for every case): ``mcp_leaked``.
    """
    controls = [r for r in summaries if r.control]
    mcp_run = bool((run_mode or {}).get("mcp_servers"))
    costs = [float(r.cost_usd) for r in controls if isinstance(r.cost_usd, (int, float))]
    homes = {str(r.run_home) for r in summaries}
    return {
        "cost_usd_total": round(sum(costs), 4) if costs else None,
        "tokens_in_total": _total(r.tokens_in for r in controls),
        "tokens_out_total": _total(r.tokens_out for r in controls),
        "home_shared": "user" in homes,
        "mcp_leaked": mcp_run and any(_above_zero(r.score) for r in controls),
    }


def _above_zero(score: Any) -> bool:
    return isinstance(score, (int, float)) and not isinstance(score, bool) and score > 0


def _total(counts: Iterable[int | None]) -> int | None:
    values = [int(n) for n in counts if isinstance(n, int) and not isinstance(n, bool)]
    return sum(values) if values else None


def memory_section(summaries: Iterable[CaseSummary]) -> dict[str, Any] | None:
    """The report's ``memory`` block from the ``memory_use`` groups of its cases; None on a run with no tapped
    server."""
    cases = [
        (use, _score(summary.score), summary.control is True, summary.category)
        for summary in summaries
        if (use := summary.memory_use) is not None and summary.answered
    ]
    return memory_figures(cases) if cases else None


def _score(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
