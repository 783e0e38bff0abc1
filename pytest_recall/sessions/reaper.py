"""Finding and killing what an agent session left behind.

A session ends when its main process exits, but an agent may leave
children running, or a daemon that called ``setsid`` and so left the
session's process group. Every process a session starts carries its
session token in its environment; this module kills whatever still does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

SESSION_TOKEN_VAR = "RECALL_SESSION_TOKEN"
ENVIRON_CHUNK = 1 << 16
# More process creations per second than any machine manages (fork alone takes tens of
# microseconds per core): the bound under which pids cannot have wrapped during a session.
MAX_SPAWNS_PER_S = 200_000
# Up to this many candidate pids are opened one by one rather than listing /proc.
PROBE_AT_MOST = 64
# A process caught inside execve shows an empty environment until the new image's is set up: such a process is
# read again, this often and this long at the most (200 ms), before it is taken for what it shows. A process
# started with an empty environment (env -i) costs its session's end that wait, and carries no token anyway.
MID_EXEC_RETRY_S = 0.01
MID_EXEC_RETRIES = 20
# The flag in /proc/<pid>/stat of a kernel thread, whose environment is always empty.
PF_KTHREAD = 0x00200000


def kill_tagged_processes(
    token: str,
    *,
    uncounted_group: int | None = None,
    candidates: tuple[range, ...] | None = None,
    uncounted_cgroup: str | None = None,
    variable: str = SESSION_TOKEN_VAR,
) -> int:
    """Kill every process of ours whose environment carries ``token`` (in ``variable``: a judge's is its own).

    A daemon that called ``setsid`` has left the session's process group,
    but it still carries the environment it was started with. Returns how
    many processes were killed, leaving out members of ``uncounted_group``:
    a group already signalled is dying, and whether a member is still there
    to be counted would be a matter of timing. ``candidates`` narrows the
    pids worth reading (see :func:`pids_allocated_since`); a few are probed
    directly, without listing every process on the machine. Members of the
    cgroup named ``uncounted_cgroup`` are killed but not counted: they were
    counted, and killed, through that cgroup; the others left it.
    """
    marker = f"{variable}={token}".encode()
    killed = 0
    my_uid = os.getuid()
    if candidates is not None and sum(len(r) for r in candidates) <= PROBE_AT_MOST:
        entries = [str(pid) for r in candidates for pid in r]
    else:
        try:
            entries = os.listdir("/proc")
        except OSError:
            return 0
    mid_exec: list[str] = []
    for attempt in range(MID_EXEC_RETRIES + 1):
        for entry in entries:
            if not entry.isdigit() or (candidates is not None and not any(int(entry) in r for r in candidates)):
                continue
            environ = _environ_of(entry, my_uid)
            if environ == b"" and candidates is not None and _may_be_mid_exec(entry):
                mid_exec.append(entry)
            # The substring test is cheap and almost always false; only a hit is split to confirm it.
            elif environ is not None and marker in environ and marker in environ.split(b"\0"):
                counted = (uncounted_group is None or process_group(entry) != uncounted_group) and (
                    uncounted_cgroup is None or cgroup_name(entry) != uncounted_cgroup
                )
                if _kill_if_tagged(int(entry), marker) and counted:
                    killed += 1
        if not mid_exec or attempt == MID_EXEC_RETRIES:
            break
        # A daemon forked by the session may be inside execve, its environment not there yet: read it again.
        entries, mid_exec = mid_exec, []
        time.sleep(MID_EXEC_RETRY_S)
    return killed


def _may_be_mid_exec(pid: str) -> bool:
    """Whether an empty environment may be an execve's moment: not for a kernel thread or a process that has
    exited (a zombie), whose environments stay empty."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return fields[0] not in ("Z", "X", "x") and not int(fields[6]) & PF_KTHREAD
    except (OSError, IndexError, ValueError):
        return False


def _kill_if_tagged(pid: int, marker: bytes) -> bool:
    """SIGKILL ``pid`` through a pidfd, if the process the pidfd holds still carries ``marker``.

    The pidfd pins one process: read after it is opened, ``/proc/<pid>/environ``
    is that process's while it lives, and the signal reaches it or nothing, never
    a newcomer that was given the pid after the first read.
    """
    opener, sender = getattr(os, "pidfd_open", None), getattr(signal, "pidfd_send_signal", None)
    if opener is None or sender is None:
        try:
            os.kill(pid, signal.SIGKILL)
            return True
        except OSError:
            return False
    try:
        pidfd = opener(pid)
    except OSError:
        return False
    try:
        environ = _environ_of(str(pid), None)
        sender(pidfd, 0)  # still the process whose environ was just read
        if environ is None or marker not in environ.split(b"\0"):
            return False
        sender(pidfd, signal.SIGKILL)
        return True
    except OSError:
        return False
    finally:
        os.close(pidfd)


def process_group(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            # The command name may hold spaces and parentheses; the fields after the last ")" do not.
            return int(handle.read().rsplit(")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None


def cgroup_name(pid: str) -> str | None:
    """The last part of a process's cgroup v2 path (a session's slot cgroup, say), or None."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("0::"):
                    return line.rstrip("\n").rsplit("/", 1)[-1]
    except OSError:
        return None
    return None


def pids_allocated_since(first_pid: int, started: float) -> tuple[range, ...] | None:
    """The pids a process started after ``first_pid``'s can hold; None when it could hold any.

    Linux hands out pids in increasing order and wraps at ``pid_max``, so a
    process created after ``first_pid`` holds a pid from it up to the last one
    handed out, unless the numbering went all the way round since, which takes
    ``pid_max`` process creations. A session too short for that even at
    :data:`MAX_SPAWNS_PER_S` only needs those pids read, not every process
    on the machine: that scan was half the harness's CPU per short session.
    """
    if PID_MAX is None or (time.monotonic() - started) * MAX_SPAWNS_PER_S >= PID_MAX:
        return None
    last = _proc_int("/proc/sys/kernel/ns_last_pid")
    if last is None:
        return None
    # ``first_pid`` itself is left out: it is the session's main process, which its end deals with.
    if last >= first_pid:
        return (range(first_pid + 1, last + 1),)
    return range(first_pid + 1, PID_MAX + 1), range(1, last + 1)


def _proc_int(path: str) -> int | None:
    """A number from a /proc file, read with bare descriptors: asked after every session, and a file
    object would add a ``stat``, a terminal check and two seeks to the one read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return int(os.read(fd, 64))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


PID_MAX = _proc_int("/proc/sys/kernel/pid_max")


def _environ_of(pid: str, uid: int | None) -> bytes | None:
    """The environment block of process ``pid`` if it runs as ``uid``; None when unreadable or not ours.

    This runs for every process on the machine at the end of every session,
    so it uses bare descriptors: the file's owner is the process's owner,
    which saves a ``stat`` of the directory and the cost of a file object.
    For root (``uid`` 0) and for None every readable process counts: a
    daemon that changed its uid still carries the token it was started with.
    """
    try:
        fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY)
    except OSError:
        return None
    try:
        if uid and os.fstat(fd).st_uid != uid:
            return None
        chunks = []
        while chunk := os.read(fd, ENVIRON_CHUNK):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks)


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pgid, sig)
