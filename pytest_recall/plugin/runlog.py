"""The run log (``--recall-log``) and resuming from it (``--recall-resume``).

Agents that take minutes and cost money must never be paid for twice. Each
finished case's record is appended to the log as one JSON line the moment
the case ends, and forced to disk. Under xdist every worker appends to the
same file: each line is one ``write`` on an ``O_APPEND`` descriptor, under
an exclusive ``flock``, so lines from different processes never interleave.
A run killed at any point keeps every line written before the kill.

A later run given the log with ``--recall-resume`` skips the cases it
already scored (same suite, case id and item, same content hash, same command) and reports
their stored records as they are, so its report equals that of a run that
was never interrupted.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.cases import bounded_lines, strict_loads
from pytest_recall.plugin.xdist_handoff import is_worker
from pytest_recall.reporting import (
    CASES_OPEN,
    SHARED_KEYS,
    CaseRecord,
    check_report_tail,
    json_line,
    line_at,
    parse_line,
    record_problem,
    report_shared_values,
    with_shared,
)

ResumeKey = tuple[str, str, str, str]
# The user property that carries a failed append from the process that ran the case to the recorder.
LOG_ERROR_PROPERTY = "recall_log_error"


def load_records(path: Path) -> list[dict[str, Any]]:
    """Case records from a run log (JSON lines) or from a report (its ``cases``).

    A line that does not parse is skipped: it can only be the torn last line
    of a run killed mid-write, and losing it costs one case, not the log.
    """
    with open(path, "rb") as handle:
        lines = list(bounded_lines(handle))
    text = b"".join(lines)
    try:
        whole = json.loads(text)
    except RecursionError:
        raise ValueError(f"{path}: nested too deep to be a log or a report") from None
    except ValueError:
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get("cases"), list):
        try:
            strict_loads(text)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
        return [with_shared(record, whole) for record in whole["cases"] if isinstance(record, dict)]
    records = []
    for number, line in enumerate(lines, 1):
        try:
            record = parse_line(line)
        except ValueError as exc:
            raise ValueError(f"{path}: line {number}: {exc}") from None
        if record is not None:
            records.append(record)
    return records


def case_key(suite: object, case_id: object, nodeid: str) -> str:
    """What names a case's run whatever the rootdir: its suite, its id, and the item's name (epoch, control).

    A node id alone changes with where pytest roots the run (``cases/s/c::recall`` in a clone
    once an install adds a ``pyproject.toml`` above, ``s/c::recall`` before), and a resume keyed
    on it ran every case again. A record without a suite (none this version writes) keeps its node id.
    """
    if not (isinstance(suite, str) and isinstance(case_id, str)):
        return nodeid
    return f"{suite}/{case_id}::{nodeid.rpartition('::')[2]}"


def resume_key(row: Mapping[str, Any]) -> ResumeKey | None:
    """What decides whether a stored record still holds: the case, its content, the command, and the run mode."""
    nodeid, content_hash, command = row.get("nodeid"), row.get("content_hash"), row.get("command")
    if not (isinstance(nodeid, str) and isinstance(content_hash, str) and isinstance(command, str)):
        return None
    return case_key(row.get("suite"), row.get("id"), nodeid), content_hash, command, mode_key(row.get("run_mode"))


def mode_key(run_mode: Any) -> str:
    """The run mode as one comparable string; a record from before run modes matches no run."""
    if not isinstance(run_mode, Mapping):
        return "unknown"
    return json.dumps(run_mode, sort_keys=True, separators=(",", ":"), default=str)


class ResumeIndex:
    """The scored records of earlier runs, by what decides whether they still hold.

    Only scored records count: a case that errored (its agent could not
    start, say) is run again. The latest record of a key wins.

    Memory holds a key and a place per case, not the record: read from a
    file (a run log, or a report the plugin wrote, one case a line), the
    place is the byte offset of the record's line, read again when the case
    is resumed; given records, it is the record as one compact JSON line.
    A resume of 100,000 cases so holds a few hundred bytes a case, not
    100,000 parsed records.
    """

    def __init__(self, case_rows: Iterable[Mapping[str, Any]], source: Path | None = None) -> None:
        self.source = source
        # What a report (schema version 2) holds once at its top for its cases: put back in each read.
        self.shared: dict[str, Any] = {}
        self._done: dict[ResumeKey, int | str] = {}
        # One line per stored record that does not fit the report's schema; its case runs again.
        self.refused: list[str] = []
        self._fd: int | None = None
        for row in case_rows:
            self._consider(row, json_line(row))

    def _consider(self, row: Mapping[str, Any], place: int | str) -> None:
        key = resume_key(row)
        # A case the model's rate limit stopped was never measured: resuming (after the quota resets) runs it again.
        if key is None or row.get("score") is None or row.get("error") or row.get("outcome") == "rate_limited":
            return
        problem = record_problem(row)
        if problem is not None:
            self.refused.append(f"resume refused the record of {row.get('nodeid')}: {problem}; the case runs again")
            return
        # The command and mode repeat in every record: one shared string each.
        self._done[(key[0], key[1], sys.intern(key[2]), sys.intern(key[3]))] = place

    def __len__(self) -> int:
        return len(self._done)

    @classmethod
    def load(cls, path: Path) -> ResumeIndex:
        """Read a log or a report; a file that does not exist yet resumes nothing."""
        __tracebackhide__ = True
        index = cls((), source=path)
        if not path.exists():
            return index
        try:
            found = False
            index.shared = report_shared_values(path)
            # The key needs the case's command and mode; its steps are put back only for a case taken.
            keys = {key: value for key, value in index.shared.items() if key in SHARED_KEYS}
            for offset, record in _records_by_line(path):
                found = True
                index._consider(with_shared(record, keys), offset)
            if not found:
                # A report not written one case a line (by another tool): read whole, kept as lines.
                for record in load_records(path):
                    index._consider(record, json_line(record))
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(f"--recall-resume: cannot read {path}: {exc}") from None
        return index

    def handoff(self, *, same_host: bool) -> dict[str, Any]:
        """What an xdist worker needs to resume: plain data that crosses execnet.

        A worker on this host gets keys and offsets and reads the records
        from the file itself; one on another host (ssh) cannot see the file,
        so it gets each record as its JSON line.
        """
        entries = [[*key, place if same_host else self._line(place)] for key, place in self._done.items()]
        source = os.path.abspath(self.source) if self.source is not None else None
        return {"source": source, "entries": entries, "shared": self.shared}

    @classmethod
    def from_handoff(cls, data: Mapping[str, Any]) -> ResumeIndex:
        index = cls((), source=Path(data["source"]) if data.get("source") else None)
        index.shared = dict(data.get("shared") or {})
        for nodeid, content_hash, command, mode, place in data["entries"]:
            index._done[(nodeid, content_hash, sys.intern(command), sys.intern(mode))] = place
        return index

    def _line(self, place: int | str) -> str:
        if isinstance(place, str):
            return place
        assert self.source is not None
        if self._fd is None:
            self._fd = os.open(self.source, os.O_RDONLY | os.O_CLOEXEC)
        return line_at(self._fd, place).decode("utf-8")

    def _stored(self, key: ResumeKey) -> dict[str, Any] | None:
        place = self._done.get(key)
        if place is None:
            return None
        record = parse_line(self._line(place).encode("utf-8"))
        return with_shared(dict(record), self.shared) if record is not None else None

    def take(self, key: str, content_hash: str, command: str, run_mode: Mapping[str, Any]) -> CaseRecord | None:
        """The stored record of this very case (its :func:`case_key`), command and run mode, or None to run it."""
        stored = self._stored((key, content_hash, command, mode_key(run_mode)))
        return None if stored is None else CaseRecord.from_json(stored)

    def holds(self, row: Mapping[str, Any]) -> bool:
        """Whether this record is one the index holds, under whatever node id this run gave it."""
        key = resume_key(row)
        if key is None or key not in self._done:
            return False
        stored = self._stored(key)
        return stored is not None and {**stored, "nodeid": row.get("nodeid")} == dict(row)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _records_by_line(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each record of a log or a one-case-a-line report with the byte offset of its line, one at a time.

    Nothing may follow a report's end. In a log, a record cut short by a run
    killed mid-write is skipped wherever it stands, and any other line that is
    no record may only be the last: anything else is a ValueError, so a file
    with something appended is never read as intact.
    """
    with open(path, "rb") as handle:
        offset = 0
        report = in_cases = False
        torn_at: int | None = None
        for raw in bounded_lines(handle):
            stripped = raw.strip()
            report = report or (offset == 0 and stripped == b"{")
            # A list closes in the report's head too (the protocol block's data sets): only the cases' ends them.
            in_cases = in_cases or (report and raw.rstrip(b"\r\n") == CASES_OPEN)
            if in_cases and stripped in (b"]", b"],"):
                check_report_tail(handle, path, more_fields=stripped == b"],")
                return
            try:
                record = parse_line(raw)
            except ValueError as exc:
                raise ValueError(f"byte {offset}: {exc}") from None
            if not report and torn_at is not None:
                raise ValueError(f"byte {torn_at}: a line that is no record, and not the log's torn last line")
            # A record cut short by a run killed mid-write begins as every record does; the next run
            # appends on a fresh line after it, so it may stand anywhere and is skipped. Any other
            # line that is no record may only be the last.
            if not report and record is None and stripped and not stripped.startswith(b'{"'):
                torn_at = offset
            if record is not None and "nodeid" in record:
                yield offset, record
            offset += len(raw)


class RunLog:
    """A plugin in every process that runs cases: one durable line per finished case.

    ``already`` is the resume index read from this same file, if any: its
    records are already lines here, so carrying them over would only
    duplicate them. Resuming from another file copies them in, so the new
    log alone is a complete account of the run.
    """

    def __init__(self, path: Path, *, already: ResumeIndex | None = None) -> None:
        __tracebackhide__ = True
        self.path = path
        self.already = already
        # Append failures by node id, until the item's next report carries them to the controller.
        self._unwritten: dict[str, str] = {}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Read access too, where allowed: an append looks at the last byte, to start on a fresh line.
            flags = os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
            try:
                self._fd: int | None = os.open(path, os.O_RDWR | flags, 0o644)
            except PermissionError:
                self._fd = os.open(path, os.O_WRONLY | flags, 0o644)
        except OSError as exc:
            raise pytest.UsageError(f"--recall-log: cannot open {path} for appending: {exc.strerror or exc}") from None

    def append(self, row: Mapping[str, Any]) -> None:
        """One line, one write, on disk before this returns.

        A line always starts on a fresh line, so a torn tail left by a crash
        costs only itself. A write that fails (a full disk) is taken back
        whole, so it leaves no torn tail either; the error is raised.
        """
        if self._fd is None:
            return
        line = (json_line(row) + "\n").encode("utf-8")
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            start = os.lseek(self._fd, 0, os.SEEK_END)
            if start > 0 and _last_byte(self._fd, start) != b"\n":
                line = b"\n" + line
            view = memoryview(line)
            try:
                # A regular file takes the whole line in one write; the loop only
                # guards against a short write, and the lock keeps it in one piece.
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
                os.fsync(self._fd)
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, start)
                raise
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def pytest_recall_case_finished(self, record: dict[str, Any], config: pytest.Config) -> None:
        if self.already is not None and self.already.holds(record):
            return
        try:
            self.append(record)
        except OSError as exc:
            # The case's verdict stands: the log only saves paying for it again. The controller says so once.
            self._unwritten[str(record.get("nodeid"))] = f"could not be written to {self.path} ({exc.strerror or exc})"

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Any:
        """A failed append travels with the item's report, so it reaches the controller under xdist too."""
        why = self._unwritten.pop(report.nodeid, None)
        if why is not None:
            report.user_properties.append((LOG_ERROR_PROPERTY, why))
        return (yield)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """An interrupted run says so in its log too, and which signal stopped it (none for Ctrl-C)."""
        if exitstatus != pytest.ExitCode.INTERRUPTED or is_worker(session.config):
            return
        termination = session.config.pluginmanager.get_plugin("recall-termination-signals")
        received = getattr(termination, "received", None)
        with contextlib.suppress(OSError):
            self.append({"interrupted": True, "signal": received.name if received is not None else None})

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _last_byte(fd: int, size: int) -> bytes:
    try:
        return os.pread(fd, 1, size - 1)
    except OSError:
        return b"\n"  # unreadable (a device): nothing to mend


def log_error_lines(errors: Mapping[str, int]) -> list[str]:
    """One line per distinct append failure, however many records it cost."""
    return [
        f"ERROR: --recall-log: {count} case {'record' if count == 1 else 'records'} {why}; "
        "a resume from this log runs those cases again"
        for why, count in errors.items()
    ]


def same_file(first: Path, second: Path) -> bool:
    try:
        return first.exists() and second.exists() and os.path.samefile(first, second)
    except OSError:
        return False


RESUME_KEY = pytest.StashKey["ResumeIndex"]()


def open_run_log(
    config: pytest.Config,
    log_path: Path | None,
    resume_path: Path | None,
    resume_handoff: Mapping[str, Any] | None = None,
) -> None:
    """Every process that may run cases appends to the log itself; the resume file is read once.

    An xdist worker is handed the controller's index (``resume_handoff``,
    see :meth:`ResumeIndex.handoff`) rather than reading the file again.
    """
    if resume_path is not None:
        if resume_handoff is not None:
            config.stash[RESUME_KEY] = ResumeIndex.from_handoff(resume_handoff)
        else:
            config.stash[RESUME_KEY] = ResumeIndex.load(resume_path)
        config.add_cleanup(config.stash[RESUME_KEY].close)
    if log_path is not None:
        run_log = RunLog(log_path)
        if resume_path is not None and same_file(log_path, resume_path):
            run_log.already = config.stash[RESUME_KEY]
        config.pluginmanager.register(run_log, "recall-run-log")
