"""What a run will cost before it starts: the sessions it will start, and at an earlier report's rate, money and time.

LongMemEval_s through a paid CLI is about 25,000 sessions, so the count is
worth seeing before the first one: ``pytest --collect-only`` prints it, and
with ``--recall-estimate-from=REPORT`` the expected cost and time at that
report's median per session. A case group's ingest counts once per epoch.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from pytest_recall.reporting.run_report import RunReport


@dataclass(frozen=True, slots=True)
class PlannedRun:
    """One item as the count needs it: its steps, its group and ingest, whether it is a control, its epoch."""

    steps: int
    group: str | None
    ingest_steps: int
    control: bool
    epoch: int


def planned_sessions(runs: Iterable[PlannedRun]) -> int:
    """Sessions the runs start: a control one, a grouped case its own steps plus its group's ingest once per epoch."""
    total = 0
    ingested: set[tuple[str, int]] = set()
    for run in runs:
        if run.control:
            total += 1
        elif run.group is None:
            total += run.steps
        else:
            total += run.steps - run.ingest_steps
            if (run.group, run.epoch) not in ingested:
                ingested.add((run.group, run.epoch))
                total += run.ingest_steps
    return total


@dataclass(frozen=True, slots=True)
class SessionRates:
    """Medians per session of an earlier report, over the sessions that reported each figure."""

    cost_usd: float | None
    duration_s: float | None
    sessions: int


def session_rates(report: RunReport) -> SessionRates:
    costs, durations = [], []
    for record in report.cases or ():
        for step in record.get("steps") or ():
            if isinstance(step.get("cost_usd"), (int, float)):
                costs.append(float(step["cost_usd"]))
            if isinstance(step.get("duration_s"), (int, float)):
                durations.append(float(step["duration_s"]))
    return SessionRates(
        statistics.median(costs) if costs else None,
        statistics.median(durations) if durations else None,
        max(len(costs), len(durations)),
    )


def plan_lines(sessions: int, cases: int, rates: SessionRates | None, source: str | None) -> list[str]:
    lines = [f"recall: this run will start {sessions} agent sessions for {cases} case runs"]
    if rates is None:
        return lines
    if rates.sessions == 0:
        return [*lines, f"recall: {source} holds no session with a cost or duration to estimate from"]
    cost = (
        f"${sessions * rates.cost_usd:,.2f} (median ${rates.cost_usd:.4f} per session)"
        if rates.cost_usd is not None
        else "unknown (that report's agent reported no cost)"
    )
    hours = sessions * rates.duration_s / 3600 if rates.duration_s is not None else None
    time = f"{hours:,.1f} h of sessions (median {rates.duration_s:.1f} s each)" if hours is not None else "unknown"
    return [
        *lines,
        f"recall: at the rates of {source} ({rates.sessions} sessions): expected cost {cost}; expected time {time}, "
        "divided by --recall-concurrency and -n",
    ]
