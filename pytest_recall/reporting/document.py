"""The run report: one JSON document, the verdict first and the case records last."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_recall.cases import bounded_lines, strict_loads
from pytest_recall.reporting.files import write_json_atomic
from pytest_recall.reporting.judge_section import judge_section
from pytest_recall.reporting.judges_block import judges_block
from pytest_recall.reporting.run_report import RunEnding, RunReport
from pytest_recall.reporting.schema import report_problem, report_schema
from pytest_recall.scoring import (
    CaseSummary,
    aggregate,
    by_workspace,
    control_figures,
    false_abstention_rate,
    help_and_harm,
    memory_section,
    run_figures,
    summarize,
)

# 2: ``run_mode`` and ``command`` are written once, at the top, and in a case only where its own differs;
# a step leaves out a field equal to the report's ``step_defaults`` (version 1 had every field in each).
SCHEMA_VERSION = 2
# Keys a report holds once at the top for every case that shares the value; a reader puts them back.
SHARED_KEYS = ("run_mode", "command")
# The top-level key of the values a step has unless it says otherwise, and the values this version writes:
# what a session that ended plainly, with no token counts and no memory listing, records.
STEP_DEFAULTS_KEY = "step_defaults"
STEP_DEFAULTS: Mapping[str, Any] = {
    "signal": None,
    "timed_out": False,
    "truncated": False,
    "killed_leftovers": 0,
    "tokens_in": None,
    "tokens_out": None,
    "memory": None,
    "memory_files": None,
    "memory_bytes": None,
}


@functools.cache
def step_order() -> tuple[str, ...]:
    """A step's fields in the schema's order, which is the order a record is made with: a field put back goes there."""
    return tuple(report_schema()["$defs"]["step"]["properties"])


def with_shared(row: dict[str, Any], header: Mapping[str, Any], *, ordered: bool = True) -> dict[str, Any]:
    """A case record as it was recorded: what it shares with its report put back (version 2 on).

    A step's fields go back to their places; where only the values matter
    (a pass over every case of a report to check and sum it), ``ordered=False``
    appends them, which costs a third as much.
    """
    for key in SHARED_KEYS:
        if key not in row and key in header:
            row[key] = header[key]
    defaults = header.get(STEP_DEFAULTS_KEY)
    steps = row.get("steps")
    if isinstance(defaults, Mapping) and defaults and isinstance(steps, list):
        if ordered:
            row["steps"] = [_step_with_defaults(step, defaults) for step in steps]
        else:
            for step in steps:
                if isinstance(step, dict):
                    for key, value in defaults.items():
                        step.setdefault(key, value)
    return row


def _step_with_defaults(step: Any, defaults: Mapping[str, Any]) -> Any:
    if not isinstance(step, dict) or all(key in step for key in defaults):
        return step
    whole = {**defaults, **step}
    placed = {key: whole.pop(key) for key in step_order() if key in whole}
    placed.update(whole)
    return placed


def _same(value: Any, default: Any) -> bool:
    """Equal and of one type: 0 is no stand-in for false, nor 1.0 for 1."""
    return type(value) is type(default) and value == default


def case_compactor(report: RunReport) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    """How a case of ``report`` is written: without what :func:`with_shared` puts back from the report's top."""
    tops = {key: value for key in SHARED_KEYS if (value := getattr(report, key)) is not None}
    defaults = report.step_defaults or {}

    def compact(row: Mapping[str, Any]) -> Mapping[str, Any]:
        kept = {key: value for key, value in row.items() if key not in tops or value != tops[key]}
        steps = row.get("steps")
        if defaults and isinstance(steps, list):
            kept["steps"] = [
                {key: value for key, value in step.items() if key not in defaults or not _same(value, defaults[key])}
                if isinstance(step, Mapping)
                else step
                for step in steps
            ]
        return kept

    return compact


def write_report(path: Path, report: RunReport) -> None:
    """A report file, one case a line, each without what it shares with the report (see :func:`case_compactor`)."""
    write_json_atomic(path, report.as_json(), line_each="cases", compact=case_compactor(report))


def report_order(summaries: Iterable[CaseSummary]) -> list[CaseSummary]:
    """A stable order that does not depend on which worker finished first."""
    return sorted(summaries, key=report_key)


def report_key(summary: CaseSummary) -> tuple[str, int]:
    """A case run's place in the report: by node id, then epoch."""
    return (str(summary.nodeid or ""), int(summary.epoch or 1))


def build_report(
    summaries: Sequence[CaseSummary],
    *,
    threshold: float,
    command: str | None,
    interrupted: bool = False,
    run_mode: Mapping[str, Any] | None = None,
    protocol: Mapping[str, Any] | None = None,
    ending: RunEnding | None = None,
) -> RunReport:
    """The whole report: the verdict first, then how far to trust it, the case records last.

    ``run_mode``, the run's, is written once above the cases; a case whose own
    differs (a merge of different runs) keeps its own. So are the values a
    step has unless it says otherwise (``step_defaults``). ``protocol``, what the
    number depends on (:mod:`pytest_recall.reporting.protocol`), comes right after the version.
    ``cases`` holds the summaries in report order, for the caller to put each case's record in its place.
    ``ending`` is what the run's end knows beside the summaries (collection errors, the stop gate...).
    """
    ordered = report_order(summaries)
    ending = ending or RunEnding()
    stop_decision = ending.stop.get("decision") if ending.stop is not None else None
    verdict = aggregate(ordered, threshold, collection_errors=ending.n_collection_errors, stop_decision=stop_decision)
    statistics = summarize(ordered)
    control = statistics["control"]
    if control:
        control.update(control_figures(ordered, run_mode))
    figures = run_figures(ordered)
    return RunReport(
        schema_version=SCHEMA_VERSION,
        protocol=dict(protocol) if protocol is not None else None,
        **verdict,
        **statistics,
        false_abstention_rate=false_abstention_rate(ordered),
        **figures,
        memory=memory_section(ordered),
        help_harm=help_and_harm(ordered),
        by_workspace=by_workspace(ordered),
        **judge_section(ordered),
        **judges_block(entry.judge_panel for entry in ordered),
        command=command,
        interrupted=interrupted,
        run_mode=dict(run_mode) if run_mode is not None else None,
        step_defaults=dict(STEP_DEFAULTS),
        cases=ordered,
        n_planned=ending.n_planned,
        max_cost=ending.max_cost,
        n_collection_errors=ending.n_collection_errors or None,
        stop=ending.stop,
        rate_limits=ending.rate_limits.block(figures["by_outcome"]) if ending.rate_limits is not None else None,
    )


def load_report(path: Path) -> RunReport:
    """A report file, checked against the published schema; ValueError says in one line why not."""
    return RunReport.from_json(load_report_json(path))


def load_report_json(path: Path) -> dict[str, Any]:
    """A report file's JSON document, checked against the published schema, each case as it was recorded."""
    with open(path, "rb") as handle:
        try:
            data = strict_loads(b"".join(bounded_lines(handle)))
        except MemoryError:
            raise ValueError(f"{path}: too large to read in the memory there is") from None
        except ValueError as exc:
            raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or "cases" not in data:
        raise ValueError(f"{path}: not a pytest-recall report (no 'cases' list)")
    problem = report_problem(data)
    if problem is not None:
        raise ValueError(f"{path}: not a pytest-recall report: {problem}")
    for record in data["cases"]:
        with_shared(record, data)
    return data
