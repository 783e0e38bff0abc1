"""The spawner: a small helper process that starts agents directly in their session's cgroup.

Moving a process into a cgroup (a write to ``cgroup.procs``) takes the
kernel's cgroup threadgroup lock for writing, which waits for an RCU grace
period whenever no migration happened just before: milliseconds of wall time
per session with a real agent, during which the harness's run loop stood
still. A process born in its cgroup pays none of it: ``clone3`` with
``CLONE_INTO_CGROUP`` takes the same lock for reading only.

Python cannot call ``clone3`` in the harness itself: the child of a raw clone
of a large, possibly threaded pytest process would run Python code in a copy
of all of it. So this process, small and single-threaded, does it for the
harness (:mod:`pytest_recall.sessions.spawner`), with ``CLONE_PARENT`` so
that the agent is the harness's own child (it waits for it and watches its
pidfd as before). Run as a script (``python -I -S spawner_main.py FD``), it
imports the standard library only, so it starts in a few milliseconds.

Each request carries the program, argv, environment, workdir, the terminal's
slave, the stderr pipe, the stdin pipe or none, and the cgroup's directory,
the descriptors as ``SCM_RIGHTS``. The harness starts it on the thread that
carries the seccomp filter against the kernel keyring, so it and every
child carry that filter (``none`` as its second argument). Where there is no
filter (``keyrings``), before each spawn it joins a fresh session keyring,
which the child inherits, and keeps it linked to its own process keyring
until the harness says the session is over, then clears it.

The child runs a few lines of Python between the clone and ``execve``:
``setsid``, the terminal made controlling, descriptors moved to 0/1/2, the
rest closed, signals back to default, then the pre-exec hooks named in the
request (``module:function``, imported once by the spawner), the place where
a filter for the agent is installed.
"""

from __future__ import annotations

import ctypes
import fcntl
import importlib
import marshal
import os
import platform
import signal
import socket
import struct
import sys
import termios
from collections.abc import Callable
from typing import Any

CLONE_PARENT = 0x00008000
CLONE_INTO_CGROUP = 0x200000000
CLONE3_SYSCALL = 435  # the same number on every architecture (the unified syscall table)
# struct clone_args up to and including ``cgroup`` (CLONE_ARGS_SIZE_VER2): eleven u64.
CLONE_ARGS = struct.Struct("11Q")
KEYCTL_SYSCALL = {"x86_64": 250, "aarch64": 219, "i686": 288, "i386": 288, "riscv64": 219, "ppc64le": 283}
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR, KEYCTL_LINK, KEYCTL_UNLINK = 1, 7, 8, 9
KEY_SPEC_PROCESS_KEYRING = -2
# A request: its payload's length, then the payload (marshal); a reply: pid, keyring, errno, stage.
HEADER = struct.Struct("Q")
REPLY = struct.Struct("qqqq")
# Where a child failed: setting itself up (the workdir, the terminal), or in execve itself.
SETUP, EXEC = 1, 2
FAILURE = struct.Struct("ii")
MAX_FDS = 8
# What Python itself sets to SIG_IGN at start-up, and a harness may ignore; an agent must not inherit it.
DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ)

# Kept with the GIL held: the child of the clone runs on in this thread, and must not wait for a lock.
_LIBC = ctypes.PyDLL(None, use_errno=True)
_LIBC.syscall.restype = ctypes.c_long


def main() -> int:
    channel = socket.socket(fileno=int(sys.argv[1]))
    # Ctrl-C reaches the harness's whole process group; the harness decides, and closes the channel.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    hooks: dict[str, Callable[[], object]] = {}
    keyrings = sys.argv[2:3] != ["none"]
    while True:
        request = _receive(channel)
        if request is None:
            return 0
        message, fds = request
        try:
            if message[0] == "clear":
                _end_keyring(int(message[1]))
                continue
            if message[0] == "path":
                sys.path[:0] = [entry for entry in message[1] if entry not in sys.path]
                continue
            reply = _spawn(message, fds, hooks, keyrings=keyrings)
        finally:
            for fd in fds:
                os.close(fd)
        channel.sendall(REPLY.pack(*reply))


def _receive(channel: socket.socket) -> tuple[tuple[Any, ...], list[int]] | None:
    """One request and its descriptors; None when the harness has gone."""
    try:
        head, ancillary, _, _ = channel.recvmsg(HEADER.size, socket.CMSG_SPACE(MAX_FDS * 4))
    except OSError:
        return None
    if len(head) < HEADER.size:
        return None
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += struct.unpack(f"{len(data) // 4}i", data[: len(data) - len(data) % 4])
    size = HEADER.unpack(head)[0]
    payload = bytearray()
    while len(payload) < size:
        chunk = channel.recv(size - len(payload))
        if not chunk:
            return None
        payload += chunk
    return marshal.loads(payload), fds


def _spawn(
    message: tuple[Any, ...], fds: list[int], hooks: dict[str, Callable[[], object]], *, keyrings: bool
) -> tuple[int, int, int, int]:
    """Clone the agent into its cgroup, as the harness's child; (pid, keyring, errno, stage) for the harness.

    A pid with an errno is a child that failed before its ``execve`` went through: the harness reaps it.
    A pid of 0 with ENOSYS (or EPERM, EINVAL) says this kernel cannot do it: the harness stops asking.
    """
    _, program, argv, env, cwd, stdin_kind, hook_names = message
    terminal, stderr, cgroup = fds[0], fds[1], fds[2]
    stdin = fds[3] if stdin_kind == "pipe" else None
    try:
        calls = [_hook(name, hooks) for name in hook_names]
    except Exception:
        return 0, -1, 22, SETUP  # EINVAL: a hook that cannot be found; the harness says so
    keyring = _join_fresh_keyring() if keyrings else -1
    report_read, report_write = os.pipe()  # close-on-exec: EOF here means the execve went through
    try:
        arguments = CLONE_ARGS.pack(CLONE_INTO_CGROUP | CLONE_PARENT, 0, 0, 0, 0, 0, 0, 0, 0, 0, cgroup)
        buffer = ctypes.create_string_buffer(arguments, len(arguments))
        pid = _LIBC.syscall(CLONE3_SYSCALL, buffer, ctypes.c_size_t(len(arguments)))
        if pid == 0:
            _child(program, argv, env, cwd, terminal, stderr, stdin, stdin_kind == "live", calls, report_write)
        if pid < 0:
            return 0, keyring, ctypes.get_errno(), 0
        os.close(report_write)
        report_write = -1
        failed = b""
        while chunk := os.read(report_read, FAILURE.size):
            failed += chunk
        stage, error = FAILURE.unpack(failed[: FAILURE.size]) if len(failed) >= FAILURE.size else (0, 0)
        return pid, keyring, error, stage
    finally:
        os.close(report_read)
        if report_write >= 0:
            os.close(report_write)


def _child(
    program: str,
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    terminal: int,
    stderr: int,
    stdin: int | None,
    live: bool,
    hooks: list[Callable[[], object]],
    report: int,
) -> None:
    """Between the clone and ``execve``; never returns. A failure is reported (stage, errno), then exit 127."""
    stage = SETUP
    try:
        os.setsid()
        fcntl.ioctl(terminal, termios.TIOCSCTTY, 0)
        if live:
            os.dup2(terminal, 0)
        elif stdin is not None:
            os.dup2(stdin, 0)
        else:
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
        os.dup2(terminal, 1)
        os.dup2(stderr, 2)
        os.chdir(cwd)
        for number in DEFAULT_SIGNALS:
            signal.signal(number, signal.SIG_DFL)
        os.closerange(3, report)
        os.closerange(report + 1, 1 << 20)
        for hook in hooks:
            hook()
        stage = EXEC
        os.execve(program, argv, env)
    except BaseException as exc:
        code = exc.errno if isinstance(exc, OSError) and exc.errno else 22
        os.write(report, FAILURE.pack(stage, code))
    os._exit(127)


def _hook(name: str, hooks: dict[str, Callable[[], object]]) -> Callable[[], object]:
    if name not in hooks:
        module, _, function = name.partition(":")
        hooks[name] = getattr(importlib.import_module(module), function)
    return hooks[name]


def _keyctl(*args: object) -> int:
    number = KEYCTL_SYSCALL.get(platform.machine())
    return -1 if number is None else int(_LIBC.syscall(number, *args))


def _join_fresh_keyring() -> int:
    """A new session keyring for the next child, kept (linked to the process keyring) until its session ends."""
    serial = _keyctl(KEYCTL_JOIN_SESSION_KEYRING, None)
    if serial >= 0:
        _keyctl(KEYCTL_LINK, serial, KEY_SPEC_PROCESS_KEYRING)
    return serial


def _end_keyring(serial: int) -> None:
    """Drop every key of a finished session's keyring now, rather than when the kernel collects it."""
    if serial >= 0:
        _keyctl(KEYCTL_CLEAR, serial)
        _keyctl(KEYCTL_UNLINK, serial, KEY_SPEC_PROCESS_KEYRING)


if __name__ == "__main__":
    raise SystemExit(main())
