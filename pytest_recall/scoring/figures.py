"""Run figures beyond the seed grader's: outcomes, tokens, memory size, and what the control cost.

The grader reproduces the seed's arithmetic exactly, so these live apart:
they say whether a number means memory (``by_outcome``), what the run used
(tokens), and what the agent kept between sessions (``memory_bytes``).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_recall.scoring.grader import main_records
from pytest_recall.scoring.verdict import OUTCOMES


def run_figures(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``by_outcome``, token totals and the median memory size, over the runs that count (not the control)."""
    counted = main_records(records)
    by_outcome = dict.fromkeys(OUTCOMES, 0)
    for record in counted:
        outcome = record.get("outcome")
        if outcome in by_outcome:
            by_outcome[outcome] += 1
    sizes = [r["memory_bytes"] for r in counted if isinstance(r.get("memory_bytes"), int)]
    return {
        "by_outcome": by_outcome,
        "tokens_in_total": _total(counted, "tokens_in"),
        "tokens_out_total": _total(counted, "tokens_out"),
        "memory_bytes_median": statistics.median(sizes) if sizes else None,
    }


def control_figures(records: Sequence[Mapping[str, Any]], run_mode: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What the control runs cost, whether their HOME was shared with the memory runs', and whether memory leaked.

    On a run with ``--recall-mcp`` (in ``run_mode``, the run's, or in a
    record's), a control that scores above 0 found what an MCP server kept
    outside the control's fresh scope (server-memory with no
    ``MEMORY_FILE_PATH`` keeps one store for every case): ``mcp_leaked``.
    """
    controls = [r for r in records if r.get("control")]
    modes = [run_mode or {}, *(r["run_mode"] for r in records if isinstance(r.get("run_mode"), Mapping))]
    mcp_run = any(mode.get("mcp_servers") for mode in modes)
    costs = [float(r["cost_usd"]) for r in controls if isinstance(r.get("cost_usd"), (int, float))]
    homes = {str((r.get("run_mode") or {}).get("home") or r.get("run_home")) for r in records}
    return {
        "cost_usd_total": round(sum(costs), 4) if costs else None,
        "tokens_in_total": _total(controls, "tokens_in"),
        "tokens_out_total": _total(controls, "tokens_out"),
        "home_shared": "user" in homes,
        "mcp_leaked": mcp_run and any(_above_zero(r.get("score")) for r in controls),
    }


def _above_zero(score: Any) -> bool:
    return isinstance(score, (int, float)) and not isinstance(score, bool) and score > 0


def _total(records: Sequence[Mapping[str, Any]], key: str) -> int | None:
    values = [int(r[key]) for r in records if isinstance(r.get(key), int) and not isinstance(r.get(key), bool)]
    return sum(values) if values else None
