"""Merging reports of shards (or of resumed runs) into the report of one run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_recall.reporting.document import build_report


def merge_reports(reports: Sequence[Mapping[str, Any]], *, threshold: float | None = None) -> dict[str, Any]:
    """One report from many, graded from the raw case records again.

    Medians and percentiles cannot be averaged; they are recomputed from
    every case's duration. A case present in several reports (a shard run
    twice) keeps its last record.
    """
    if not reports:
        raise ValueError("nothing to merge: give at least one report")
    by_node: dict[tuple[Any, Any, Any], Mapping[str, Any]] = {}
    for report in reports:
        for record in report.get("cases", []):
            by_node[(record.get("nodeid"), record.get("epoch"), record.get("control"))] = record
    commands = {report.get("command") for report in reports}
    pass_mark = threshold if threshold is not None else float(reports[0].get("threshold", 0.5))
    return build_report(
        list(by_node.values()),
        threshold=pass_mark,
        command=commands.pop() if len(commands) == 1 else None,
        interrupted=any(bool(report.get("interrupted")) for report in reports),
    )


def merged_exit_status(merged: Mapping[str, Any], gate: str) -> int:
    """The exit status a single run with these records would have had under ``--recall-gate``.

    An interrupted shard leaves the merged run without a verdict (2, as pytest's
    interrupt). Under ``cases`` any case that did not score 1.0 (an error or a run
    without a score included) fails it, as it fails pytest; controls never fail.
    Under ``score`` the merged verdict alone decides.
    """
    if merged.get("interrupted"):
        return 2
    if gate == "score":
        return 0 if merged["passed"] else 1
    failed = [r for r in merged["cases"] if not r.get("control") and (r.get("score") is None or r["score"] < 1.0)]
    return 1 if failed else 0
