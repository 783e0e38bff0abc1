"""Agent sessions: one fresh process each, on a pseudo-terminal, driven by pexpect.

This is the only module that imports pexpect. Many sessions can be in
flight at once on one event loop (:class:`SessionDriver`): agents spend their
time waiting on model APIs, so concurrency is a matter of file descriptors,
not of threads or cores. Threads are avoided on purpose: forking a pty from a
multi-threaded process is unsafe.

Each session's stdout is the pty (agents that check ``isatty`` behave as
they would for a person); stderr goes to a pipe of its own, so it never
reaches the judged text; stdin is ``/dev/null`` so a reader sees EOF at once.
The session ends when its main process exits: whatever it left behind in its
process group, or anywhere else carrying its session token, is killed then.
"""

from __future__ import annotations

import errno
import os
import re
import select
import selectors
import signal
import stat
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pexpect

from pytest_recall.output import HeadTailBuffer

SESSION_TOKEN_VAR = "RECALL_SESSION_TOKEN"
READ_CHUNK = 1 << 16
# Without a pidfd the loop must wake to notice an exit; this bounds the delay.
POLL_INTERVAL_S = 0.05
DEFAULT_READY_IDLE_S = 1.0
# A live session's answer to one turn is read from this much recent output.
LIVE_WINDOW_BYTES = 1 << 16


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
    turn_offsets: tuple[int, ...] = field(default_factory=tuple)


class AgentStartError(Exception):
    """The agent command could not be started at all."""


def _open_stderr_pipe(workroom: Path) -> tuple[int, Path]:
    """A FIFO the child opens as its stderr before exec.

    ptyprocess closes every inherited descriptor above 2 before running
    ``preexec_fn``, so an anonymous pipe cannot be handed over; a FIFO can be
    opened by name instead. It is unlinked as soon as the child has exec'd.
    """
    path = workroom / f"stderr-{uuid.uuid4().hex}"
    os.mkfifo(path, 0o600)
    read_fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    return read_fd, path


def _child_setup(stderr_path: Path, stdin_is_null: bool) -> Callable[[], None]:
    def setup() -> None:
        write_fd = os.open(stderr_path, os.O_WRONLY)
        os.dup2(write_fd, 2)
        os.close(write_fd)
        if stdin_is_null:
            null_fd = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null_fd, 0)
            os.close(null_fd)
        # The harness may run with SIGINT or SIGPIPE ignored; agents must not inherit that.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)

    return setup


def kill_tagged_processes(token: str) -> int:
    """Kill every process of ours whose environment carries ``token``.

    A daemon that called ``setsid`` has left the session's process group,
    but it still carries the environment it was started with. Returns how
    many processes were killed.
    """
    marker = f"{SESSION_TOKEN_VAR}={token}".encode()
    killed = 0
    my_uid = os.getuid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != my_uid:
                continue
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    return killed


class RunningSession:
    """One agent process in flight. The driver feeds it events."""

    def __init__(self, spec: SessionSpec, workroom: Path) -> None:
        self.spec = spec
        self.token = uuid.uuid4().hex
        env = dict(spec.env)
        env[SESSION_TOKEN_VAR] = self.token
        self._stdout = HeadTailBuffer(spec.max_output_bytes)
        self._stderr = HeadTailBuffer(spec.max_output_bytes)
        self._turns = list(spec.turns)
        self._input_closed = not spec.turns
        self._ready_pattern = re.compile(spec.ready_pattern) if spec.ready_pattern is not None else None
        self._turn_offsets: list[int] = []
        self._since_send = bytearray()
        self._last_output = time.monotonic()
        self.started = time.monotonic()
        self.deadline = self.started + spec.timeout_s
        self.kill_at: float | None = None
        self.timed_out = False
        self.finished: SessionResult | None = None
        self._stderr_fd, fifo = _open_stderr_pipe(workroom)
        try:
            self.child = pexpect.spawn(
                spec.argv[0],
                list(spec.argv[1:]),
                cwd=str(spec.cwd),
                env=env,
                echo=False,
                preexec_fn=_child_setup(fifo, stdin_is_null=not spec.turns),
                dimensions=(24, 200),
            )
        except (pexpect.ExceptionPexpect, OSError) as exc:
            os.close(self._stderr_fd)
            raise AgentStartError(_start_error_text(spec.argv[0], exc)) from None
        finally:
            fifo.unlink(missing_ok=True)
        # pexpect's defaults sleep 100 ms on close and terminate; the harness
        # reaps and kills the process group itself, so the sleeps buy nothing.
        self.child.delayafterclose = 0
        self.child.delayafterterminate = 0
        self.child.ptyproc.delayafterclose = 0
        self.child.ptyproc.delayafterterminate = 0
        self.pidfd = _pidfd(self.child.pid)
        self.stdout_fd: int | None = self.child.child_fd
        self.stderr_fd: int | None = self._stderr_fd

    # -- events -------------------------------------------------------------
    def read_stdout(self) -> bool:
        """Read what the pty holds. False at end of file."""
        try:
            chunk = self.child.read_nonblocking(READ_CHUNK, timeout=0)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        if chunk:
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

    def _looks_ready(self, now: float) -> bool:
        """A live agent is ready for the next turn when its prompt shows, or it falls quiet."""
        if self._ready_pattern is not None:
            return bool(self._ready_pattern.search(self._since_send.decode("utf-8", "replace")))
        idle = self.spec.ready_idle_s if self.spec.ready_idle_s is not None else DEFAULT_READY_IDLE_S
        return now - self._last_output >= idle

    def _drive_turns(self, now: float) -> None:
        """Live sessions: send the next prompt when ready; after the last answer, end the input."""
        if self._input_closed or not self._looks_ready(now):
            return
        previous_output = bytes(self._since_send)
        self._since_send.clear()
        self._last_output = now
        if self._turns:
            prompt = self._turns.pop(0)
            if self.spec.compose_turn is not None:
                prompt = self.spec.compose_turn(len(self._turn_offsets), previous_output.decode("utf-8", "replace"))
            self._turn_offsets.append(self._stdout.total)
            self.child.send(prompt if prompt.endswith("\n") else prompt + "\n")
        else:
            self.child.sendeof()
            self._input_closed = True

    def next_wakeup(self) -> float:
        wake = self.kill_at if self.kill_at is not None else self.deadline
        if self.pidfd is None or (self.spec.turns and not self._input_closed):
            wake = min(wake, time.monotonic() + POLL_INTERVAL_S)
        return wake

    def tick(self, now: float) -> None:
        """Deadlines: TERM the group at the timeout, KILL it after the grace."""
        if self.spec.turns:
            self._drive_turns(now)
        if self.kill_at is None and now >= self.deadline:
            self.timed_out = True
            _signal_group(self.child.pid, signal.SIGTERM)
            self.kill_at = now + self.spec.grace_s
        elif self.kill_at is not None and now >= self.kill_at:
            _signal_group(self.child.pid, signal.SIGKILL)
            self.kill_at = now + 3600

    def main_exited(self) -> bool:
        return not self.child.isalive()

    def finish(self) -> SessionResult:
        """Kill what the agent left behind, drain, and close everything."""
        _signal_group(self.child.pid, signal.SIGKILL)
        leftovers = kill_tagged_processes(self.token)
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
            turn_offsets=tuple(self._turn_offsets),
        )
        return self.finished

    def abort(self) -> None:
        """Used on interrupt: nothing of the agent may outlive the harness."""
        _signal_group(self.child.pid, signal.SIGKILL)
        kill_tagged_processes(self.token)
        try:
            self.finish()
        except Exception:  # noqa: BLE001 - best effort on the way out
            pass


def _readable_now(fd: int) -> bool:
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return False


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass


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
    return f"agent command {command!r} could not start: {text}"


class SessionDriver:
    """An event loop over many sessions at once: pty, stderr pipe and pidfd of each."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._workroom = Path(tempfile.mkdtemp(prefix="recall-harness-"))
        os.chmod(self._workroom, stat.S_IRWXU)
        self.active: set[RunningSession] = set()

    def start(self, spec: SessionSpec) -> RunningSession:
        session = RunningSession(spec, self._workroom)
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
                try:
                    self._selector.unregister(fd)
                except (KeyError, ValueError):
                    pass
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
        try:
            os.rmdir(self._workroom)
        except OSError:
            pass


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
