"""Reading a small file that an agent could have made or replaced, without letting it hang or fool the harness.

A file in a folder an agent can write may be anything by the time the
harness reads it: a FIFO (an ``open`` that blocks until someone writes, which
would hang the whole run), a link to ``/dev/zero`` (a read that never ends)
or to a file of the host, or a hard link to one. So the file is opened with
``O_NOFOLLOW | O_NONBLOCK``, must be a regular file with one link (``fstat``
on the open descriptor, so nothing can be swapped in between), and is read
up to a bound. The agent's cost file and the judge's shared verdicts are read
this way.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from pytest_recall.sessions.agent_tree import file_kind

_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


def read_agent_file(path: Path | str, name: str, limit: int, *, dir_fd: int | None = None) -> tuple[bytes, str | None]:
    """The file's bytes and None; or no bytes and what is wrong with it, in one line naming it as ``name``.

    A missing file is no fault (empty bytes, None): the caller decides what absence means.
    """
    try:
        fd = os.open(path, _OPEN, dir_fd=dir_fd)
    except FileNotFoundError:
        return b"", None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return b"", f"{name} is a symbolic link; it must be a regular file the agent writes"
        return b"", f"{name} could not be opened: {exc.strerror}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b"", f"{name} is {file_kind(info.st_mode)}, not a regular file"
        if info.st_nlink != 1:
            return b"", f"{name} has {info.st_nlink} hard links; it must be a file of its own"
        data = os.read(fd, limit + 1)
    except OSError as exc:
        return b"", f"{name} could not be read: {exc.strerror}"
    finally:
        os.close(fd)
    if len(data) > limit:
        return b"", f"{name} is larger than {limit // 1024} KiB"
    return data, None
