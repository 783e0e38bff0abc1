"""Merging reports of shards (or of resumed runs) into the report of one run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pytest_recall.reporting.document import build_report, load_report, report_key
from pytest_recall.reporting.protocol import PROTOCOL_KEY, protocol_differences, rehashed, without_cases_hash
from pytest_recall.reporting.report_file import FileCases, ReportFile, open_report
from pytest_recall.reporting.run_report import RunReport
from pytest_recall.reporting.spool import summary_of_row
from pytest_recall.scoring import CaseSummary, scored_a_pass

CaseKey = tuple[Any, Any, Any]


def merge_reports(
    reports: Sequence[RunReport], *, threshold: float | None = None, allow_protocol_diff: bool = False
) -> RunReport:
    """One report from many, graded from the raw case records again.

    Medians and percentiles cannot be averaged; they are recomputed from
    every case's duration. A case present in several reports (a shard run
    twice) keeps its last record. Reports measured under different protocols
    are refused (:func:`merged_protocol`) unless ``allow_protocol_diff``.
    """
    if not reports:
        raise ValueError("nothing to merge: give at least one report")
    first_protocol = merged_protocol([report.protocol for report in reports], allow_protocol_diff)
    by_node: dict[tuple[Any, Any, Any], Mapping[str, Any]] = {}
    for report in reports:
        for record in report.cases:
            by_node[(record.get("nodeid"), record.get("epoch"), record.get("control"))] = record
    commands = {report.command for report in reports}
    pass_mark = threshold if threshold is not None else float(reports[0].threshold)
    case_rows = list(by_node.values())
    return report_of_rows(
        case_rows,
        threshold=pass_mark,
        command=commands.pop() if len(commands) == 1 else None,
        interrupted=any(report.interrupted for report in reports),
        run_mode=_first_run_mode(reports[0].run_mode, case_rows[:1]),
        protocol=rehashed(first_protocol, map(summary_of_row, case_rows)) if first_protocol else None,
    )


def report_of_rows(
    case_rows: Sequence[Mapping[str, Any]], *, threshold: float, command: str | None, **options: Any
) -> RunReport:
    """:func:`build_report` over records as JSON rows (a report read whole, a benchmark's): each row is read once
    as its summary, and ``cases`` holds the rows, in report order."""
    summaries = [summary_of_row(row) for row in case_rows]
    report = build_report(summaries, threshold=threshold, command=command, **options)
    order = sorted(range(len(summaries)), key=lambda index: report_key(summaries[index]))
    return replace(report, cases=[case_rows[index] for index in order])


def merged_protocol(
    protocols: Sequence[Mapping[str, Any] | None], allow_protocol_diff: bool
) -> Mapping[str, Any] | None:
    """The protocol block the merged report keeps: the first report's, when every report has the same one.

    Shards of one run share it; reports of different setups do not, and a
    merged score of both would be a number no one measured. With
    ``allow_protocol_diff`` the first report's block is kept and the others are dropped.
    A suite of case folders is hashed over the cases each shard ran, so that
    hash is left out here and made again over the merged cases (:func:`rehashed`).
    """
    first = protocols[0]
    for index, protocol in enumerate(protocols[1:], start=2):
        differences = protocol_differences(without_cases_hash(first), without_cases_hash(protocol))
        if differences and not allow_protocol_diff:
            fields = ", ".join(str(d["field"]) for d in differences[:5]) + (" ..." if len(differences) > 5 else "")
            raise ValueError(
                f"report {index} was measured under another protocol than report 1 ({fields}); "
                "merge only shards of one run, or pass --allow-protocol-diff"
            )
    return first if isinstance(first, Mapping) else None


def _first_run_mode(mode: Any, first: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The run mode a merged report holds at its top: the first report's, else its first case's (version 1)."""
    if mode is None and first:
        mode = first[0].get("run_mode")
    return mode if isinstance(mode, Mapping) else None


def merge_report_files(
    paths: Sequence[Path], *, threshold: float | None = None, allow_protocol_diff: bool = False
) -> RunReport:
    """:func:`merge_reports` of report files, holding a few scalars per case rather than every record.

    Each file is read one case at a time: per case, memory keeps where its
    line is and the scalars the verdict needs (``spool.CaseSummary``); the
    merged report's ``cases`` are read from the files again as it is
    written. A file not written one case a line is read whole, as before.
    Files that are no report make one ValueError, a line for each.
    """
    if not paths:
        raise ValueError("nothing to merge: give at least one report")
    opened: list[ReportFile] = []
    whole: list[RunReport] = []
    latest: dict[CaseKey, tuple[tuple[int, int], CaseSummary]] = {}
    problems = []
    first_mode: Mapping[str, Any] | None = None
    for path in paths:
        try:
            file = open_report(Path(path))
            if file is None:
                whole.append(load_report(Path(path)))
                continue
            for offset, record in file.records():
                if first_mode is None:
                    first_mode = _first_run_mode(file.header.get("run_mode"), [record])
                key = (record.get("nodeid"), record.get("epoch"), record.get("control"))
                latest.pop(key, None)  # a later shard's record wins
                latest[key] = ((len(opened), offset), summary_of_row(record))
            opened.append(file)
        except (OSError, ValueError) as exc:
            problems.append(str(exc))
    if problems:
        raise ValueError("\n".join(problems))
    if whole:
        # Some report was not one case a line: merge them all the old way, whole.
        return merge_reports(
            [load_report(Path(path)) for path in paths], threshold=threshold, allow_protocol_diff=allow_protocol_diff
        )
    headers = [file.header for file in opened]
    protocol = _protocol_or_close(opened, [header.get(PROTOCOL_KEY) for header in headers], allow_protocol_diff)
    commands = {header.get("command") for header in headers}
    pass_mark = threshold if threshold is not None else float(headers[0].get("threshold", 0.5))
    summaries = [summary for _, summary in latest.values()]
    merged = build_report(
        summaries,
        threshold=pass_mark,
        command=commands.pop() if len(commands) == 1 else None,
        interrupted=any(bool(header.get("interrupted")) for header in headers),
        run_mode=first_mode,
        protocol=rehashed(protocol, summaries) if protocol else None,
    )
    ordered = sorted(latest.values(), key=lambda entry: report_key(entry[1]))
    return replace(
        merged, cases=FileCases(opened, [place for place, _ in ordered], [summary for _, summary in ordered])
    )


def _protocol_or_close(
    opened: Sequence[ReportFile], protocols: Sequence[Mapping[str, Any] | None], allow_protocol_diff: bool
) -> Mapping[str, Any] | None:
    """The protocol the files share; when they differ (and that is not allowed), the files closed first."""
    try:
        return merged_protocol(protocols, allow_protocol_diff)
    except ValueError:
        for file in opened:
            file.close()
        raise


def case_scalars(report: RunReport) -> Sequence[CaseSummary]:
    """What the terminal summary and the exit status read of each case: its summary, kept when the cases are on
    disk, else made from each record's JSON row."""
    cases = report.cases
    if isinstance(cases, FileCases) and cases.summaries:
        return cases.summaries
    return [summary_of_row(row) for row in cases]


def close_files(report: RunReport) -> None:
    """Close the report files a merged report's cases are read from."""
    cases = report.cases
    if isinstance(cases, FileCases):
        for file in cases.files:
            file.close()


# What the exit status follows (``--recall-gate``, ``pytest-recall merge --gate``): any failed case, or the score.
Gate = Literal["cases", "score"]


def merged_exit_status(merged: RunReport, gate: Gate) -> int:
    """The exit status a single run with these records would have had under ``--recall-gate``.

    An interrupted shard leaves the merged run without a verdict (2, as pytest's
    interrupt). Under ``cases`` any case that did not score 1.0 (an error or a run
    without a score included) fails it, as it fails pytest; controls never fail.
    Under ``score`` the merged verdict alone decides.
    """
    if merged.interrupted:
        return 2
    if gate == "score":
        return 0 if merged.passed else 1
    failed = any(not r.control and not scored_a_pass(r.score) for r in case_scalars(merged))
    return 1 if failed else 0
