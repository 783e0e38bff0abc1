"""Agent sessions: one fresh process each, on a pseudo-terminal, driven by pexpect.

This is the only module that imports pexpect. Many sessions can be in
flight at once on one event loop (:class:`SessionDriver`): agents spend their
time waiting on model APIs, so concurrency is a matter of file descriptors,
not of threads or cores. Threads are avoided on purpose: forking a pty from a
multi-threaded process is unsafe, and on Linux a session starts through
:mod:`pytest_recall.sessions.ptyspawn` (``posix_spawn``, no copy of the harness), which
steps into the session's directory for the instant of the spawn.

Each session's stdout is the pty (agents that check ``isatty`` behave as
they would for a person); stderr goes to a pipe of its own, so it never
reaches the judged text; stdin is ``/dev/null`` so a reader sees EOF at once
(in a live session it is the terminal, where the harness writes each turn).
The session ends when its main process exits: whatever it left behind in its
process group, or anywhere else carrying its session token, is killed then.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import select
import selectors
import signal
import termios
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pexpect
import ptyprocess  # type: ignore[import-untyped]

from pytest_recall.sessions import ptyspawn
from pytest_recall.sessions.capture import HeadTailBuffer
from pytest_recall.sessions.reaper import (
    SESSION_TOKEN_VAR,
    kill_tagged_processes,
    pids_allocated_since,
    signal_group,
)

READ_CHUNK = 1 << 16
# Without a pidfd the loop must wake to notice an exit; this bounds the delay.
POLL_INTERVAL_S = 0.05
DEFAULT_READY_IDLE_S = 1.0
# A live session's answer to one turn is read from this much recent output.
LIVE_WINDOW_BYTES = 1 << 16
# What a pty's line discipline reads as end of input when its termios cannot be asked (Ctrl-D).
DEFAULT_EOF_BYTE = b"\x04"
# A terminal in line mode keeps at most this many bytes of one line and drops the rest.
MAX_TURN_LINE_BYTES = 4095
# A pty hands out about 4 KiB per read; a few reads per wakeup save select calls in a
# flood, and the bound keeps one flooding session from starving the others.
READS_PER_WAKEUP = 16
# Rows and columns of every session's terminal: wide, so answers are not wrapped.
TERMINAL_SIZE = (24, 200)


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
    ready_pattern: str | None = None
    ready_idle_s: float | None = None


@dataclass(frozen=True, slots=True)
class SessionResult:
    """What one session did. Output is raw bytes, already capped."""

    exit_code: int | None
    signal: int | None
    timed_out: bool
    duration_s: float
    stdout: bytes
    stderr: bytes
    stdout_bytes: int
    stderr_bytes: int
    truncated: bool
    start_error: str | None = None
    killed_leftovers: int = 0
    turns: tuple[TurnResult, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class TurnResult:
    """One turn of a live session: the prompt sent, and the answer read back.

    The answer is the output from the send until the agent looked ready for
    more, without the ready prompt itself; ``finished`` is False for a turn
    the session ended in (exit or timeout) before the agent looked ready.
    """

    prompt: str
    answer: bytes
    duration_s: float
    finished: bool


class AgentStartError(Exception):
    """The agent command could not be started at all."""


def _open_stderr_pipe() -> tuple[int, int]:
    """An anonymous pipe for the child's stderr: (read end, non-blocking; write end)."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    return read_fd, write_fd


def _child_setup(stderr_fd: int, stdin_is_null: bool) -> Callable[[], None]:
    """What a forked child does before exec, where :mod:`ptyspawn` is not available."""

    def setup() -> None:
        os.dup2(stderr_fd, 2)
        if stdin_is_null:
            null_fd = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null_fd, 0)
            os.close(null_fd)
        # The harness may run with SIGINT or SIGPIPE ignored; agents must not inherit that.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)

    return setup


if TYPE_CHECKING:
    _Spawn = pexpect.spawn[bytes]
else:
    _Spawn = pexpect.spawn


class AgentProcess(_Spawn):
    """pexpect's ``spawn``, started by ``posix_spawn`` where that can give it a terminal.

    Everything after the start (reads, ``send``, ``sendeof``, ``isalive``,
    ``close``) is pexpect's own; only :meth:`_spawnpty` differs, because
    ptyprocess forks the whole harness for every session (see :mod:`ptyspawn`).
    """

    pid: int
    ptyproc: Any

    def __init__(
        self, argv: tuple[str, ...], *, cwd: str, env: Mapping[str, str], stderr_fd: int, stdin_is_null: bool
    ) -> None:
        self._stderr_fd_for_child = stderr_fd
        self._stdin_is_null = stdin_is_null
        super().__init__(argv[0], list(argv[1:]), cwd=cwd, env=env, echo=False, dimensions=TERMINAL_SIZE)
        # pexpect's defaults sleep 100 ms on close and terminate; the harness
        # reaps and kills the process group itself, so the sleeps buy nothing.
        self.delayafterclose = 0
        self.delayafterterminate = 0
        self.ptyproc.delayafterclose = 0
        self.ptyproc.delayafterterminate = 0

    def _spawnpty(self, args: list[str], **kwargs: Any) -> Any:
        if ptyspawn.AVAILABLE:
            pid, fd = ptyspawn.spawn_on_terminal(
                args,
                cwd=kwargs["cwd"],
                env=kwargs["env"],
                stderr_fd=self._stderr_fd_for_child,
                stdin_from_terminal=not self._stdin_is_null,
                rows=TERMINAL_SIZE[0],
                cols=TERMINAL_SIZE[1],
            )
            return ptyprocess.PtyProcess(pid, fd)
        kwargs["preexec_fn"] = _child_setup(self._stderr_fd_for_child, self._stdin_is_null)
        return ptyprocess.PtyProcess.spawn(args, pass_fds=(self._stderr_fd_for_child,), **kwargs)


class RunningSession:
    """One agent process in flight. The driver feeds it events."""

    def __init__(self, spec: SessionSpec) -> None:
        self.spec = spec
        self.token = uuid.uuid4().hex
        env = dict(spec.env)
        env[SESSION_TOKEN_VAR] = self.token
        self._stdout = HeadTailBuffer(spec.max_output_bytes)
        self._stderr = HeadTailBuffer(spec.max_output_bytes)
        self._turns = list(spec.turns)
        self._input_closed = not spec.turns
        self._ready_pattern = re.compile(spec.ready_pattern) if spec.ready_pattern is not None else None
        self._turn_results: list[TurnResult] = []
        self._in_flight: tuple[str, float] | None = None
        self._pending_input = bytearray()
        self._pattern_checked_at = -1
        self._since_send = bytearray()
        self._last_output = time.monotonic()
        self.started = time.monotonic()
        self.deadline = self.started + spec.timeout_s
        self.kill_at: float | None = None
        self.timed_out = False
        self.finished: SessionResult | None = None
        _refuse_nul_bytes(spec.argv, env)
        self._stderr_fd, stderr_for_child = _open_stderr_pipe()
        try:
            self.child = AgentProcess(
                spec.argv, cwd=str(spec.cwd), env=env, stderr_fd=stderr_for_child, stdin_is_null=not spec.turns
            )
        except (pexpect.ExceptionPexpect, OSError) as exc:
            os.close(self._stderr_fd)
            raise AgentStartError(_start_error_text(spec.argv[0], exc)) from None
        except BaseException:
            # Ctrl-C between fork and return: the child exists but no one holds it yet.
            os.close(self._stderr_fd)
            kill_tagged_processes(self.token)
            raise
        finally:
            # The child holds its own copy; ours would keep the pipe from ever reaching EOF.
            os.close(stderr_for_child)
        self.pidfd = _pidfd(self.child.pid)
        self.stdout_fd: int | None = self.child.child_fd
        self.stderr_fd: int | None = self._stderr_fd
        self._eof_byte = _eof_byte(self.child.child_fd)
        if not spec.turns:
            # stdin is /dev/null, but an agent that finds a terminal may read /dev/tty
            # ("press enter"); end of file there too, or it waits for a person until the timeout.
            self.child.sendeof()
        # Non-blocking both ways: reads drain a flood, and a live session's prompt is written
        # as the agent takes it in (see _write_pending), never stalling the other sessions.
        os.set_blocking(self.child.child_fd, False)
        self._reads_per_wakeup = READS_PER_WAKEUP

    # -- events -------------------------------------------------------------
    def read_stdout(self) -> bool:
        """Read what the pty holds. False at end of file.

        The descriptor is read directly rather than through pexpect's
        ``read_nonblocking``, which checks the child's liveness on every call
        and so halves the rate at which a flood is drained.
        """
        for _ in range(self._reads_per_wakeup):
            try:
                chunk = os.read(self.child.child_fd, READ_CHUNK)
            except BlockingIOError:
                return True
            except OSError:
                # Linux reports a pty whose other side is closed as EIO.
                return False
            if not chunk:
                return False
            self._stdout.feed(chunk)
            self._last_output = time.monotonic()
            if self.spec.turns:
                self._since_send += chunk
                del self._since_send[:-LIVE_WINDOW_BYTES]
        return True

    def read_stderr(self) -> bool:
        try:
            chunk = os.read(self._stderr_fd, READ_CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not chunk:
            return False
        self._stderr.feed(chunk)
        return True

    def _ready_answer(self, now: float) -> str | None:
        """The answer to the turn in flight once the agent looks ready for the next; else None.

        With a ready pattern, the agent is ready when the pattern shows in the
        output since the last send, and the answer is what came before its last
        match. Without one, the agent is ready once it has been quiet for the
        idle period, and, after a turn was sent, has said something since.
        """
        if self._pending_input:
            return None
        if self._ready_pattern is not None:
            if self._pattern_checked_at == self._stdout.total:
                return None  # nothing new to search since the last look
            self._pattern_checked_at = self._stdout.total
            return self._before_ready_prompt(self._since_send.decode("utf-8", "replace"))
        idle = self.spec.ready_idle_s if self.spec.ready_idle_s is not None else DEFAULT_READY_IDLE_S
        if now - self._last_output < idle or (self._in_flight is not None and not self._since_send):
            return None
        return self._since_send.decode("utf-8", "replace")

    def _before_ready_prompt(self, text: str) -> str | None:
        """``text`` up to the last match of the ready pattern; None when the pattern does not show."""
        matches = list(self._ready_pattern.finditer(text)) if self._ready_pattern is not None else []
        return text[: matches[-1].start()] if matches else None

    def _drive_turns(self, now: float) -> None:
        """Live sessions: send the next prompt when ready; after the last answer, end the input."""
        self._write_pending()
        if self._input_closed or self.kill_at is not None:
            return
        answer = self._ready_answer(now)
        if answer is None:
            return
        if self._in_flight is not None:
            self._close_turn(answer.encode("utf-8"), now, finished=True)
        if self._turns:
            prompt = self._turns.pop(0)
            if self.spec.compose_turn is not None:
                previous = self._turn_results[-1].answer.decode("utf-8", "replace") if self._turn_results else ""
                prompt = self.spec.compose_turn(len(self._turn_results), previous)
            self._in_flight = (prompt, now)
            self._pending_input += (prompt if prompt.endswith("\n") else prompt + "\n").encode("utf-8")
        else:
            self._pending_input += self._eof_byte
            self._input_closed = True
        self._since_send.clear()
        self._last_output = now
        self._write_pending()

    def _write_pending(self) -> None:
        """Write as much of the pending input as the pty takes now.

        A terminal in canonical mode buffers about 4 KiB of unread input; a
        longer prompt goes in as the agent reads it. The idle clock starts when
        the last byte is in, not when the turn was queued.
        """
        while self._pending_input:
            try:
                written = os.write(self.child.child_fd, self._pending_input)
            except BlockingIOError:
                return
            except OSError:
                self._pending_input.clear()  # the agent is gone: nothing will read it
                return
            del self._pending_input[:written]
            if not self._pending_input:
                self._last_output = time.monotonic()

    def _close_turn(self, answer: bytes, now: float, *, finished: bool) -> None:
        assert self._in_flight is not None
        prompt, sent_at = self._in_flight
        self._turn_results.append(TurnResult(prompt, answer, now - sent_at, finished))
        self._in_flight = None

    def next_wakeup(self) -> float:
        wake = self.kill_at if self.kill_at is not None else self.deadline
        if self.pidfd is None or (self.spec.turns and not self._input_closed) or self._pending_input:
            wake = min(wake, time.monotonic() + POLL_INTERVAL_S)
        return wake

    def tick(self, now: float) -> None:
        """Deadlines: TERM the group at the timeout, KILL it after the grace."""
        if self.spec.turns:
            self._drive_turns(now)
        if self.kill_at is None and now >= self.deadline:
            self.timed_out = True
            signal_group(self.child.pid, signal.SIGTERM)
            self.kill_at = now + self.spec.grace_s
        elif self.kill_at is not None and now >= self.kill_at:
            signal_group(self.child.pid, signal.SIGKILL)
            self.kill_at = now + 3600

    def main_exited(self) -> bool:
        return not self.child.isalive()

    def finish(self) -> SessionResult:
        """Kill what the agent left behind, drain, and close everything."""
        # Leftovers are counted before the group is killed, so the count says what the agent
        # left running rather than how fast the kernel reaped it. After a timeout the group
        # has been signalled already: only processes that left it count then.
        leftovers = kill_tagged_processes(
            self.token,
            uncounted_group=self.child.pid if self.timed_out else None,
            candidates=pids_allocated_since(self.child.pid, self.started),
        )
        signal_group(self.child.pid, signal.SIGKILL)
        # Everything that could write is dead now, so draining terminates.
        if self.stdout_fd is not None:
            while _readable_now(self.stdout_fd) and self.read_stdout():
                pass
        if self.stderr_fd is not None:
            while _readable_now(self.stderr_fd) and self.read_stderr():
                pass
        self.child.close(force=True)
        os.close(self._stderr_fd)
        if self.pidfd is not None:
            os.close(self.pidfd)
        if self._in_flight is not None:
            # The session ended mid-turn: what the agent said so far, its ready prompt cut off if it shows.
            text = self._since_send.decode("utf-8", "replace")
            answer = self._before_ready_prompt(text)
            self._close_turn((text if answer is None else answer).encode("utf-8"), time.monotonic(), finished=False)
        exit_code = self.child.exitstatus
        sig = self.child.signalstatus
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
            turns=tuple(self._turn_results),
        )
        return self.finished

    def abort(self) -> None:
        """Used on interrupt: nothing of the agent may outlive the harness."""
        signal_group(self.child.pid, signal.SIGKILL)
        kill_tagged_processes(self.token)
        with contextlib.suppress(Exception):
            self.finish()


def _refuse_nul_bytes(argv: tuple[str, ...], env: Mapping[str, str]) -> None:
    """exec cannot carry a NUL byte; found only in the forked child, it would go on running the harness."""
    if any("\0" in part for part in argv):
        raise AgentStartError("the agent's command line holds a NUL byte, which no program can receive in argv")
    if any("\0" in key or "\0" in value for key, value in env.items()):
        raise AgentStartError("the agent's environment holds a NUL byte, which no program can receive")


def _eof_byte(fd: int) -> bytes:
    """The byte this pty's line discipline reads as end of input."""
    try:
        eof = termios.tcgetattr(fd)[6][termios.VEOF]
    except (termios.error, OSError, IndexError):
        return DEFAULT_EOF_BYTE
    return eof if isinstance(eof, bytes) and eof else DEFAULT_EOF_BYTE


def _readable_now(fd: int) -> bool:
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return False


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


def _start_error_text(command: str, exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, pexpect.ExceptionPexpect) and "not found" in text:
        return f"agent command {command!r} was not found on PATH; check --recall-cmd"
    if isinstance(exc, PermissionError) or (isinstance(exc, OSError) and exc.errno == errno.EACCES):
        return f"agent command {command!r} is not executable; check its permissions or --recall-cmd"
    errno_value = getattr(exc, "errno", None)
    if errno_value == errno.ENOENT and os.path.isfile(command):
        return f"agent command {command!r} could not start: the interpreter on its #! line was not found; fix that line"
    if errno_value == errno.ENOEXEC:
        return f"agent command {command!r} could not start: it is no program and has no #! line; add one"
    return f"agent command {command!r} could not start: {text}"


class SessionDriver:
    """An event loop over many sessions at once: pty, stderr pipe and pidfd of each."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self.active: set[RunningSession] = set()

    def start(self, spec: SessionSpec) -> RunningSession:
        session = RunningSession(spec)
        self.active.add(session)
        if session.stdout_fd is not None:
            self._selector.register(session.stdout_fd, selectors.EVENT_READ, (session, "stdout"))
        if session.stderr_fd is not None:
            self._selector.register(session.stderr_fd, selectors.EVENT_READ, (session, "stderr"))
        if session.pidfd is not None:
            self._selector.register(session.pidfd, selectors.EVENT_READ, (session, "exit"))
        return session

    def _forget(self, session: RunningSession) -> None:
        for fd in (session.stdout_fd, session.stderr_fd, session.pidfd):
            if fd is not None:
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(fd)
        self.active.discard(session)

    def step(self) -> list[RunningSession]:
        """Wait for events once; return the sessions that finished."""
        if not self.active:
            return []
        now = time.monotonic()
        wake = min(session.next_wakeup() for session in self.active)
        events = self._selector.select(max(0.0, wake - now))
        maybe_done: set[RunningSession] = set()
        for key, _ in events:
            session, what = key.data
            if what == "stdout" and not session.read_stdout():
                self._selector.unregister(key.fd)
                session.stdout_fd = None
                maybe_done.add(session)
            elif what == "stderr" and not session.read_stderr():
                self._selector.unregister(key.fd)
                session.stderr_fd = None
            elif what == "exit":
                maybe_done.add(session)
        now = time.monotonic()
        done = []
        for session in list(self.active):
            session.tick(now)
            if (session in maybe_done or session.pidfd is None or session.kill_at is not None) and (
                session.main_exited()
            ):
                self._forget(session)
                session.finish()
                done.append(session)
        return done

    def abort_all(self) -> None:
        for session in list(self.active):
            self._forget(session)
            session.abort()

    def close(self) -> None:
        self.abort_all()
        self._selector.close()


def run_session(spec: SessionSpec, driver: SessionDriver | None = None) -> SessionResult:
    """Run one session to its end; the simple, serial way in."""
    own = driver is None
    active = driver or SessionDriver()
    try:
        session = active.start(spec)
        while session.finished is None:
            active.step()
        return session.finished
    finally:
        if own:
            active.close()
