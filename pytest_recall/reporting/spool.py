"""Case records on disk, not in memory: the controller's spool and the report's streamed case list.

A run of 100,000 cases cannot hold 100,000 full records (transcripts,
prompt references, step summaries) in the process that writes the report.
Each record goes to a spool file in a private temporary folder the moment it
arrives; memory keeps only the few scalars the verdict, the statistics and
the terminal summary read (:data:`SUMMARY_KEYS`), plus where the full record
sits in the file. The report then streams the records back, one at a time,
in report order.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

# What the aggregates read of a record (grader.aggregate, stats.summarize, the false-abstention
# rate, the error lines, the progress line and the report order); everything else stays on disk.
SUMMARY_KEYS = (
    "id",
    "suite",
    "nodeid",
    "category",
    "answer_kind",
    "score",
    "reported",
    "error",
    "epoch",
    "control",
    "duration_s",
    "cost_usd",
    "content_hash",
)
# Values that repeat across cases; one shared string each instead of one per case.
_SHARED_TEXT = ("suite", "category", "answer_kind", "error")

RecordView = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def summary_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The scalars of a record that the aggregates read, with repeated strings shared."""
    summary = {key: record.get(key) for key in SUMMARY_KEYS}
    for key in _SHARED_TEXT:
        value = summary[key]
        if isinstance(value, str):
            summary[key] = sys.intern(value)
    return summary


class RecordSpool:
    """Full records in one append-only file; per case in memory, a summary and a file offset.

    A node id seen twice keeps its latest record, as the in-memory dict did.
    """

    def __init__(self) -> None:
        self._folder: Path | None = None
        self._handle: Any = None
        self._offsets: dict[str, int] = {}
        self.summaries: dict[str, dict[str, Any]] = {}

    def add(self, record: Mapping[str, Any]) -> None:
        if self._handle is None:
            self._folder = Path(tempfile.mkdtemp(prefix="pytest-recall-spool-"))
            self._handle = open(self._folder / "records.jsonl", "a+b")  # noqa: SIM115 - open for the run
        nodeid = str(record.get("nodeid"))
        self._handle.seek(0, 2)
        self._offsets[nodeid] = self._handle.tell()
        self._handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
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
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


class StreamedCases(Sequence[Mapping[str, Any]]):
    """The report's ``cases``: a sequence whose records come off disk one at a time when read.

    ``entries`` are in report order; each is a record already in memory (a
    lost case) or the node id of a spooled one. ``view`` is what the report
    keeps of each record (see ``--recall-transcripts``).
    """

    def __init__(self, spool: RecordSpool, entries: Sequence[str | Mapping[str, Any]], view: RecordView) -> None:
        self.spool = spool
        self.entries = list(entries)
        self.view = view

    def __len__(self) -> int:
        return len(self.entries)

    def _load(self, entry: str | Mapping[str, Any]) -> Mapping[str, Any]:
        return self.view(self.spool.read(entry) if isinstance(entry, str) else entry)

    @overload
    def __getitem__(self, index: int) -> Mapping[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Mapping[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> Mapping[str, Any] | Sequence[Mapping[str, Any]]:
        if isinstance(index, slice):
            return [self._load(entry) for entry in self.entries[index]]
        return self._load(self.entries[index])

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        for entry in self.entries:
            yield self._load(entry)
