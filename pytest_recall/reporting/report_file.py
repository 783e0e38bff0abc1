"""A report on disk, read without holding its cases: the fields at the top parsed, each case by its line.

The plugin writes a report's ``cases`` last, one case a line
(``files.dump_streaming``). So the fields above them parse as a small JSON
document of their own, and each case can be found again by the byte offset
of its line. Merging shards or drawing the HTML page of a 100,000-case
report then holds an offset and a few scalars per case, not every record; a
case is read from the file when it is written out.

A report not laid out that way (written by another tool) is read whole, as
before: :func:`open_report` returns None for it and the caller falls back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_recall.cases import MAX_LINE_BYTES, DuplicateKey, bounded_lines, record_loads, strict_loads
from pytest_recall.reporting.document import SHARED_KEYS, STEP_DEFAULTS_KEY, load_report, with_shared
from pytest_recall.reporting.lazy_records import LazyRecords
from pytest_recall.reporting.run_report import RunReport
from pytest_recall.reporting.schema import record_problem, report_problem
from pytest_recall.reporting.spool import CaseSummary, summary_of_row

# The line that opens the case list, as dump_streaming writes it.
# The line that opens a written report's cases; the resume reader finds them by it too.
CASES_OPEN = b'  "cases": ['
_CASES_EMPTY = b'  "cases": []'


def parse_line(raw: bytes) -> dict[str, Any] | None:
    """A record from one line of a log, or of a report's case list (indented, a comma after).

    None for a line that is not a JSON object (a torn last line, say); a
    ValueError for one no writer makes (nested too deep, a key twice).
    """
    text = raw.strip()
    if text.endswith(b","):
        text = text[:-1]
    if not text.startswith(b"{"):
        return None
    try:
        # One parse: a key twice (json would keep the last) is refused, not read as either.
        record = record_loads(text)
    except RecursionError:
        raise ValueError("a line nests too deep to be a record") from None
    except DuplicateKey:
        raise
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def line_at(fd: int, offset: int) -> bytes:
    """The line that starts at ``offset``; ``pread``, so threads may share the descriptor."""
    parts: list[bytes] = []
    start = offset
    while True:
        if offset - start > MAX_LINE_BYTES:
            raise ValueError(f"the line at byte {start} is longer than {MAX_LINE_BYTES >> 20} MiB")
        chunk = os.pread(fd, 1 << 16, offset)
        end = chunk.find(b"\n")
        if end >= 0 or not chunk:
            parts.append(chunk if end < 0 else chunk[:end])
            return b"".join(parts)
        parts.append(chunk)
        offset += len(chunk)


class ReportFile:
    """One report file: its top-level fields, and its cases as (offset, record) read one at a time."""

    def __init__(self, path: Path, header: dict[str, Any], cases_start: int) -> None:
        self.path = path
        self.header = header
        self._cases_start = cases_start
        self._fd: int | None = None

    def records(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Each case with the byte offset of its line; a case that is not a record is a ValueError.

        A case is checked as written, before what it shares with the report's
        top (``run_mode``, ``command``, ``step_defaults``) is put back: those
        were checked once with the top, each against the record's or the
        step's own schema for that field, not again in each of 100,000 cases
        (about a tenth of a merge's start). The record's and the step's schemas
        check each field on its own, so the two checks make one
        (``tests/test_report_schema.py`` holds the schema to that).
        """
        with open(self.path, "rb") as handle:
            handle.seek(self._cases_start)
            offset = self._cases_start
            for raw in bounded_lines(handle):
                if raw.strip() in (b"]", b"],"):
                    check_report_tail(handle, self.path, more_fields=raw.strip() == b"],")
                    return
                record = parse_line(raw)
                problem = "not JSON on one line" if record is None else record_problem(record)
                if problem is not None:
                    raise ValueError(f"{self.path}: not a pytest-recall report: case at byte {offset}: {problem}")
                assert record is not None
                yield offset, with_shared(record, self.header, ordered=False)
                offset += len(raw)

    def read(self, offset: int) -> dict[str, Any]:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        record = parse_line(line_at(self._fd, offset))
        if record is None:
            raise ValueError(f"{self.path}: changed while it was read (no case at byte {offset})")
        return with_shared(record, self.header)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def open_report(path: Path) -> ReportFile | None:
    """The report at ``path`` with its top fields checked, or None when its cases are not one a line.

    A file that is no report at all is a ValueError that says why in one line.
    """
    head = bytearray()
    with open(path, "rb") as handle:
        lines = bounded_lines(handle)
        first = next(lines, b"")
        if first.strip() != b"{":
            return None
        head += first
        for line in lines:
            stripped = line.rstrip(b"\r\n")
            if stripped in (CASES_OPEN, _CASES_EMPTY):
                cases_start = handle.tell()
                # One case a line, or none at all: the first case shows which (a writer does all or none).
                first_case = handle.readline(MAX_LINE_BYTES)
                if stripped == CASES_OPEN and parse_line(first_case) is None:
                    return None
                break
            head += line
        else:
            return None
    text = bytes(head).rstrip().rstrip(b",") + b"\n}"
    try:
        header = json.loads(text)
    except RecursionError:
        raise ValueError(f"{path}: not a pytest-recall report: nested too deep") from None
    except ValueError:
        return None
    try:
        strict_loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not a pytest-recall report: {exc}") from None
    if not isinstance(header, dict):
        return None
    problem = report_problem({**header, "cases": []})
    if problem is not None:
        raise ValueError(f"{path}: not a pytest-recall report: {problem}")
    if stripped == _CASES_EMPTY:
        with open(path, "rb") as handle:
            handle.seek(cases_start)
            check_report_tail(handle, path)
        cases_start = os.path.getsize(path)
    return ReportFile(path, header, cases_start)


def check_report_tail(handle: Any, path: Path, *, more_fields: bool = False) -> None:
    """After the case list, the report's last fields and its closing brace: anything after that is no report."""
    tail = handle.read(MAX_LINE_BYTES + 1)
    if len(tail) > MAX_LINE_BYTES:
        raise ValueError(f"{path}: not a pytest-recall report: data after its end")
    try:
        whole = strict_loads(b"{" + tail) if more_fields else None
    except ValueError as exc:
        raise ValueError(f"{path}: not a pytest-recall report: after its cases: {exc}") from None
    if (not more_fields and tail.strip() != b"}") or (more_fields and not isinstance(whole, dict)):
        raise ValueError(f"{path}: not a pytest-recall report: data after its end")


class FileCases(LazyRecords[Mapping[str, Any]]):
    """A report's ``cases`` read from report files when iterated: each entry a (file, offset)."""

    def __init__(
        self,
        files: Sequence[ReportFile],
        entries: Sequence[tuple[int, int]],
        summaries: Sequence[CaseSummary] = (),
    ) -> None:
        self.files = files
        self.entries = entries
        # Each case's scalars (spool.CaseSummary), in the same order: what the terminal summary reads.
        self.summaries = summaries

    def __len__(self) -> int:
        return len(self.entries)

    def row(self, index: int) -> Mapping[str, Any]:
        file, offset = self.entries[index]
        return self.files[file].read(offset)


def streamed_report(path: Path) -> RunReport | None:
    """The report at ``path`` as it stands, its ``cases`` read from the file when iterated.

    None when its cases are not one a line (read it whole instead); every
    case is checked against the schema on the way, as a whole read would.
    """
    file = open_report(path)
    if file is None:
        return None
    entries, summaries = [], []
    for offset, record in file.records():
        entries.append((0, offset))
        summaries.append(summary_of_row(record))
    return RunReport.from_json({**file.header, "cases": FileCases([file], entries, summaries)})


def summarized_report(path: Path) -> RunReport:
    """The report at ``path`` with each case as its scalars (``CaseSummary``), read one case at a time.

    What ``compare`` needs of two reports: a few hundred bytes a case rather
    than every record. A report not one case a line is read whole first.
    """
    file = open_report(path)
    if file is None:
        report = load_report(path)
        return replace(report, cases=[summary_of_row(row) for row in report.cases])
    try:
        return RunReport.from_json({**file.header, "cases": [summary_of_row(row) for _, row in file.records()]})
    finally:
        file.close()


def report_shared_values(path: Path) -> dict[str, Any]:
    """The values a report holds once for its cases (``run_mode``, ``command``, ``step_defaults``); none for a log."""
    try:
        file = open_report(path)
    except (OSError, ValueError):
        return {}
    if file is None:
        return {}
    return {key: file.header[key] for key in (*SHARED_KEYS, STEP_DEFAULTS_KEY) if key in file.header}
