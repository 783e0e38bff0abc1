"""Starting a program on a new pseudo-terminal without forking the harness.

ptyprocess starts every child with ``fork``: the whole pytest process is
copied, the copy runs Python code to set up its terminal (touching, and so
copying, page after page), and only then execs. That costs milliseconds per
session, more than a trivial agent takes to run. ``posix_spawn`` (a vfork
underneath) copies nothing: the terminal is prepared in the parent, and the
child only opens it by name, which, right after ``setsid``, makes it the
controlling terminal of the new session exactly as ``pty.fork`` would.

Linux only: elsewhere opening a terminal does not make it the controlling
one, so :data:`AVAILABLE` is false and the caller forks as before.
"""

from __future__ import annotations

import fcntl
import os
import resource
import signal
import struct
import sys
import termios
from collections.abc import Mapping, Sequence
from typing import Any

AVAILABLE = sys.platform.startswith("linux") and hasattr(os, "posix_spawn") and hasattr(os, "POSIX_SPAWN_OPEN")
# ptyprocess's child resets these before exec; an agent must not inherit a harness's SIG_IGN.
DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGPIPE)


def open_terminal(rows: int, cols: int) -> tuple[int, int]:
    """A new pty (master, slave) with echo off and the given size, as ptyprocess sets it up."""
    master, slave = os.openpty()
    try:
        attributes = termios.tcgetattr(slave)
        attributes[3] &= ~termios.ECHO
        termios.tcsetattr(slave, termios.TCSANOW, attributes)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    except BaseException:
        os.close(master)
        os.close(slave)
        raise
    return master, slave


def spawn_on_terminal(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    stderr_fd: int,
    stdin_from_terminal: bool,
    rows: int,
    cols: int,
) -> tuple[int, int]:
    """Start ``argv`` in a new session on a new pty; returns (pid, master fd).

    stdout is the pty, stderr is ``stderr_fd``, stdin is the pty or
    ``/dev/null``. ``argv[0]`` must already be a path (pexpect's ``which``
    found it). Raises ``OSError`` when the program cannot be executed.
    """
    program = os.path.abspath(argv[0])
    master, slave = open_terminal(rows, cols)
    try:
        terminal = os.ttyname(slave)
        # The first terminal a session leader opens becomes its controlling terminal.
        actions: list[tuple[Any, ...]] = [
            (os.POSIX_SPAWN_OPEN, 1, terminal, os.O_RDWR, 0),
            (os.POSIX_SPAWN_OPEN, 0, terminal, os.O_RDWR, 0)
            if stdin_from_terminal
            else (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, stderr_fd, 2),
        ]
        # Python's own descriptors close on exec; any inheritable one a plugin left open must
        # not reach the agent, as ptyprocess's closerange guaranteed.
        actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable_fds(out_of_range=_fd_limit()) if fd > 2]
        pid = _spawn_in(cwd, program, list(argv), env, actions)
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return pid, master


def _spawn_in(
    cwd: str,
    program: str,
    args: list[str],
    env: Mapping[str, str],
    actions: list[tuple[Any, ...]],
) -> int:
    """posix_spawn in ``cwd``.

    Python exposes no chdir file action, so the harness steps into the
    directory for the instant of the spawn and straight back; the harness
    runs its sessions on one thread, so nothing else sees its cwd move.
    """
    home = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY)
    try:
        os.chdir(cwd)
        try:
            return os.posix_spawn(program, args, env, file_actions=actions, setsid=True, setsigdef=DEFAULT_SIGNALS)
        finally:
            os.fchdir(home)
    finally:
        os.close(home)


def _fd_limit() -> int:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 30


def _inheritable_fds(out_of_range: int) -> list[int]:
    """The inheritable descriptors a spawn must close; those at or above ``out_of_range`` are made
    close-on-exec instead, because glibc refuses a close action for a descriptor at or above the soft
    ``RLIMIT_NOFILE`` and would fail every spawn."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return []
    found = []
    for name in names:
        fd = int(name)
        try:
            if not os.get_inheritable(fd):
                continue
            if fd >= out_of_range:
                os.set_inheritable(fd, False)
            else:
                found.append(fd)
        except OSError:
            continue  # the descriptor listdir itself used, closed by now
    return found
