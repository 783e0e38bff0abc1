"""A cgroup v2 per session: the one record of a session's processes that an agent cannot outrun.

A process cannot leave its cgroup by forking, by ``setsid``, by changing its
uid or by dropping its environment, and ``cgroup.kill`` kills every member at
once, including the ones forked while it runs. So where the harness may make
cgroups (root, or a delegated subtree), every session gets one:

1. ``mkdir`` a cgroup under ``recall-<harness pid>``, beside the harness's own
   cgroup (the folder of a harness that was killed is swept by the next run);
2. move the harness into it for the instant of the spawn, and back
   (``posix_spawn`` cannot place a child in a cgroup; the child stays where it
   was born);
3. at the session's end, write 1 to ``cgroup.kill``, wait for
   ``cgroup.events`` to say it is empty, and remove it.

Elsewhere the reaper falls back to killing the session's process group and
every process that carries the session token (:mod:`pytest_recall.sessions.reaper`).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import select
import time
from collections.abc import Iterator
from pathlib import Path

# How long a killed cgroup may take to empty before it is left behind (a process stuck in the kernel).
EMPTY_TIMEOUT_S = 5.0


@functools.cache
def cgroup2_home() -> Path | None:
    """The directory of the harness's own cgroup on the cgroup v2 hierarchy, or None."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text(encoding="utf-8")
        own = next(
            line.split("::", 1)[1].strip()
            for line in Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
            if line.startswith("0::")
        )
    except (OSError, StopIteration):
        return None
    for line in mountinfo.splitlines():
        fields, _, rest = line.partition(" - ")
        if rest.split(" ", 1)[0] != "cgroup2":
            continue
        parts = fields.split()
        mount_root, mount_point = parts[3], parts[4]
        if own == mount_root or own.startswith(mount_root.rstrip("/") + "/"):
            home = Path(mount_point) / own[len(mount_root) :].lstrip("/")
            if home.is_dir():
                return home
    return None


class SessionCgroup:
    """One session's cgroup; made with :meth:`create`, ended with :meth:`kill` and :meth:`remove`."""

    def __init__(self, path: Path, home: Path) -> None:
        self.path = path
        self._home = home

    @classmethod
    def create(cls, name: str) -> SessionCgroup | None:
        """A new, empty cgroup for one session; None where cgroups cannot be made or used here."""
        home = cgroup2_home()
        parent = _run_cgroup()
        if home is None or parent is None:
            return None
        path = parent / name
        try:
            path.mkdir()
        except OSError:
            return None
        return cls(path, home)

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """The harness inside the session's cgroup, so that what it spawns is born there."""
        _write(self.path / "cgroup.procs", "0")
        try:
            yield
        finally:
            _write(self._home / "cgroup.procs", "0")

    def pids(self) -> list[int]:
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text(encoding="ascii").split()]
        except (OSError, ValueError):
            return []

    def kill(self) -> None:
        """SIGKILL to every process in the cgroup, those forked while it happens included."""
        with contextlib.suppress(OSError):
            _write(self.path / "cgroup.kill", "1")

    def remove(self) -> None:
        """Wait until the killed cgroup is empty, then remove it."""
        _wait_empty(self.path / "cgroup.events", EMPTY_TIMEOUT_S)
        with contextlib.suppress(OSError):
            self.path.rmdir()


@functools.cache
def _run_cgroup() -> Path | None:
    """``recall-<pid>`` beside the harness's cgroup: this process's sessions live under it.

    Made once, removed at exit. Folders of harnesses that no longer run (a
    killed xdist worker, say) are swept first: whatever still runs in them is
    what a dead harness left behind, and is killed.
    """
    home = cgroup2_home()
    if home is None or not available():
        return None
    _sweep(home)
    parent = home / f"recall-{os.getpid()}"
    try:
        parent.mkdir(exist_ok=True)
    except OSError:
        return None
    atexit.register(_remove_tree, parent)
    return parent


def _sweep(home: Path) -> None:
    for folder in home.glob("recall-*"):
        pid = folder.name.removeprefix("recall-")
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            _remove_tree(folder)


def _remove_tree(parent: Path) -> None:
    """Kill, empty and remove every session cgroup under ``parent``, then ``parent``."""
    with contextlib.suppress(OSError):
        for session in parent.iterdir():
            if session.is_dir():
                ended = SessionCgroup(session, parent)
                ended.kill()
                ended.remove()
        parent.rmdir()


def _wait_empty(events: Path, timeout_s: float) -> None:
    """Until ``populated 0``; the kernel wakes a poller of cgroup.events (POLLPRI) when it changes."""
    deadline = time.monotonic() + timeout_s
    try:
        fd = os.open(events, os.O_RDONLY)
    except OSError:
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLPRI)
        while True:
            if b"populated 0" in os.pread(fd, 4096, 0):
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            poller.poll(min(left, 0.1) * 1000)
    except OSError:
        return
    finally:
        os.close(fd)


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode("ascii"))
    finally:
        os.close(fd)


@functools.cache
def available() -> bool:
    """True when this process can make a cgroup with ``cgroup.kill``, enter it and leave it again (probed once)."""
    home = cgroup2_home()
    if home is None:
        return False
    probe = home / f"recall-probe-{os.getpid()}-{time.monotonic_ns()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        if not (probe / "cgroup.kill").exists():
            return False
        _write(probe / "cgroup.procs", "0")
        _write(home / "cgroup.procs", "0")
        return True
    except OSError:
        with contextlib.suppress(OSError):
            _write(home / "cgroup.procs", "0")
        return False
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


def tracking_line() -> str:
    """How sessions are tracked here, for the header: the strength of the 'nothing left running' promise."""
    if available():
        return f"sessions are tracked by a cgroup v2 each, under {cgroup2_home()}, and ended with cgroup.kill"
    return (
        "no writable cgroup v2 here: leftovers are found by process group and session token, which a process "
        "that both leaves its group and drops its environment or outruns the scan can escape"
    )
