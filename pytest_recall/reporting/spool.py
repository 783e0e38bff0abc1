"""Case records on disk, not in memory: the controller's spool and the report's streamed case list.

A run of 100,000 cases cannot hold 100,000 full records (transcripts,
prompt references, step summaries) in the process that writes the report.
Each record goes to a spool file without a name (gone with the process,
however it ends) the moment it arrives; memory keeps only the few scalars the verdict, the statistics and
the terminal summary read (:class:`~pytest_recall.scoring.case_summary.CaseSummary`), plus where the full record
sits in the file. The report then streams the records back, one at a time,
in report order.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_recall.reporting.judge_rows import panel_entry
from pytest_recall.reporting.judge_section import llm_judge_summary
from pytest_recall.reporting.lazy_records import LazyRecords
from pytest_recall.reporting.records import CaseRecord
from pytest_recall.reporting.summary import FAILURE_OUTCOMES_SHOWN, failure_text
from pytest_recall.scoring import CaseSummary, says_not_given

__all__ = ["CaseSummary", "RecordSpool", "StreamedCases", "summary_of", "summary_of_row"]
from pytest_recall.scoring import MemoryUse

# What the aggregates read of a record (grader.aggregate, stats.summarize, the false-abstention
# rate, the error lines, the progress line and the report order); everything else stays on disk.
SUMMARY_FIELDS = tuple(field.name for field in dataclasses.fields(CaseSummary))
# Not record fields but derived from one: the HOME mode of the run, and the one-line account of an agent failure.
DERIVED_SUMMARY_KEYS = ("run_home", "failure_text", "memory_use", "judge_panel")
# Values that repeat across cases; one shared string each instead of one per case.
_SHARED_TEXT = ("suite", "category", "answer_kind", "error", "outcome", "workspace", "run_home")
# Only a hash in lower-case hex comes back from its bytes as written.
_LOWER_HEX = frozenset("0123456789abcdef")

RecordView = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def summary_of(record: CaseRecord) -> CaseSummary:
    """The scalars of a record that the aggregates read, off the object: its JSON is never made for them."""
    benchmark = record.benchmark
    scalars = {key: getattr(record, key) for key in _RECORD_SCALARS}
    scalars["sessions_per_step"] = benchmark.sessions_per_step if benchmark is not None else None
    # The steps and the reason are read only to word a failure (failure_text), never kept.
    scalars.update(run_mode=record.run_mode, steps=record.steps, reason=record.reason, memory_use=record.memory_use)
    scalars["judge_panel"] = panel_entry(record)
    return summary_of_row(scalars)


def summary_of_row(row: Mapping[str, Any]) -> CaseSummary:
    """The same scalars from a record's JSON row: the edge where a report file, a merge or a test makes them."""
    mode = row.get("run_mode")
    used = row.get("memory_use")
    values = {key: row.get(key) for key in SUMMARY_FIELDS}
    values.update(
        run_home=mode.get("home") if isinstance(mode, Mapping) else row.get("run_home"),
        failure_text=failure_text(row) if row.get("outcome") in FAILURE_OUTCOMES_SHOWN else row.get("failure_text"),
        llm_judge=llm_judge_summary(row.get("llm_judge")),
        memory_use=MemoryUse.from_json(used) if isinstance(used, Mapping) else used,
        content_digest=_digest(row.get("content_hash")),
        reported=row.get("reported") if says_not_given(str(row.get("reported") or "")) else None,
        # With several judges, the record as a row of the judges table: what the report's judges block reads.
        judge_panel=row["judge_panel"] if "judge_panel" in row else _panel_of_json(row),
    )
    for key in _SHARED_TEXT:
        if isinstance(text := values[key], str):
            values[key] = sys.intern(text)
    return CaseSummary(**values)


def _panel_of_json(row: Mapping[str, Any]) -> Any:
    """A stored record's row of the judges table (merge, a report file); only one with several judges, or a
    judge's samples, is read."""
    sampled = isinstance(judged := row.get("llm_judge"), Mapping) and judged.get("samples")
    return panel_entry(CaseRecord.from_json(row)) if row.get("llm_judges") or sampled else None


def _digest(content_hash: Any) -> bytes | str | None:
    """A lower-case hex hash as its bytes (half the memory); anything else as written."""
    if isinstance(content_hash, str) and len(content_hash) == 64 and _LOWER_HEX.issuperset(content_hash):
        return bytes.fromhex(content_hash)
    return content_hash if isinstance(content_hash, str) else None


# The summary's fields that are a record's own fields by the same name.
_RECORD_SCALARS = (
    *(key for key in SUMMARY_FIELDS if key not in (*DERIVED_SUMMARY_KEYS, "sessions_per_step", "content_digest")),
    "content_hash",
)


class RecordSpool:
    """Full records in one append-only file; per case in memory, a summary and a file offset.

    A node id seen twice keeps its latest record, as the in-memory dict did.
    """

    def __init__(self) -> None:
        self._handle: Any = None
        # Per node id, where its full record starts in the file, and its summary.
        self._offsets: dict[str, int] = {}
        self.summaries: dict[str, CaseSummary] = {}

    def open(self) -> None:
        """Make the file now, before sessions run: a run that exhausts descriptors must still keep its records."""
        if self._handle is None:
            # A file without a name: it goes with the process, however the process ends (a SIGKILL included).
            self._handle = tempfile.TemporaryFile(prefix="pytest-recall-spool-")  # noqa: SIM115 - open for the run

    def add(self, record: CaseRecord, text: str | None = None) -> None:
        """Spool ``record``; its JSON ``text``, when it came over the wire as one line, is written as it is."""
        self.open()
        if text is None:
            text = json.dumps(record.as_json(), ensure_ascii=False, separators=(",", ":"))
        nodeid = record.nodeid
        self._handle.seek(0, 2)
        self._offsets[nodeid] = self._handle.tell()
        self._handle.write(text.encode("utf-8") + b"\n")
        self.summaries[nodeid] = summary_of(record)

    def __len__(self) -> int:
        return len(self.summaries)

    def read(self, nodeid: str) -> dict[str, Any]:
        """The full record of one case, read back from the spool."""
        assert self._handle is not None
        self._handle.flush()
        self._handle.seek(self._offsets[nodeid])
        loaded: dict[str, Any] = json.loads(self._handle.readline())
        return loaded

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


class StreamedCases(LazyRecords[Mapping[str, Any]]):
    """The report's ``cases``: a sequence whose records come off disk one at a time when read, as the JSON
    the report file writes.

    ``entries`` are in report order; each is a record already in memory (a
    lost case) or the node id of a spooled one. ``view`` is what the report
    keeps of each record (see ``--recall-transcripts``).
    """

    def __init__(self, spool: RecordSpool, entries: Sequence[str | CaseRecord], view: RecordView) -> None:
        self.spool = spool
        self.entries = list(entries)
        self.view = view

    def __len__(self) -> int:
        return len(self.entries)

    def row(self, index: int) -> Mapping[str, Any]:
        entry = self.entries[index]
        return self.view(self.spool.read(entry) if isinstance(entry, str) else entry.as_json())
