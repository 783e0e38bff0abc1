"""The memory listing: what an agent kept between steps, named and measured, within bounds the agent cannot stretch.

After every step but the last, the record lists the files under the case's
scope and HOME with their sizes and sha256 digests. The agent made those
files, so the listing takes nothing of them on trust:

- it hashes at most :attr:`ListingLimits.file_hash_bytes` of a file and
  :attr:`ListingLimits.step_hash_bytes` in all, and stops hashing after
  :attr:`ListingLimits.seconds`: a 1 TB sparse file costs a bounded moment,
  and a file it did not hash says why in place of its digest;
- it runs on a thread of its own (:func:`on_listing_threads`), so the sessions of
  other cases keep being served meanwhile, unless the memory is small enough
  to list at once (:func:`list_small_memory`), as most are;
- it walks by directory descriptor, without recursion, never following a
  link, opens files with ``O_NOFOLLOW | O_NONBLOCK`` and reads only regular
  ones; a tree deeper or wider than the bounds is the agent's fault, said in
  one line, and the case scores 0;
- a file with more than one hard link may be a host file linked in (in
  default mode nothing stops that): it is never read, and its size is shown
  only when all its links lie in the memory;
- paths are text whatever their bytes (``backslashreplace``), so a name that
  is not UTF-8 cannot break the record or the report.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pytest_recall.cases import MemoryFile

# A memory listing names at most this many files; the count says how many there were.
MEMORY_LISTING_LIMIT = 1000
T = TypeVar("T")
_HASH_CHUNK = 1 << 20
OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
OPEN_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class ListingLimits:
    """How much of what the agent left one listing reads; the defaults cost well under a second of disk time."""

    file_hash_bytes: int = 64 << 20
    step_hash_bytes: int = 256 << 20
    seconds: float = 5.0
    max_depth: int = 100
    max_entries: int = 100_000
    # A case group's copy of a memory (``memory_copy``) holds at most this many bytes of data, holes aside.
    copy_bytes: int = 256 << 20


@dataclass(frozen=True, slots=True)
class MemoryListing:
    """One listing: up to the limit of files, the count and bytes of all, and the agent's fault if any."""

    files: tuple[MemoryFile, ...] = ()
    count: int = 0
    total: int = 0
    # A bound the agent's tree broke (too deep, too many entries): the case scores 0 for it.
    fault: str | None = None


# What a listing made on the run loop's own thread may take before it hands the work to the listing threads.
SMALL_MEMORY = ListingLimits(
    file_hash_bytes=1 << 20, step_hash_bytes=1 << 20, seconds=0.002, max_depth=8, max_entries=64
)


class _NotSmall(Exception):
    """The memory is over :data:`SMALL_MEMORY`: listed on the listing threads, with the full limits."""


@dataclass
class _Budget:
    hash_bytes: int
    deadline: float
    cancel: threading.Event
    entries: int = 0
    # Set for a listing that gives up at any limit (raising _NotSmall) rather than noting it.
    small_only: bool = False

    def over(self, fault: str) -> str:
        """``fault`` (a bound the agent's tree broke, or why a file was not hashed), unless only a small listing
        is wanted: then no listing, the full one is made elsewhere."""
        if self.small_only:
            raise _NotSmall
        return fault

    @staticmethod
    def note(why: str) -> str:
        """What stands in place of the digest of a file that was not hashed."""
        return f"not hashed: {why}"


def shown_path(name: str | bytes) -> str:
    """A path as text whatever its bytes: undecodable bytes as ``\\xNN``, never a lone surrogate."""
    raw = name if isinstance(name, bytes) else os.fsencode(name)
    return raw.decode("utf-8", "backslashreplace")


def list_small_memory(roots: Iterable[Path]) -> MemoryListing | None:
    """The listing, made at once on this thread if the memory is within :data:`SMALL_MEMORY`, else None.

    A round through the listing threads costs two thread switches and the
    GIL's hand-over both ways: about 0.2 ms of wall time a step against the
    0.1 ms that listing and hashing a notebook's few kilobytes take
    (bench/README.md). A larger memory costs this attempt at most its bounds.
    """
    try:
        return list_memory(roots, SMALL_MEMORY, small_only=True)
    except _NotSmall:
        return None


def list_memory(
    roots: Iterable[Path],
    limits: ListingLimits = ListingLimits(),
    cancel: threading.Event | None = None,
    *,
    small_only: bool = False,
) -> MemoryListing:
    """List the regular files under ``roots`` (scope, HOME), sorted by path, within ``limits``."""
    budget = _Budget(
        limits.step_hash_bytes, time.monotonic() + limits.seconds, cancel or threading.Event(), small_only=small_only
    )
    found: list[tuple[str, int, str, tuple[int, int, int]]] = []  # path, size, digest, (dev, ino, nlink)
    fault = None
    for root in roots:
        fault = fault or _walk(root, limits, budget, found)
    # A file with several links is shown in full only when every link is in the memory.
    links: dict[tuple[int, int], int] = {}
    for _path, _size, _digest, (dev, ino, nlink) in found:
        if nlink > 1:
            links[(dev, ino)] = links.get((dev, ino), 0) + 1
    files: list[MemoryFile] = []
    count = total = 0
    for path, size, digest, (dev, ino, nlink) in sorted(found):
        if nlink > 1 and links[(dev, ino)] < nlink:
            size = 0
        count += 1
        total += size
        if len(files) < MEMORY_LISTING_LIMIT:
            files.append(MemoryFile(path, size, digest))
    return MemoryListing(tuple(files), count, total, fault)


def _walk(root: Path, limits: ListingLimits, budget: _Budget, found: list) -> str | None:  # type: ignore[type-arg]
    """Depth-first by descriptor: a stack of open directories, never deeper than ``limits.max_depth``."""
    try:
        top = os.open(root, OPEN_DIRECTORY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{root.name}/ could not be opened to list it: {exc.strerror}"
    stack: list[tuple[int, str, list[str]]] = [(top, root.name, names_in(top))]
    try:
        while stack:
            directory, prefix, names = stack[-1]
            if not names:
                os.close(stack.pop()[0])
                continue
            name = names.pop()
            budget.entries += 1
            if budget.entries > limits.max_entries:
                too_many = f"the memory holds more than {limits.max_entries:,} entries; the listing stopped there"
                return budget.over(too_many)
            path = f"{prefix}/{shown_path(name)}"
            try:
                info = os.stat(name, dir_fd=directory, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if len(stack) >= limits.max_depth:
                    return budget.over(f"the memory is deeper than {limits.max_depth} directories ({path[:200]}…)")
                try:
                    child = os.open(name, OPEN_DIRECTORY, dir_fd=directory)
                except OSError:
                    continue
                stack.append((child, path, names_in(child)))
            elif stat.S_ISREG(info.st_mode):
                digest = _digest(directory, name, info, limits, budget)
                found.append((path, info.st_size, digest, (info.st_dev, info.st_ino, info.st_nlink)))
    finally:
        for directory, _prefix, _names_left in stack:
            os.close(directory)
    return None


def names_in(directory: int) -> list[str]:
    try:
        with os.scandir(directory) as listing:
            return sorted((entry.name for entry in listing), reverse=True)
    except OSError:
        return []


def _digest(directory: int, name: str, info: os.stat_result, limits: ListingLimits, budget: _Budget) -> str:
    """The file's sha256, or why it was not read."""
    if info.st_nlink > 1:
        return budget.note("hard links (never read: the agent may have linked a file that is not its own)")
    if info.st_uid != os.getuid():
        return budget.note("owned by another user (never read)")
    if info.st_size > limits.file_hash_bytes:
        return budget.over(budget.note(f"larger than {limits.file_hash_bytes >> 20} MiB"))
    if info.st_size > budget.hash_bytes:
        return budget.over(budget.note(f"over the {limits.step_hash_bytes >> 20} MiB hashed per step"))
    if budget.cancel.is_set() or time.monotonic() > budget.deadline:
        return budget.over(budget.note(f"over the {limits.seconds:g} s a listing may take"))
    try:
        fd = os.open(name, OPEN_FILE, dir_fd=directory)
    except OSError:
        return "unreadable"
    digest = hashlib.sha256()
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            return "unreadable"
        left = min(limits.file_hash_bytes, budget.hash_bytes)
        while chunk := os.read(fd, min(_HASH_CHUNK, left + 1)):
            if len(chunk) > left or budget.cancel.is_set() or time.monotonic() > budget.deadline:
                return budget.over(budget.note("grew or took too long while it was read"))
            digest.update(chunk)
            left -= len(chunk)
            budget.hash_bytes -= len(chunk)
    except OSError:
        return "unreadable"
    finally:
        os.close(fd)
    return digest.hexdigest()


def holds_nothing(roots: Iterable[Path]) -> bool:
    """True when every root is empty (or missing): its listing is empty, known without a walk or a thread.

    An agent that keeps nothing between steps is common (and every no-memory
    baseline is one); it pays one ``scandir`` a root, not a round through the
    listing threads.
    """
    for root in roots:
        try:
            with os.scandir(root) as listing:
                if next(listing, None) is not None:
                    return False
        except FileNotFoundError:
            continue
        except OSError:
            return False  # the walk says what is wrong with it
    return True


_executor: concurrent.futures.ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def on_listing_threads(work: Callable[[threading.Event], T]) -> tuple[concurrent.futures.Future[T], threading.Event]:
    """``work`` on the listing threads: disk work on what an agent left (a listing, a case group's copy), kept off
    the run loop's thread. ``work`` gets the returned event; set, it cuts the work short (an interrupted run)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="recall-memory")
    cancel = threading.Event()
    return _executor.submit(work, cancel), cancel
