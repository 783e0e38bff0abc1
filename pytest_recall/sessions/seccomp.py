"""No kernel keyring for agents: a seccomp filter that denies ``add_key``, ``keyctl`` and ``request_key``.

The kernel keyring is a store outside the file system and outside every
sandbox bind: a key an agent adds in one step, with its permissions opened to
all, is found again by a later step (by name in ``/proc/keys``, read by id),
even after the keyring that held it was unlinked, until the kernel's garbage
collector gets to it; sessions that run at the same time read each other's.
No fresh keyring per session closes that, so agents get no keyring at all,
as Docker's default seccomp profile does for containers. The three calls fail
with ``ENOSYS``, which programs read as "this kernel has no keyring" and work
without one.

``posix_spawn`` runs no code in the child, so the filter cannot be installed
between fork and exec. A seccomp filter (and ``no_new_privs``, which an
unprivileged filter needs) belongs to one thread and is inherited by every
process that thread creates: sessions are spawned on one thread of the
harness that carries the filter, and the rest of the harness keeps its
keyring. ``no_new_privs`` is set on that thread only where the filter needs
it (without ``CAP_SYS_ADMIN``). Under bwrap the filter is inherited by bwrap and so by everything in
the sandbox. The program is classic BPF, assembled here, checking the
architecture field first: a call made through another ABI (32-bit ``int
0x80`` on x86-64, x32, AArch32) is matched against that ABI's numbers, and an
ABI this module does not know kills the process rather than let its numbers
through unchecked.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import queue
import signal
import struct
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")

# prctl(2) and seccomp(2) constants from <linux/prctl.h>, <linux/seccomp.h>, <linux/filter.h>, <linux/audit.h>.
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
BPF_LD_W_ABS = 0x00 | 0x00 | 0x20
BPF_JEQ_K = 0x05 | 0x10 | 0x00
BPF_AND_K = 0x04 | 0x50 | 0x00
BPF_RET_K = 0x06 | 0x00
# Offsets in struct seccomp_data.
NR_OFFSET, ARCH_OFFSET = 0, 4
X32_SYSCALL_BIT = 0x40000000
DENIED_ERRNO = errno.ENOSYS

# add_key, request_key, keyctl for every ABI a process on this machine may call the kernel through.
AUDIT_ARCH_X86_64, AUDIT_ARCH_I386 = 0xC000003E, 0x40000003
AUDIT_ARCH_AARCH64, AUDIT_ARCH_ARM = 0xC00000B7, 0x40000028
KEYRING_SYSCALLS: dict[str, tuple[tuple[int, tuple[int, ...]], ...]] = {
    "x86_64": ((AUDIT_ARCH_X86_64, (248, 249, 250)), (AUDIT_ARCH_I386, (286, 287, 288))),
    "aarch64": ((AUDIT_ARCH_AARCH64, (217, 218, 219)), (AUDIT_ARCH_ARM, (309, 310, 311))),
}


def _instruction(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def keyring_filter(machine: str) -> bytes | None:
    """The filter program for ``machine`` (``uname -m``) as packed ``struct sock_filter``s; None for an unknown one."""
    abis = KEYRING_SYSCALLS.get(machine)
    if abis is None:
        return None
    # Each ABI's block: load nr (on x86-64, fold x32's numbers onto the native ones), one test per call, allow.
    blocks = []
    for arch, numbers in abis:
        fold = [(BPF_AND_K, ~X32_SYSCALL_BIT & 0xFFFFFFFF)] if arch == AUDIT_ARCH_X86_64 else []
        blocks.append((arch, [(BPF_LD_W_ABS, NR_OFFSET), *fold], numbers))
    head = 1 + len(abis) + 1  # load arch, one jump per ABI, kill
    starts, position = [], head
    for _arch, prelude, numbers in blocks:
        starts.append(position)
        position += len(prelude) + len(numbers) + 1
    deny = position
    program = [_instruction(BPF_LD_W_ABS, ARCH_OFFSET)]
    for index, (arch, _prelude, _numbers) in enumerate(blocks):
        here = 1 + index
        program.append(_instruction(BPF_JEQ_K, arch, jt=starts[index] - here - 1))
    program.append(_instruction(BPF_RET_K, SECCOMP_RET_KILL_PROCESS))
    for _arch, prelude, numbers in blocks:
        program += [_instruction(code, k) for code, k in prelude]
        for number in numbers:
            here = len(program)
            program.append(_instruction(BPF_JEQ_K, number, jt=deny - here - 1))
        program.append(_instruction(BPF_RET_K, SECCOMP_RET_ALLOW))
    program.append(_instruction(BPF_RET_K, SECCOMP_RET_ERRNO | DENIED_ERRNO))
    return b"".join(program)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_keyring_filter() -> str | None:
    """Confine the calling thread (and what it creates from now on); None when done, else why not."""
    if not sys.platform.startswith("linux"):
        return "seccomp is Linux only"
    program = keyring_filter(platform.machine())
    if program is None:
        return f"no keyring filter for the {platform.machine()} architecture"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        return f"no C library to call prctl: {exc}"
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    # With CAP_SYS_ADMIN no no_new_privs is needed, and none is set: under it a root pasta that dropped its
    # capabilities could not give them back to the bwrap it runs, which then cannot map its users.
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0:
        return None
    if ctypes.get_errno() != errno.EACCES:
        return f"prctl(PR_SET_SECCOMP) failed: {errno.errorcode.get(ctypes.get_errno(), '?')}"
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS) failed: {errno.errorcode.get(ctypes.get_errno(), '?')}"
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return f"prctl(PR_SET_SECCOMP) failed: {errno.errorcode.get(ctypes.get_errno(), '?')}"
    return None


# The signals that end a run (plugin/signals.py's and Ctrl-C): only the main thread takes them.
RUN_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


class _ConfinedSpawner:
    """One thread that carries the filter; work handed to it runs there, one piece at a time."""

    def __init__(self) -> None:
        # Each piece of work comes with a held lock that the thread lets go of when it is done: the cheapest
        # hand-back there is (an Event builds a Condition, and waiting on it a lock, each time).
        self._work: queue.SimpleQueue[tuple[Callable[[], object], list[object], threading.Lock]] = queue.SimpleQueue()
        ready = threading.Event()
        self.problem: str | None = None

        def serve() -> None:
            # A signal sent to the run must reach the main thread: delivered here, it would wake no one, and
            # the main thread would sleep in its event loop until an agent's next output or its timeout.
            # What this thread spawns starts with no signal blocked (see spawn.py's setsigmask).
            signal.pthread_sigmask(signal.SIG_BLOCK, RUN_SIGNALS)
            self.problem = install_keyring_filter()
            ready.set()
            while True:
                function, outcome, done = self._work.get()
                try:
                    outcome.append(function())
                except BaseException as exc:  # handed back to the caller, whatever it is
                    outcome.append(exc)
                    outcome.append(True)
                done.release()

        self._thread = threading.Thread(target=serve, name="recall-confined-spawner", daemon=True)
        self._thread.start()
        ready.wait()

    def run(self, function: Callable[[], _T]) -> _T:
        outcome: list[object] = []
        done = threading.Lock()
        done.acquire()
        self._work.put((function, outcome, done))
        try:
            done.acquire()
        except BaseException:
            # Ctrl-C while a child is being born: let the birth finish, so the caller's cleanup finds it.
            done.acquire()
            raise
        if len(outcome) == 2:
            raise outcome[0]  # type: ignore[misc]
        return outcome[0]  # type: ignore[return-value]


_spawner: _ConfinedSpawner | None = None
_lock = threading.Lock()


def _confined_spawner() -> _ConfinedSpawner:
    global _spawner
    with _lock:
        if _spawner is None:
            _spawner = _ConfinedSpawner()
        return _spawner


def unavailable_reason() -> str | None:
    """Why agent sessions start with a keyring here, or None when they start without one."""
    return _confined_spawner().problem


def run_confined(function: Callable[[], _T]) -> _T:
    """Run ``function`` (a spawn) on the filtered thread, so the process it starts has no keyring.

    Where the filter cannot be installed, it runs on the caller's thread, whose
    session keyring (see :mod:`pytest_recall.sessions.keyring`) the child then
    inherits: callers ask :func:`unavailable_reason` whether to make a fresh one.
    """
    spawner = _confined_spawner()
    return function() if spawner.problem is not None else spawner.run(function)
