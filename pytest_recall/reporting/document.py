"""The run report: one JSON document, the verdict first and the case records last."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_recall.cases import strict_json
from pytest_recall.reporting.schema import report_problem
from pytest_recall.scoring.abstain import false_abstention_rate
from pytest_recall.scoring.by_workspace import by_workspace
from pytest_recall.scoring.figures import control_figures, run_figures
from pytest_recall.scoring.grader import aggregate
from pytest_recall.scoring.help_harm import help_and_harm
from pytest_recall.scoring.stats import summarize

# 2: ``run_mode`` and ``command`` are written once, at the top, and in a case only where its own differs
# (version 1 had them in each).
SCHEMA_VERSION = 2
# Keys a report holds once at the top for every case that shares the value; a reader puts them back.
SHARED_KEYS = ("run_mode", "command")


def with_shared(record: dict[str, Any], header: Mapping[str, Any]) -> dict[str, Any]:
    """A case record as it was recorded: the values it shares with its report put back (version 2 on)."""
    for key in SHARED_KEYS:
        if key not in record and key in header:
            record[key] = header[key]
    return record


def sort_records(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """A stable order that does not depend on which worker finished first."""
    return sorted(records, key=lambda r: (str(r.get("nodeid") or ""), int(r.get("epoch") or 1)))


def build_report(
    records: Sequence[Mapping[str, Any]],
    *,
    threshold: float,
    command: str | None,
    interrupted: bool = False,
    run_mode: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole report document: the verdict first, then how far to trust it, the case records last.

    ``run_mode``, the run's, is written once above the cases; a case whose own
    differs (a merge of different runs) keeps its own.
    """
    ordered = sort_records(records)
    report: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
    report.update(aggregate(ordered, threshold))
    report.update(summarize(ordered))
    report["false_abstention_rate"] = false_abstention_rate(ordered)
    report.update(run_figures(ordered))
    if report.get("control"):
        report["control"].update(control_figures(ordered))
    report["help_harm"] = help_and_harm(ordered)
    report["by_workspace"] = by_workspace(ordered)
    report["command"] = command
    report["interrupted"] = interrupted
    if run_mode is not None:
        report["run_mode"] = dict(run_mode)
    report["cases"] = list(ordered)
    return report


def load_report(path: Path) -> dict[str, Any]:
    """A report file, checked against the published schema; ValueError says in one line why not."""
    with open(path, "rb") as handle:
        try:
            data = strict_json.loads(b"".join(strict_json.bounded_lines(handle)))
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
