"""The run log (``--recall-log``) and resuming from it (``--recall-resume``).

Agents that take minutes and cost money must never be paid for twice. Each
finished case's record is appended to the log as one JSON line the moment
the case ends, and forced to disk. Under xdist every worker appends to the
same file: each line is one ``write`` on an ``O_APPEND`` descriptor, under
an exclusive ``flock``, so lines from different processes never interleave.
A run killed at any point keeps every line written before the kill.

A later run given the log with ``--recall-resume`` skips the cases it
already scored (same node id, same content hash, same command) and reports
their stored records as they are, so its report equals that of a run that
was never interrupted.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

ResumeKey = tuple[str, str, str, str]


def load_records(path: Path) -> list[dict[str, Any]]:
    """Case records from a run log (JSON lines) or from a report (its ``cases``).

    A line that does not parse is skipped: it can only be the torn last line
    of a run killed mid-write, and losing it costs one case, not the log.
    """
    text = path.read_text(encoding="utf-8")
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get("cases"), list):
        return [record for record in whole["cases"] if isinstance(record, dict)]
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def resume_key(record: Mapping[str, Any]) -> ResumeKey | None:
    """What decides whether a stored record still holds: the case, its content, the command, and the run mode."""
    nodeid, content_hash, command = record.get("nodeid"), record.get("content_hash"), record.get("command")
    if not (isinstance(nodeid, str) and isinstance(content_hash, str) and isinstance(command, str)):
        return None
    return nodeid, content_hash, command, mode_key(record.get("run_mode"))


def mode_key(run_mode: Any) -> str:
    """The run mode as one comparable string; a record from before run modes matches no run."""
    if not isinstance(run_mode, Mapping):
        return "unknown"
    return json.dumps(run_mode, sort_keys=True, separators=(",", ":"), default=str)


class ResumeIndex:
    """The scored records of earlier runs, by what decides whether they still hold.

    Only scored records count: a case that errored (its agent could not
    start, say) is run again. The latest record of a key wins.
    """

    def __init__(self, records: Iterable[Mapping[str, Any]], source: Path | None = None) -> None:
        self.source = source
        self._done: dict[ResumeKey, dict[str, Any]] = {}
        for record in records:
            key = resume_key(record)
            if key is not None and record.get("score") is not None and not record.get("error"):
                self._done[key] = dict(record)

    def __len__(self) -> int:
        return len(self._done)

    def records(self) -> list[dict[str, Any]]:
        """The resumable records, as plain data that crosses to an xdist worker."""
        return list(self._done.values())

    @classmethod
    def load(cls, path: Path) -> ResumeIndex:
        """Read a log or a report; a file that does not exist yet resumes nothing."""
        __tracebackhide__ = True
        if not path.exists():
            return cls((), source=path)
        try:
            return cls(load_records(path), source=path)
        except (OSError, UnicodeDecodeError) as exc:
            raise pytest.UsageError(f"--recall-resume: cannot read {path}: {exc}") from None

    def take(self, nodeid: str, content_hash: str, command: str, run_mode: Mapping[str, Any]) -> dict[str, Any] | None:
        """The stored record of this very case, command and run mode, or None to run it."""
        stored = self._done.get((nodeid, content_hash, command, mode_key(run_mode)))
        return dict(stored) if stored is not None else None

    def holds(self, record: Mapping[str, Any]) -> bool:
        key = resume_key(record)
        return key is not None and self._done.get(key) == dict(record)


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
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise pytest.UsageError(f"--recall-log: cannot open {path} for appending: {exc.strerror or exc}") from None

    def append(self, record: Mapping[str, Any]) -> None:
        """One line, one write, on disk before this returns."""
        if self._fd is None:
            return
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            view = memoryview(line)
            # A regular file takes the whole line in one write; the loop only
            # guards against a short write, and the lock keeps it in one piece.
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fsync(self._fd)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def pytest_recall_case_finished(self, record: dict[str, Any], config: pytest.Config) -> None:
        if self.already is not None and self.already.holds(record):
            return
        self.append(record)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


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
    resume_records: list[dict[str, Any]] | None = None,
) -> None:
    """Every process that may run cases appends to the log itself; the resume file is read once.

    An xdist worker is handed the controller's records (``resume_records``)
    rather than reading the file again.
    """
    if resume_path is not None:
        if resume_records is not None:
            config.stash[RESUME_KEY] = ResumeIndex(resume_records, source=resume_path)
        else:
            config.stash[RESUME_KEY] = ResumeIndex.load(resume_path)
    if log_path is not None:
        run_log = RunLog(log_path)
        if resume_path is not None and same_file(log_path, resume_path):
            run_log.already = config.stash[RESUME_KEY]
        config.pluginmanager.register(run_log, "recall-run-log")
