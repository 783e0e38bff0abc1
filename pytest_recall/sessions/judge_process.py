"""One judge process: born in a cgroup of its own, fed its request, read with its output capped, ended whole.

A judge is the user's command, but nothing it starts is the run's to keep: a
wrapper that backgrounds a helper still holding the judge's stdout, a plugin
that leaves a server, a daemon that closed its output and sleeps. So where the
harness may make cgroups (:mod:`pytest_recall.sessions.cgroup`) a judge is born
in a slot cgroup of its own, as an agent session is, and once its verdict is in
(its main process exited), its time is up or the run is ending, every process
left in that cgroup is killed (``setsid`` or a closed stdout does not get one
out). Elsewhere its process group and every process carrying its token
(:data:`JUDGE_TOKEN_VAR`) are killed.

The end of a judge is read from its main process's exit, never from its pipes'
end of file, which a leftover can hold open for ever; what the main process
printed is in the pipes by then, and is drained once everything is dead. Its
stdout is read as it comes and capped at :data:`MAX_JUDGE_OUTPUT` (a judge
that prints more is stopped there, not read whole), its stderr keeps a tail.
The ``stop`` event, set when the run ends (Ctrl-C, SIGTERM), ends a judge
within :data:`WAKE_S`, so no judge keeps pytest from exiting.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from pytest_recall.sessions.capture import HeadTailBuffer
from pytest_recall.sessions.cgroup import SessionCgroup, outside_sessions
from pytest_recall.sessions.reaper import kill_tagged_processes, pids_allocated_since

# A verdict is a line; more than this on stdout is a broken judge, not a slower one.
MAX_JUDGE_OUTPUT = 1 << 20
# What the error line quotes comes from the end of stderr; the rest is not kept.
STDERR_KEPT = 8 * 1024
# How often a running judge looks at the run's stop event.
WAKE_S = 0.1
# Marks every process a judge starts, for the kill where no cgroup can be made.
JUDGE_TOKEN_VAR = "RECALL_JUDGE_TOKEN"
_READ_CHUNK = 1 << 16


class JudgeStopped(Exception):
    """The run is ending: the judge was killed before its verdict."""


@dataclass(frozen=True, slots=True)
class JudgeOutput:
    """What a judge printed, and how it ended: ``problem`` says why it has no exit code (timeout, too much output)."""

    stdout: bytes
    stderr: bytes
    exit_code: int | None
    problem: str | None = None


def run_judge_process(
    argv: Sequence[str],
    payload: bytes,
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout_s: float,
    stop: threading.Event | None = None,
) -> JudgeOutput:
    """Run the judge once on ``payload``; raises OSError when it cannot start, JudgeStopped when the run ends."""
    if stop is not None and stop.is_set():
        raise JudgeStopped("the run is ending")
    token = os.urandom(16).hex()
    cgroup = SessionCgroup.create(kind="judge")
    started = time.monotonic()
    try:
        # Started from a judging thread while sessions start on the loop's: in its own cgroup, never an agent's.
        with cgroup.entered() if cgroup is not None else outside_sessions():
            process = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env={**env, JUDGE_TOKEN_VAR: token},
                start_new_session=True,
            )
    except BaseException:
        if cgroup is not None:
            cgroup.remove()
        raise
    reading = _Reading(process, payload)
    problem: str | None = "stopped"
    try:
        problem = reading.until_exit(started + timeout_s, stop)
        if problem == "timeout":
            problem = f"timed out after {timeout_s:g}s"
    finally:
        _end_all(process, cgroup, token, started)
        if problem is None:
            reading.drain()
        reading.close()
    if problem is None and len(reading.stdout) > MAX_JUDGE_OUTPUT:
        problem = f"printed more than {MAX_JUDGE_OUTPUT >> 20} MiB on stdout; a verdict is one line"
    return JudgeOutput(bytes(reading.stdout), reading.stderr.getvalue(), process.returncode, problem)


class _Reading:
    """The judge's three pipes, non-blocking: its request written in, stdout kept up to the cap, a tail of stderr."""

    def __init__(self, process: subprocess.Popen[bytes], payload: bytes) -> None:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self.process = process
        self.stdout = bytearray()
        self.stderr = HeadTailBuffer(STDERR_KEPT)
        self._left = memoryview(payload)
        self._selector = selectors.DefaultSelector()
        for pipe in (process.stdin, process.stdout, process.stderr):
            os.set_blocking(pipe.fileno(), False)
        self._selector.register(process.stdin, selectors.EVENT_WRITE)
        self._selector.register(process.stdout, selectors.EVENT_READ)
        self._selector.register(process.stderr, selectors.EVENT_READ)
        # Readable when the main process exits: the loop wakes then rather than at its next look.
        self._exit_fd: int | None = None
        with contextlib.suppress(OSError, AttributeError):
            self._exit_fd = os.pidfd_open(process.pid)
            self._selector.register(self._exit_fd, selectors.EVENT_READ)

    def until_exit(self, deadline: float, stop: threading.Event | None) -> str | None:
        """None once the main process has exited; "timeout", or the cap's line, when it must be stopped."""
        while not _has_exited(self.process.pid):
            if stop is not None and stop.is_set():
                raise JudgeStopped("the run is ending")
            wait = deadline - time.monotonic()
            if wait <= 0:
                return "timeout"
            for key, _ in self._selector.select(min(wait, WAKE_S)):
                if key.fileobj is self.process.stdin:
                    self._write()
                elif key.fileobj is not self._exit_fd:
                    self._read(key.fileobj)  # type: ignore[arg-type]  # stdout or stderr: a BinaryIO
            if len(self.stdout) > MAX_JUDGE_OUTPUT:
                return f"printed more than {MAX_JUDGE_OUTPUT >> 20} MiB on stdout; a verdict is one line"
        return None

    def drain(self) -> None:
        """What the pipes still hold, once no process of the judge is left to write more (a bounded read)."""
        for pipe in (self.process.stdout, self.process.stderr):
            for _ in range(MAX_JUDGE_OUTPUT // _READ_CHUNK + 2):
                if pipe is None or not self._read(pipe) or len(self.stdout) > MAX_JUDGE_OUTPUT:
                    break

    def close(self) -> None:
        self._selector.close()
        if self._exit_fd is not None:
            os.close(self._exit_fd)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def _write(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            self._left = self._left[os.write(stdin.fileno(), self._left) :]
        except BlockingIOError:
            return
        except OSError:
            self._left = self._left[:0]  # it closed its stdin or exited: nothing more will be read
        if not self._left:
            self._selector.unregister(stdin)
            stdin.close()

    def _read(self, pipe: IO[bytes]) -> bool:
        """One chunk from ``pipe`` into its buffer; False when it has nothing now or is at its end."""
        fd = pipe.fileno()
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(pipe)
            return False
        if pipe is self.process.stdout:
            self.stdout += chunk
        else:
            self.stderr.feed(chunk)
        return True


def _has_exited(pid: int) -> bool:
    """Whether the main process has exited, left unreaped: its pid (and group) stay its own until the end."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _end_all(process: subprocess.Popen[bytes], cgroup: SessionCgroup | None, token: str, started: float) -> None:
    """Kill the judge and everything it started, reap it and free its cgroup; nothing of it outlives this."""
    if cgroup is not None:
        if cgroup.pids() != []:
            cgroup.kill()
    else:
        kill_tagged_processes(token, variable=JUDGE_TOKEN_VAR, candidates=pids_allocated_since(process.pid, started))
    # The main process is unreaped until below, so its group's id is still the judge's.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
    if cgroup is not None:
        cgroup.remove()
