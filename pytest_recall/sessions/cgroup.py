"""A cgroup v2 per session: the one record of a session's processes that an agent cannot outrun.

A process cannot leave its cgroup by forking, by ``setsid``, by changing its
uid or by dropping its environment, and ``cgroup.kill`` kills every member at
once, including the ones forked while it runs. So where the harness may make
cgroups (root, or a delegated subtree), every session gets one:

1. take a free slot cgroup under ``recall-<harness pid>-<its start time>``, beside the
   harness's own cgroup, or ``mkdir`` one when every slot is in use: as many
   slots as sessions ever ran at once (the folder of a harness that was
   killed is swept by the next run);
2. start the agent in it: the harness moves itself into it for the instant
   of a ``posix_spawn`` and back, from the thread that spawns. Any other
   process the harness starts meanwhile (an LLM judge, from its own
   threads) would be born there too, be counted as the agent's leftover and
   be killed with it: such starts take :func:`outside_sessions`, which
   waits until the harness is home.
   On a cgroup2 mount without ``favordynmods`` (:func:`waiting_mount`), a
   move waits out an RCU grace period when no move was made for a while:
   7 to 14 ms a session start, serially. So there a small process of the
   harness's (:func:`keep_moves_quick`) makes a move that changes nothing
   every few milliseconds while the run lasts, which keeps the kernel where
   ``favordynmods`` keeps it, and a session's move does not wait. A spawner
   process that cloned agents straight into their cgroups with
   ``clone3(CLONE_INTO_CGROUP)`` was measured against this and lost: its
   clone of itself cost some 3 ms of CPU a session more than the ``vfork``
   under ``posix_spawn`` (bench/README.md);
3. at the session's end, when anything still runs in it, write 1 to
   ``cgroup.kill`` and wait for ``cgroup.events`` to say it is empty. A slot
   that emptied by itself is free for the next session; a killed one is
   removed, since on recent kernels (6.14 on) a child born into a cgroup
   that was ever killed may be killed at birth (the cgroup's kill count
   differs from its parent's); one that does not empty in time is left for
   the exit's sweep.

Elsewhere the reaper falls back to killing the session's process group and
every process that carries the session token (:mod:`pytest_recall.sessions.reaper`).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

# How long a killed cgroup may take to empty before it is left behind (a process stuck in the kernel).
EMPTY_TIMEOUT_S = 5.0


@functools.cache
def cgroup2_home() -> Path | None:
    """The directory of the harness's own cgroup on the cgroup v2 hierarchy, or None."""
    found = _cgroup2_mount()
    return found[0] if found is not None else None


@functools.cache
def _cgroup2_mount() -> tuple[Path, str, str] | None:
    """The harness's own cgroup v2 directory, the cgroup2 mount it is under, and that mount's superblock options."""
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
        kind, _, source_and_options = rest.partition(" ")
        if kind != "cgroup2":
            continue
        parts = fields.split()
        mount_root, mount_point = parts[3], parts[4]
        if own == mount_root or own.startswith(mount_root.rstrip("/") + "/"):
            home = Path(mount_point) / own[len(mount_root) :].lstrip("/")
            if home.is_dir():
                return home, mount_point, source_and_options.partition(" ")[2]
    return None


def waiting_mount() -> str | None:
    """The cgroup2 mount point when moving a process between its cgroups waits on the kernel, else None.

    It waits when the mount lacks ``favordynmods``: every move then
    write-locks a lock all forks and exits read, and the first move after a
    pause first waits out an RCU grace period: measured 7 to 9 ms a session
    start on two loaded cores (0.15 ms with the option; ``bench/README.md``).
    With it, forks and exits pay a little instead. The harness moves itself
    into each session's cgroup to start the agent there, so the option is the
    difference between a session start that waits and one that does not.
    """
    found = _cgroup2_mount()
    if found is None or "favordynmods" in found[2].split(","):
        return None
    return found[1]


class SessionCgroup:
    """One session's cgroup; taken with :meth:`create`, ended with :meth:`kill` and :meth:`remove`."""

    def __init__(self, path: Path, procs: int, kind: str = "slot") -> None:
        self.path = path
        self.kind = kind
        # The slot's ``cgroup.procs``, open for as long as the slot lives: every session of the slot
        # moves in through it and lists its members with it, with no open and close a time.
        self._procs = procs
        self._taken = True
        self._killed = False

    @classmethod
    def create(cls, name: str = "", *, kind: str = "slot") -> SessionCgroup | None:
        """An empty cgroup for one session (a free slot, else a new one); None where cgroups cannot be used here.

        ``kind`` keeps slots apart: an LLM judge's (``judge``) is never one an agent session ran in, or will.

        Called on the thread that runs the sessions, which starts the quickener
        here where one is wanted: the thread that spawns, and enters the slot,
        would hand its keyring filter to it.
        """
        with _slots_lock:
            free = _free_slots.setdefault(kind, [])
            slot = free.pop() if free else None
        if slot is not None:
            slot._taken = True
            keep_moves_quick()
            return slot
        parent = _run_cgroup()
        if parent is None:
            return None
        path = parent / f"{kind}-{next(_slot_numbers)}"
        try:
            path.mkdir()
        except OSError:
            return None
        try:
            procs = os.open(path / "cgroup.procs", os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        keep_moves_quick()
        return cls(path, procs, kind)

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """The harness inside the session's cgroup, so that what it spawns is born there.

        Entered on the thread that spawns, as the first thing it does. A move
        takes every thread of the harness along, and for each one the kernel
        runs a call on the CPU where that thread last ran: an interrupt between
        CPUs for each thread that last ran elsewhere, about 27 us of CPU each on
        this VM, so a move costs more the more threads pytest has (a plugin's,
        the listing and judge pools). Made as the spawning thread wakes, while
        the thread that handed it the spawn is still on its way to sleep, a move
        was measured at 51-66 us of CPU against 62-66 us made before the
        hand-over (``bench/README.md``).
        """
        with _away_from_home:
            os.write(self._procs, b"0")
            try:
                yield
            finally:
                os.write(_home_procs(), b"0")

    def pids(self) -> list[int] | None:
        """The processes in the cgroup now; None when it cannot be read."""
        listing = bytearray()
        try:
            # Read from the start each time: the kernel lists the members anew at offset 0.
            while chunk := os.pread(self._procs, 1 << 16, len(listing)):
                listing += chunk
            return [int(line) for line in listing.split()]
        except (OSError, ValueError):
            return None

    def kill(self) -> None:
        """SIGKILL to every process in the cgroup, those forked while it happens included."""
        self._killed = True
        with contextlib.suppress(OSError):
            _write(self.path / "cgroup.kill", "1")

    def remove(self) -> None:
        """Wait until the killed cgroup is empty, then free the slot for the next session.

        A cgroup still populated after :data:`EMPTY_TIMEOUT_S` (a process stuck
        in the kernel) is never handed out again; the exit's sweep tries it once more.
        A slot never killed was found empty by :meth:`pids` (only a killed one can
        still be emptying), so it goes straight back.
        """
        if not self._taken:
            return
        self._taken = False
        if not self._killed:
            with _slots_lock:
                _free_slots.setdefault(self.kind, []).append(self)
            return
        os.close(self._procs)
        if _wait_empty(self.path / "cgroup.events", EMPTY_TIMEOUT_S):
            with contextlib.suppress(OSError):
                self.path.rmdir()


# Held while the harness sits in a session's cgroup: a process started then is born there.
_away_from_home = threading.Lock()


@contextlib.contextmanager
def outside_sessions() -> Iterator[None]:
    """For starting a process that belongs to the harness, not to an agent: waits out any session's spawn."""
    with _away_from_home:
        yield


# How often the quickener makes its move: well under the shortest grace period a busy machine waits out (a
# move 4 to 8 ms after the last one was measured as quick as one right after it; bench/cgroup_move.py).
QUICKENER_PERIOD_S = 0.008
# The quickener's program: its own pid into its own cgroup (a move to where it is) every period, until the
# harness's end of its stdin closes, which it does when the run ends, however it ends. Any error ends it too.
_QUICKENER_PROGRAM = (
    "import os, select, sys\n"
    "procs = os.open(sys.argv[1], os.O_WRONLY)\n"
    "while not select.select([0], [], [], float(sys.argv[2]))[0]:\n"
    "    os.write(procs, b'0')\n"
)


# This run's quickener: None until a session start asks, False where none runs (not wanted, or it could not start).
_quickener: subprocess.Popen[bytes] | Literal[False] | None = None


def keep_moves_quick() -> None:
    """Where moves wait on the kernel (:func:`waiting_mount`), start the quickener; once a run, idempotent.

    A move write-locks the lock every fork and exit on the machine reads.
    Without ``favordynmods`` the kernel lets that lock go back to its fast
    mode for readers a grace period after the last writer, and the next
    writer waits for it to leave that mode again. Moves a few milliseconds
    apart keep it out of the fast mode, as the mount option does for good:
    forks and exits pay a little while the run lasts, and no session start
    waits. Its cost is a Python start-up once a run and a tiny write every
    :data:`QUICKENER_PERIOD_S`.
    """
    global _quickener
    if _quickener is not None:
        return
    # A judging thread and the sessions' thread may both get here first: one starts it.
    with _quickener_lock:
        if _quickener is None:
            _quickener = _start_quickener()


_quickener_lock = threading.Lock()


def _start_quickener() -> subprocess.Popen[bytes] | Literal[False]:
    home = cgroup2_home()
    if home is None or waiting_mount() is None:
        return False
    with outside_sessions():
        try:
            # Its stdin is a pipe whose other end only the harness holds (close-on-exec): closed by stop_quickener,
            # or by the kernel when the harness dies, and the quickener ends.
            return subprocess.Popen(
                [sys.executable, "-S", "-c", _QUICKENER_PROGRAM, str(home / "cgroup.procs"), str(QUICKENER_PERIOD_S)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            return False


def stop_quickener() -> None:
    """End the quickener, if it runs, and reap it; the next session that needs one starts it again."""
    global _quickener
    quickener, _quickener = _quickener, None
    if not quickener:
        return
    assert quickener.stdin is not None
    quickener.stdin.close()
    try:
        quickener.wait(timeout=2)
    except subprocess.TimeoutExpired:
        quickener.kill()
        quickener.wait()


atexit.register(stop_quickener)


# Slots free now: emptied by themselves, awaiting their next session (or judge, taken on a judging thread).
_free_slots: dict[str, list[SessionCgroup]] = {}
_slots_lock = threading.Lock()
_slot_numbers = itertools.count()


@functools.cache
def _home_procs() -> int:
    """The harness's own ``cgroup.procs``, open for the whole run: where it moves back to after each spawn."""
    home = cgroup2_home()
    assert home is not None, "a slot exists only where the harness has a cgroup v2 home"
    return os.open(home / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)


# A run's folder: ``recall-<pid>-<start>``, the process's start time (in clock ticks since boot) naming it along with
# its pid; ``recall-<pid>`` is an older harness's.
_RUN_FOLDER = re.compile(r"recall-(\d+)(?:-(\d+))?")


@functools.cache
def _run_cgroup() -> Path | None:
    """``recall-<pid>-<start>`` beside the harness's cgroup: this process's sessions live under it.

    Made once, removed at exit, and never one that is already there. A pid
    alone names no process for long (``pid_max`` is 32768 on small machines,
    and a loaded one wraps it in minutes): a harness given the pid of one that
    was killed would take over the dead one's folder while another harness's
    sweep, which had found that pid dead a moment before, killed what was in
    it, the new harness itself caught in a slot for a spawn. With its start
    time in the name, a folder belongs to one process only. Folders of
    harnesses that no longer run (a killed xdist worker, say) are swept first:
    whatever still runs in them is what a dead harness left behind, and is
    killed.
    """
    home = cgroup2_home()
    start = _start_time(os.getpid())
    if home is None or start is None or not available():
        return None
    _sweep(home)
    parent = home / f"recall-{os.getpid()}-{start}"
    try:
        parent.mkdir()
    except OSError:
        return None
    atexit.register(_remove_tree, parent)
    return parent


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc/PID/stat``, field 22); None when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name, field 2, is in parentheses and may hold anything: the fields after it follow the last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[19].decode("ascii") if len(fields) > 19 else None


def _sweep(home: Path) -> None:
    """Remove the folders of harnesses that no longer run: their pid is gone, or now another process's."""
    for folder in home.glob("recall-*"):
        named = _RUN_FOLDER.fullmatch(folder.name)
        if named is None:
            continue
        pid, start = named.groups()
        running = _start_time(int(pid))
        if running is None or (start is not None and running != start):
            _remove_tree(folder)


def _remove_tree(parent: Path) -> None:
    """Kill, empty and remove every session cgroup under ``parent``, then ``parent``; a cgroup nested in a
    session's (a harness started as a judge makes its own beside its home) is removed first, as one more tree."""
    with contextlib.suppress(OSError):
        for session in parent.iterdir():
            if session.is_dir():
                with contextlib.suppress(OSError):
                    _write(session / "cgroup.kill", "1")
                _wait_empty(session / "cgroup.events", EMPTY_TIMEOUT_S)
                for nested in session.iterdir():
                    if nested.is_dir():
                        _remove_tree(nested)
                with contextlib.suppress(OSError):
                    session.rmdir()
        parent.rmdir()


def _wait_empty(events: Path, timeout_s: float) -> bool:
    """Until ``populated 0`` (True), or the timeout (False); the kernel wakes a poller of cgroup.events."""
    deadline = time.monotonic() + timeout_s
    try:
        fd = os.open(events, os.O_RDONLY)
    except OSError:
        return False
    try:
        if b"populated 0" in os.pread(fd, 4096, 0):
            return True
        poller = select.poll()
        poller.register(fd, select.POLLPRI)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            poller.poll(min(left, 0.1) * 1000)
            if b"populated 0" in os.pread(fd, 4096, 0):
                return True
    except OSError:
        return False
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


def tracking_line(verbose: bool = False) -> str:
    """How sessions are tracked here, for the header: the strength of the 'nothing left running' promise.

    One short line by default, which is what a user needs to know; ``verbose`` (``-v``) adds where the
    cgroups are and why a helper process runs, which matters to whoever tunes the machine.
    """
    if available():
        if not verbose:
            return "sessions run in a cgroup v2 each: nothing they start outlives them"
        line = f"sessions are tracked by a cgroup v2 each, under {cgroup2_home()}, and ended with cgroup.kill"
        mount_point = waiting_mount()
        if mount_point is not None:
            line += (
                "; a helper process keeps moves into them quick, as the mount lacks favordynmods "
                f"(`mount -o remount,favordynmods {mount_point}` makes it unneeded)"
            )
        return line
    if not verbose:
        return "no writable cgroup v2 here: a process that leaves its session's group and environment can outlive it"
    return (
        "no writable cgroup v2 here: leftovers are found by process group and session token, which a process "
        "that both leaves its group and drops its environment or outruns the scan can escape"
    )
