"""The harness's end of the spawner (:mod:`pytest_recall.sessions.spawner_main`).

One spawner per harness process (an xdist worker has its own), started on the
first session that has a cgroup, and ended with the harness: it reads end of
file on its channel and exits. Where it cannot work (no ``clone3``, or a
seccomp filter that refuses it, as container runtimes often do), it says so
on the first request; :func:`get` returns None from then on, and sessions
fall back to moving the harness into the cgroup for the instant of the spawn.
It is started on the thread that carries the seccomp filter
(:mod:`pytest_recall.sessions.seccomp`), so it and every agent it clones
carry that filter too.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import marshal
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_recall.sessions import seccomp
from pytest_recall.sessions.spawner_main import HEADER, REPLY, SETUP

SCRIPT = Path(__file__).with_name("spawner_main.py")
# Errors that say this kernel (or a filter) will not clone into a cgroup: fall back, do not fail the session.
UNSUPPORTED = (errno.ENOSYS, errno.EPERM, errno.EINVAL, errno.E2BIG, errno.EOPNOTSUPP)


class SpawnerGone(Exception):
    """The spawner cannot start this session (it exited, or the kernel refuses); the caller falls back."""


class ChildSetupError(OSError):
    """The agent's process could not set itself up before its ``execve`` (its workdir is gone, say)."""


class Spawner:
    """A running spawner process and the channel to it."""

    def __init__(self, *, keyrings: bool) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(SCRIPT), str(theirs.fileno()), "keyrings" if keyrings else "none"],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        self._channel = ours
        self._hooks_path_sent = False

    def spawn(
        self,
        program: str,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        *,
        terminal: int,
        stderr: int,
        stdin: int | None,
        live: bool,
        cgroup_fd: int,
        hooks: tuple[str, ...] = (),
    ) -> tuple[int, int | None]:
        """(pid, session keyring) of an agent born in the cgroup, a child of this process.

        Raises OSError for what the agent's own start did wrong (not found, not
        executable), :class:`SpawnerGone` for what the spawner cannot do.
        """
        if hooks and not self._hooks_path_sent:
            self._send(("path", list(sys.path)), [])
            self._hooks_path_sent = True
        stdin_kind = "live" if live else "pipe" if stdin is not None else "null"
        fds = [terminal, stderr, cgroup_fd, *([stdin] if stdin is not None else [])]
        self._send(("spawn", program, argv, env, cwd, stdin_kind, hooks), fds)
        reply = self._receive()
        pid, keyring, error, stage = REPLY.unpack(reply)
        if pid == 0:
            if error in UNSUPPORTED:
                raise SpawnerGone(os.strerror(error))
            raise OSError(error, os.strerror(error))
        if error:
            # The child failed before its execve (no such program, a workdir gone): it is ours to reap.
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            self.end_keyring(keyring)
            raise (ChildSetupError if stage == SETUP else OSError)(error, os.strerror(error))
        return pid, keyring if keyring >= 0 else None

    def end_keyring(self, serial: int | None) -> None:
        """The session is over: its keyring's keys are dropped (no reply awaited; the channel keeps the order)."""
        if serial is not None and serial >= 0:
            with contextlib.suppress(SpawnerGone):
                self._send(("clear", serial), [])

    def _send(self, message: tuple[Any, ...], fds: list[int]) -> None:
        payload = marshal.dumps(message)
        try:
            self._channel.sendmsg([HEADER.pack(len(payload))], [socket_rights(fds)] if fds else [])
            self._channel.sendall(payload)
        except OSError as exc:
            raise SpawnerGone(f"the spawner is gone: {exc}") from None

    def _receive(self) -> bytes:
        reply = b""
        while len(reply) < REPLY.size:
            try:
                chunk = self._channel.recv(REPLY.size - len(reply))
            except OSError as exc:
                raise SpawnerGone(f"the spawner is gone: {exc}") from None
            if not chunk:
                raise SpawnerGone("the spawner is gone")
            reply += chunk
        return reply

    def close(self) -> None:
        """End of file for the spawner, which exits; then it is reaped."""
        self._channel.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=5)
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()


def socket_rights(fds: list[int]) -> tuple[int, int, bytes]:
    return (socket.SOL_SOCKET, socket.SCM_RIGHTS, b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds))


_current: tuple[int, Spawner] | None = None
_refused = False


def get() -> Spawner | None:
    """This process's spawner, started on first use; None where it cannot work here."""
    global _current
    if _refused or not sys.platform.startswith("linux"):
        return None
    if _current is not None and _current[0] == os.getpid():
        return _current[1]
    try:
        # Started on the filtered thread, the spawner and every agent it clones carry its filter:
        # no keyring at all. Where there is no filter, it gives each agent a fresh session keyring.
        spawner = seccomp.run_confined(lambda: Spawner(keyrings=seccomp.unavailable_reason() is not None))
    except OSError:
        refuse()
        return None
    _current = (os.getpid(), spawner)
    atexit.register(spawner.close)
    return spawner


def refuse() -> None:
    """The spawner cannot work here: stop asking, and let the sessions fall back."""
    global _refused, _current
    _refused = True
    if _current is not None and _current[0] == os.getpid():
        with contextlib.suppress(OSError):
            _current[1].close()
    _current = None
