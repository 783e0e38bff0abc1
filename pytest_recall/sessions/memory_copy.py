"""Copying a case group's memory for its questions: faithfully and within bounds, or not at all.

A case group keeps the memory its ingest left (scope, and HOME with a HOME per
case) and seeds each question's area with a copy of that (see
:mod:`~pytest_recall.sessions.case_groups`). The agent made the tree, so the
copy trusts nothing in it, as the memory listing does, and keeps within the
listing's bounds (:class:`~pytest_recall.sessions.memory_listing.ListingLimits`):

- it walks by directory descriptor, without recursion, and never follows a
  link; a tree deeper than ``max_depth`` directories or with more than
  ``max_entries`` entries is refused;
- a regular file is copied by its data alone (``SEEK_DATA``/``SEEK_HOLE``): a
  sparse file's holes stay holes, so a terabyte of holes costs no disk and no
  time, and the data of all files together may not pass ``copy_bytes``.
  Keeping holes rather than refusing sparse files: a database that maps a
  large file (LMDB, say) leaves honest ones;
- files hard-linked to each other stay linked, their data counted once;
- a symbolic link is kept when it can only point inside its own folder (scope
  or HOME): a relative target whose ``..`` all lead and climb no higher than
  the link's folder. Any other would point elsewhere in the copy, or out of
  the memory: refused, as are FIFOs, sockets and device nodes, which block a
  reader or never end.

A refusal is one line naming the path: the agent's doing, so its group's
ingest fails and is scored, never an error. Failing to write the copy (a full
disk) is the harness's, and raised.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pytest_recall.sessions.memory_listing import OPEN_DIRECTORY, OPEN_FILE, ListingLimits, names_in, shown_path

_CHUNK = 16 << 20
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# What a copy keeps of a mode: the permissions and the sticky bit, never set-user or set-group ID.
_KEPT_MODE = 0o1777
# copy_file_range(2) refuses these pairs of files (another file system, an old kernel); they are read and written.
_NO_RANGE_COPY = frozenset({errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL})
_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class CopyRefused(Exception):
    """What in a memory cannot be copied faithfully or within bounds: one line, naming the path."""


@dataclass
class _Copy:
    limits: ListingLimits
    cancel: threading.Event
    bytes_left: int
    entries: int = 0
    # The first copy of each file with several links, by the source's (device, inode).
    linked: dict[tuple[int, int], str] = field(default_factory=dict)


def copy_memory(
    pairs: Iterable[tuple[Path, Path]], limits: ListingLimits | None = None, cancel: threading.Event | None = None
) -> str | None:
    """Copy each source folder to its destination, which does not exist yet; None, or why the memory was refused.

    A missing source becomes an empty folder. What was copied before a
    refusal is the caller's to remove.
    """
    limits = limits or ListingLimits()
    state = _Copy(limits, cancel or threading.Event(), limits.copy_bytes)
    try:
        for source, dest in pairs:
            _copy_tree(source, dest, state)
    except CopyRefused as refused:
        return str(refused)
    return None


def _copy_tree(source: Path, dest: Path, state: _Copy) -> None:
    try:
        top = os.open(source, OPEN_DIRECTORY)
    except FileNotFoundError:
        os.mkdir(dest, 0o700)
        return
    except OSError as exc:
        raise CopyRefused(f"{source.name}/ could not be opened to copy it: {exc.strerror}") from None
    # Each open folder: its descriptor, its stat, its copy's path, its path as shown, and the names left in it.
    stack = [(top, os.fstat(top), os.fspath(dest), source.name, names_in(top))]
    try:
        os.mkdir(dest, 0o700)
        while stack:
            directory, info, target, shown, names = stack[-1]
            if not names:
                os.close(stack.pop()[0])
                _keep_stat(target, info)
                continue
            name = names.pop()
            path, to = f"{shown}/{shown_path(name)}", f"{target}/{name}"
            _count(path, state)
            try:
                entry = os.stat(name, dir_fd=directory, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(entry.st_mode):
                if len(stack) >= state.limits.max_depth:
                    raise CopyRefused(f"the memory is deeper than {state.limits.max_depth} directories ({path[:200]}…)")
                child = _open_source(name, directory, OPEN_DIRECTORY, path)
                stack.append((child, entry, to, path, names_in(child)))
                os.mkdir(to, 0o700)
            elif stat.S_ISREG(entry.st_mode):
                _copy_file(directory, name, entry, to, path, state)
            elif stat.S_ISLNK(entry.st_mode):
                _copy_link(directory, name, to, path, depth=len(stack) - 1)
            else:
                kind = next((kind for test, kind in _SPECIAL if test(entry.st_mode)), "no file, folder or link")
                raise CopyRefused(f"{path} is {kind}, which a copy cannot hold")
    finally:
        for directory, *_rest in stack:
            os.close(directory)


def _count(path: str, state: _Copy) -> None:
    state.entries += 1
    if state.entries > state.limits.max_entries:
        most = state.limits.max_entries
        raise CopyRefused(f"the memory holds more than {most:,} entries (the copy stopped at {path[:200]})")
    if state.cancel.is_set():
        raise CopyRefused("the copy was cut short: the run is ending")


def _open_source(name: str, directory: int, flags: int, path: str) -> int:
    try:
        return os.open(name, flags, dir_fd=directory)
    except OSError as exc:
        raise CopyRefused(f"{path} could not be opened to copy it: {exc.strerror}") from None


def _keep_stat(target: str, info: os.stat_result, fd: int | None = None) -> None:
    os.chmod(target if fd is None else fd, info.st_mode & _KEPT_MODE)
    os.utime(target if fd is None else fd, ns=(info.st_atime_ns, info.st_mtime_ns))


def _copy_file(directory: int, name: str, entry: os.stat_result, to: str, path: str, state: _Copy) -> None:
    key = (entry.st_dev, entry.st_ino)
    if entry.st_nlink > 1 and key in state.linked:
        os.link(state.linked[key], to)
        return
    source = _open_source(name, directory, OPEN_FILE, path)
    try:
        opened = os.fstat(source)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != key:
            raise CopyRefused(f"{path} was replaced while the memory was copied")
        copy = os.open(to, _NEW_FILE, 0o600)
        try:
            _copy_data(source, copy, opened.st_size, path, state)
            _keep_stat(to, opened, copy)
        finally:
            os.close(copy)
    finally:
        os.close(source)
    if entry.st_nlink > 1:
        state.linked[key] = to


def _copy_data(source: int, copy: int, size: int, path: str, state: _Copy) -> None:
    """The file's data, each extent at its own offset; what lies between stays a hole."""
    offset = 0
    while offset < size:
        start, end = _next_extent(source, offset, size)
        if end - start > state.bytes_left:
            mib = state.limits.copy_bytes >> 20
            raise CopyRefused(f"the memory holds more than {mib} MiB of data, holes aside (the copy stopped at {path})")
        state.bytes_left -= end - start
        _copy_range(source, copy, start, end, state)
        offset = end
    os.ftruncate(copy, size)


def _next_extent(fd: int, offset: int, size: int) -> tuple[int, int]:
    """The next run of data at or after ``offset``, within ``size``; empty when only a hole is left."""
    try:
        start = os.lseek(fd, offset, os.SEEK_DATA)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return size, size
        if exc.errno != errno.EINVAL:
            raise
        return offset, size  # a file system that cannot say where holes are: all of it is data
    end = os.lseek(fd, start, os.SEEK_HOLE)
    return min(start, size), min(end, size)


def _copy_range(source: int, copy: int, start: int, end: int, state: _Copy) -> None:
    position = start
    while position < end:
        if state.cancel.is_set():
            raise CopyRefused("the copy was cut short: the run is ending")
        count = min(_CHUNK, end - position)
        try:
            done = os.copy_file_range(source, copy, count, position, position)
        except OSError as exc:
            if exc.errno not in _NO_RANGE_COPY:
                raise
            data = os.pread(source, count, position)
            done = os.pwrite(copy, data, position) if data else 0
        if done == 0:
            return  # the file shrank meanwhile: what is left of it was copied
        position += done


def _copy_link(directory: int, name: str, to: str, path: str, *, depth: int) -> None:
    target = os.readlink(name, dir_fd=directory)
    if not points_inside(target, depth):
        shown = shown_path(target)[:200]
        raise CopyRefused(f"{path} is a symbolic link to {shown!r}, outside its folder, which a copy cannot keep")
    os.symlink(target, to)


def points_inside(target: str, depth: int) -> bool:
    """Whether a link ``depth`` folders below its root can only lead inside the root, whatever the root's
    other links point to: its target is relative, and its ``..`` all come first, no more of them than ``depth``.

    Each link in the root passes the same test, so resolving any path in it
    climbs real folders only, never out of the root.
    """
    if target.startswith("/"):
        return False
    parts = [part for part in target.split("/") if part not in ("", ".")]
    climbs = 0
    while climbs < len(parts) and parts[climbs] == "..":
        climbs += 1
    return climbs <= depth and ".." not in parts[climbs:]
