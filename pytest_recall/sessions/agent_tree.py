"""Removing a directory an agent wrote in, whatever it made of it, without recursion and without following a link.

An agent may leave a tree 100,000 levels deep, directories it made
read-only, names that are not UTF-8, or its directory swapped for a symbolic
link to somewhere else. A recursive walk (``shutil.rmtree`` before Python
3.13, ``os.walk`` before 3.12) fails on the first with ``RecursionError``, a
walk by path fails on it with ``ENAMETOOLONG``, and a removal that follows
the link, or makes "its" directory writable through it, changes what the
link points to.

So removal works on directory descriptors, one level at a time, and holds
at most three: every subdirectory of the directory being emptied is renamed
up into the top of the tree (``renameat``), which keeps every path short and
the work a flat list; files, links and other non-directories are unlinked,
never opened; a directory is opened with ``O_NOFOLLOW`` and made writable
through its own descriptor, never through a name a link could stand for.

What the agent did that the removal had to deal with, or could not, comes
back as one line for the case's record: the agent's doing, never the
harness's error.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from pytest_recall.sessions.memory_listing import shown_path

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PATH_ONLY = getattr(os, "O_PATH", os.O_RDONLY) | os.O_NOFOLLOW | os.O_CLOEXEC
# Hoisted directories are named with this prefix at the top of the tree being removed.
_HOISTED = ".recall-removing-"


def remove_agent_tree(path: Path) -> str | None:
    """Remove ``path`` and all under it; None when it went plainly, else one line on what the agent left.

    A ``path`` that is no longer a directory (a symlink, a file, a FIFO put
    in its place) is unlinked as it is, and said. What could not be removed
    is said too; nothing here raises for what the agent made.
    """
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path.parent} could not be opened to remove {path.name}: {exc.strerror}"
    try:
        return _remove_in(parent, path.name, str(path))
    finally:
        os.close(parent)


def _remove_in(parent: int, name: str, shown: str) -> str | None:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{shown} could not be examined: {exc.strerror}"
    if not stat.S_ISDIR(info.st_mode):
        what = file_kind(info.st_mode)
        target = ""
        if stat.S_ISLNK(info.st_mode):
            with contextlib.suppress(OSError):
                target = f" to {shown_path(os.readlink(name, dir_fd=parent))!r}"
        try:
            os.unlink(name, dir_fd=parent)
        except OSError as exc:
            return f"{shown} was replaced by {what}{target}, which could not be removed: {exc.strerror}"
        return f"{shown} was replaced by {what}{target} (removed, never followed)"
    try:
        top = _open_directory(parent, name)
    except OSError as exc:
        return f"{shown} could not be opened for removal: {exc.strerror}"
    problems: list[str] = []
    try:
        _empty(top, problems)
    finally:
        os.close(top)
    try:
        os.rmdir(name, dir_fd=parent)
    except FileNotFoundError:
        pass
    except OSError as exc:
        problems.append(f"{shown} itself: {exc.strerror}")
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        return f"could not remove all the agent left under {shown}: {'; '.join(problems[:3])}{more}"
    return None


def _empty(top: int, problems: list[str]) -> None:
    """Empty the directory ``top``: a flat loop over hoisted directories, never a recursion."""
    pending = _clear(top, top, problems, hoist=False)
    counter = 0
    while pending:
        name = pending.pop()
        try:
            directory = _open_directory(top, name)
        except OSError as exc:
            problems.append(f"{shown_path(name)}: {exc.strerror}")
            continue
        try:
            for child in _clear(directory, top, problems, hoist=True):
                counter = _hoist(directory, child, top, counter, pending, problems)
        finally:
            os.close(directory)
        try:
            os.rmdir(name, dir_fd=top)
        except OSError as exc:
            problems.append(f"{shown_path(name)}: {exc.strerror}")


def _clear(directory: int, top: int, problems: list[str], *, hoist: bool) -> list[str]:
    """Unlink every non-directory in ``directory``; its subdirectories' names come back, for the caller."""
    subdirectories = []
    try:
        with os.scandir(directory) as listing:
            entries = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing]
    except OSError as exc:
        problems.append(f"a directory could not be listed: {exc.strerror}")
        return []
    for name, is_directory in entries:
        if is_directory:
            subdirectories.append(name)
            continue
        try:
            os.unlink(name, dir_fd=directory)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            subdirectories.append(name)  # swapped for a directory meanwhile
        except OSError as exc:
            problems.append(f"{shown_path(name)}: {exc.strerror}")
    return subdirectories


def _hoist(directory: int, name: str, top: int, counter: int, pending: list[str], problems: list[str]) -> int:
    """Rename ``directory/name`` to a fresh name at the top of the tree and queue it; the next free counter."""
    while True:
        counter += 1
        hoisted = f"{_HOISTED}{counter}"
        try:
            os.rename(name, hoisted, src_dir_fd=directory, dst_dir_fd=top)
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                continue
            problems.append(f"{shown_path(name)}: {exc.strerror}")
            return counter
        pending.append(hoisted)
        return counter


def _open_directory(parent: int, name: str) -> int:
    """``parent/name`` opened as a directory, never through a link, made ours to empty if it was not."""
    try:
        fd = os.open(name, _DIRECTORY, dir_fd=parent)
    except PermissionError:
        # No read or search permission (an agent's chmod 000): change the mode of exactly that directory,
        # through a descriptor that cannot be a link, then open it again the same way.
        handle = os.open(name, _PATH_ONLY | os.O_DIRECTORY, dir_fd=parent)
        try:
            os.chmod(f"/proc/self/fd/{handle}", stat.S_IRWXU)
            return os.open(f"/proc/self/fd/{handle}", _DIRECTORY & ~os.O_NOFOLLOW)
        finally:
            os.close(handle)
    try:
        if os.fstat(fd).st_mode & stat.S_IRWXU != stat.S_IRWXU:
            os.fchmod(fd, stat.S_IRWXU)  # read-only: its entries could not be unlinked
    except OSError:
        pass
    return fd


def file_kind(mode: int) -> str:
    """What an agent put where a file or folder was expected, in words for its reason."""
    kinds = (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISREG, "a file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a device"),
    )
    return next((words for test, words in kinds if test(mode)), "a device or other special file")
