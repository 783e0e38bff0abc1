"""One agent session in flight: its process, its output, its deadlines and its end.

The driver (:mod:`pytest_recall.sessions.driver`) feeds each session the
events of its descriptors; this module decides what they mean. A live
session's turns (when to type, what was answered) are
:mod:`pytest_recall.sessions.live_turns`, fed by the output read here. The session
ends when its main process exits: whatever it left behind is killed then,
through the session's cgroup (:mod:`pytest_recall.sessions.cgroup`) where
there is one, else by group and token (:mod:`pytest_recall.sessions.reaper`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_recall.cases import DEFAULT_PROTOCOL, LiveProtocol, SessionResult
from pytest_recall.sessions.capture import HeadTailBuffer
from pytest_recall.sessions.cgroup import SessionCgroup
from pytest_recall.sessions.live_turns import LiveTurns
from pytest_recall.sessions.reaper import (
    SESSION_TOKEN_VAR,
    kill_tagged_processes,
    pids_allocated_since,
    process_group,
    signal_group,
)
from pytest_recall.sessions.spawn import AgentProcess, spawn_agent

READ_CHUNK = 1 << 16
# Without a pidfd the loop must wake to notice an exit; this bounds the delay.
POLL_INTERVAL_S = 0.05
# A pty hands out about 4 KiB per read; a few reads per wakeup save select calls in a
# flood, and the bound keeps one flooding session from starving the others.
READS_PER_WAKEUP = 16


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """How to run one session. ``turns`` are only for live (continue) sessions."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    timeout_s: float
    grace_s: float
    max_output_bytes: int
    turns: tuple[str, ...] = ()
    compose_turn: Callable[[int, str], str] | None = None
    protocol: LiveProtocol = DEFAULT_PROTOCOL
    ok_exit_codes: tuple[int, ...] = (0,)
    # ``--recall-prompt=stdin``: written to the agent's stdin pipe, then EOF.
    stdin: bytes | None = None


class RunningSession:
    """One agent process in flight. The driver feeds it events."""

    def __init__(self, spec: SessionSpec) -> None:
        self.spec = spec
        # 32 random hex digits, as uuid4().hex has, without building a UUID object a session.
        self.token = os.urandom(16).hex()
        env = dict(spec.env)
        env[SESSION_TOKEN_VAR] = self.token
        self._stdout = HeadTailBuffer(spec.max_output_bytes)
        self._stderr = HeadTailBuffer(spec.max_output_bytes)
        # A live (continue) session's turns; None for a fresh session, which only runs.
        self.turns = LiveTurns(spec.turns, spec.protocol, spec.compose_turn) if spec.turns else None
        self.kill_at: float | None = None
        self.timed_out = False
        self.finished: SessionResult | None = None
        # Where the machine allows it, the session's processes are born in a cgroup of their own.
        self.cgroup = SessionCgroup.create(self.token)
        try:
            self.child: AgentProcess = spawn_agent(
                spec.argv,
                cwd=str(spec.cwd),
                env=env,
                typed=bool(spec.turns),  # live turns are typed to its terminal
                stdin_pipe=spec.stdin is not None,
                cgroup=self.cgroup,
            )
        except BaseException:
            # Ctrl-C between the spawn and its return: the child exists but no one holds it yet.
            self._kill_everything()
            if self.cgroup is not None:
                self.cgroup.remove()
            raise
        # The agent's time starts when it does, not when the harness began to set it up.
        self.started = self._last_output = time.monotonic()
        self.deadline = self.started + spec.timeout_s
        self.pidfd = self.child.pidfd
        self.stdout_fd: int | None = self.child.terminal_fd
        self.stderr_fd: int | None = self.child.stderr_fd
        self._stdin_left = memoryview(spec.stdin or b"")
        if spec.stdin is not None:
            self.write_stdin()
        self._reads_per_wakeup = READS_PER_WAKEUP

    # -- events -------------------------------------------------------------
    def read_stdout(self) -> bool:
        """Read what the pty holds. False at end of file.

        The descriptor is read directly rather than through pexpect's
        ``read_nonblocking``, which checks the child's liveness on every call
        and so halves the rate at which a flood is drained.
        """
        for _ in range(self._reads_per_wakeup):
            chunk = _read_chunk(self.child.terminal_fd)
            if chunk is None:
                return True
            if not chunk:
                return False
            self._stdout.feed(chunk)
            if self.turns is not None:
                self.turns.feed(chunk)
        return True

    @property
    def stdin_fd(self) -> int | None:
        """The stdin pipe while the prompt is still going in; the driver waits for it to take more."""
        return self.child.stdin_fd

    def write_stdin(self) -> None:
        """Write what the pipe takes now; at the end, close it, so the agent reads EOF."""
        while self._stdin_left:
            try:
                written = os.write(self.child.stdin_fd, self._stdin_left)  # type: ignore[arg-type]
            except BlockingIOError:
                return
            except OSError:
                break  # the agent closed its stdin or exited: nothing more will be read
            self._stdin_left = self._stdin_left[written:]
        self.child.close_stdin()

    def read_stderr(self) -> bool:
        chunk = _read_chunk(self.child.stderr_fd)
        if chunk is None:
            return True
        if not chunk:
            return False
        self._stderr.feed(chunk)
        return True

    def next_wakeup(self) -> float:
        wake = self.kill_at if self.kill_at is not None else self.deadline
        turns = self.turns
        if self.pidfd is None or (turns is not None and (not turns.input_closed or turns.typing)):
            wake = min(wake, time.monotonic() + POLL_INTERVAL_S)
        return wake

    def tick(self, now: float) -> None:
        """Deadlines: TERM the group at the timeout, KILL it after the grace."""
        if self.turns is not None:
            self.turns.drive(now, self.child.send, self.child.eof_byte, ending=self.kill_at is not None)
        if self.kill_at is None and now >= self.deadline:
            self.timed_out = True
            signal_group(self.child.pid, signal.SIGTERM)
            self.kill_at = now + self.spec.grace_s
        elif self.kill_at is not None and now >= self.kill_at:
            signal_group(self.child.pid, signal.SIGKILL)
            self.kill_at = now + 3600

    def main_exited(self) -> bool:
        return self.child.poll()

    def finish(self) -> SessionResult:
        """Kill what the agent left behind, drain, and close everything."""
        # Leftovers are counted before the group is killed, so the count says what the agent
        # left running rather than how fast the kernel reaped it. After a timeout the group
        # has been signalled already: only processes that left it count then.
        uncounted_group = self.child.pid if self.timed_out else None
        leftovers = 0
        if self.cgroup is not None:
            members = self.cgroup.pids()
            leftovers = self._cgroup_leftovers(members, uncounted_group)
            if members != []:
                # Only a cgroup with something still in it is killed; an empty one is reused as it is.
                self.cgroup.kill()
        # After cgroup.kill too: a root agent can move a process into another cgroup, where that kill
        # cannot reach it; it still carries the token (what it can do beyond is in docs/sandbox.md).
        leftovers += kill_tagged_processes(
            self.token,
            uncounted_group=uncounted_group,
            candidates=pids_allocated_since(self.child.pid, self.started),
            uncounted_cgroup=self.cgroup.path.name if self.cgroup is not None else None,
        )
        # The main process is a zombie until reaped below, so the group's id is still this session's.
        signal_group(self.child.pid, signal.SIGKILL)
        # Everything that could write is dead now, so draining terminates. Both descriptors are
        # non-blocking: read until there is nothing more, with no select() to ask first.
        if self.stdout_fd is not None:
            self._drain(self.stdout_fd, self._stdout, self.turns.feed if self.turns is not None else None)
        if self.stderr_fd is not None:
            self._drain(self.stderr_fd, self._stderr, None)
        self.child.reap()
        self.child.close()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if self.turns is not None:
            self.turns.close_unfinished()
        exit_code = self.child.exit_code
        sig = self.child.signal
        self.finished = SessionResult(
            exit_code=exit_code,
            signal=sig,
            timed_out=self.timed_out,
            duration_s=time.monotonic() - self.started,
            stdout=self._stdout.getvalue(),
            stderr=self._stderr.getvalue(),
            stdout_bytes=self._stdout.total,
            stderr_bytes=self._stderr.total,
            truncated=self._stdout.truncated or self._stderr.truncated,
            killed_leftovers=leftovers,
            turns=tuple(self.turns.results) if self.turns is not None else (),
            ok_exit_codes=self.spec.ok_exit_codes,
        )
        return self.finished

    @staticmethod
    def _drain(fd: int, buffer: HeadTailBuffer, also: Callable[[bytes], None] | None) -> None:
        while chunk := _read_chunk(fd):
            buffer.feed(chunk)
            if also is not None:
                also(chunk)

    def abort(self) -> None:
        """Used on interrupt: nothing of the agent may outlive the harness."""
        signal_group(self.child.pid, signal.SIGKILL)
        self._kill_everything()
        with contextlib.suppress(Exception):
            self.finish()

    def _kill_everything(self) -> None:
        if self.cgroup is not None:
            self.cgroup.kill()
        kill_tagged_processes(self.token)

    def _cgroup_leftovers(self, members: list[int] | None, uncounted_group: int | None) -> int:
        """The processes still in the session's cgroup besides the main one, counted before they are killed."""
        pids = [pid for pid in members or () if pid != self.child.pid]
        if uncounted_group is None:
            return len(pids)
        return sum(process_group(str(pid)) != uncounted_group for pid in pids)


def _read_chunk(fd: int) -> bytes | None:
    """What the descriptor holds now: None when nothing yet, empty at end of file.

    Linux reports a pty whose other side is closed as EIO, which is end of file too.
    """
    try:
        return os.read(fd, READ_CHUNK)
    except BlockingIOError:
        return None
    except OSError:
        return b""
