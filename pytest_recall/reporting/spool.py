"""Case records on disk, not in memory: the controller's spool and the report's streamed case list.

A run of 100,000 cases cannot hold 100,000 full records (transcripts,
prompt references, step summaries) in the process that writes the report.
Each record goes to a spool file without a name (gone with the process,
however it ends) the moment it arrives; memory keeps only the few scalars the verdict, the statistics and
the terminal summary read (:data:`SUMMARY_KEYS`), plus where the full record
sits in the file. The report then streams the records back, one at a time,
in report order.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pytest_recall.reporting.judge_rows import panel_entry
from pytest_recall.reporting.judge_section import llm_judge_summary
from pytest_recall.reporting.lazy_records import LazyRecords
from pytest_recall.reporting.records import CaseRecord
from pytest_recall.reporting.summary import FAILURE_OUTCOMES_SHOWN, failure_text
from pytest_recall.scoring.abstain import says_not_given
from pytest_recall.scoring.memory_use import MemoryUse

# Not record fields but derived from one: the HOME mode of the run, and the one-line account of an agent failure.
DERIVED_SUMMARY_KEYS = ("run_home", "failure_text", "memory_use", "judge_panel")
# What the aggregates read of a record (grader.aggregate, stats.summarize, the false-abstention
# rate, the error lines, the progress line and the report order); everything else stays on disk.
SUMMARY_KEYS = (
    "id",
    "suite",
    "nodeid",
    "category",
    "answer_kind",
    "sessions_per_step",
    "score",
    "reported",
    "error",
    "epoch",
    "control",
    "duration_s",
    "cost_usd",
    "content_hash",
    "outcome",
    "tokens_in",
    "tokens_out",
    "memory_bytes",
    "workspace",
    "llm_judge",
    *DERIVED_SUMMARY_KEYS,
)
# Values that repeat across cases; one shared string each instead of one per case.
_SHARED_TEXT = frozenset({"suite", "category", "answer_kind", "error", "outcome", "workspace", "run_home"})
_POSITION = {key: index for index, key in enumerate(SUMMARY_KEYS)}
_CONTENT_HASH = _POSITION["content_hash"]
_REPORTED = _POSITION["reported"]
# Only a hash in lower-case hex comes back from its bytes as written.
_LOWER_HEX = frozenset("0123456789abcdef")

RecordView = Callable[[Mapping[str, Any]], Mapping[str, Any]]


class CaseSummary(Mapping[str, Any]):
    """A record's scalars for the aggregates, read like the record: about 300 bytes, not a 1 KB dict.

    A hex content hash is kept as its 32 bytes. ``reported`` is kept only
    when it abstains (``NOT GIVEN``), the one thing the aggregates ask of it.
    """

    __slots__ = ("_values",)

    def __init__(self, record: Mapping[str, Any]) -> None:
        values: list[Any] = []
        derived = {
            "run_home": (record.get("run_mode") or {}).get("home")
            if isinstance(record.get("run_mode"), Mapping)
            else None,
            "failure_text": failure_text(record) if record.get("outcome") in FAILURE_OUTCOMES_SHOWN else None,
            # The judge command's verdict, without its reason: what the agreement figures read.
            "llm_judge": llm_judge_summary(record.get("llm_judge")),
            # The MCP tap's account, as the report's JSON holds it (only on a --recall-mcp run): the memory figures.
            "memory_use": used.as_json() if isinstance(used := record.get("memory_use"), MemoryUse) else used,
            # With several judges, the record as a row of the judges table: what the report's judges block reads.
            "judge_panel": record["judge_panel"] if "judge_panel" in record else _panel_of_json(record),
        }
        for key in SUMMARY_KEYS:
            value = derived[key] if key in derived else record.get(key)
            if isinstance(value, str) and key in _SHARED_TEXT:
                value = sys.intern(value)
            values.append(value)
        content_hash = values[_CONTENT_HASH]
        if isinstance(content_hash, str) and len(content_hash) == 64 and _LOWER_HEX.issuperset(content_hash):
            values[_CONTENT_HASH] = bytes.fromhex(content_hash)
        if not says_not_given(str(values[_REPORTED] or "")):
            values[_REPORTED] = None
        self._values = tuple(values)

    def __getitem__(self, key: str) -> Any:
        value = self._values[_POSITION[key]]
        return value.hex() if isinstance(value, bytes) else value

    def get(self, key: str, default: Any = None) -> Any:
        """As a mapping's, without its round through ``__getitem__`` and ``KeyError``: the aggregates ask often."""
        position = _POSITION.get(key)
        if position is None:
            return default
        value = self._values[position]
        return value.hex() if isinstance(value, bytes) else value

    def __iter__(self) -> Iterator[str]:
        return iter(SUMMARY_KEYS)

    def __len__(self) -> int:
        return len(SUMMARY_KEYS)


def _panel_of_json(data: Mapping[str, Any]) -> Any:
    """A stored record's row of the judges table (merge, a report file); only one with several judges is read."""
    return panel_entry(CaseRecord.from_json(data)) if data.get("llm_judges") else None


def summary_of(record: CaseRecord) -> CaseSummary:
    """The scalars of a record that the aggregates read, off the object: its JSON is never made for them."""
    benchmark = record.benchmark
    scalars = {key: getattr(record, key) for key in _RECORD_SCALARS}
    scalars["sessions_per_step"] = benchmark.sessions_per_step if benchmark is not None else None
    # The steps and the reason are read only to word a failure (failure_text), never kept.
    scalars.update(run_mode=record.run_mode, steps=record.steps, reason=record.reason, memory_use=record.memory_use)
    scalars["judge_panel"] = panel_entry(record)
    return CaseSummary(scalars)


# The summary's keys that are a record's own fields by the same name.
_RECORD_SCALARS = tuple(key for key in SUMMARY_KEYS if key not in (*DERIVED_SUMMARY_KEYS, "sessions_per_step"))


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

    def record(self, index: int) -> Mapping[str, Any]:
        entry = self.entries[index]
        return self.view(self.spool.read(entry) if isinstance(entry, str) else entry.as_json())
