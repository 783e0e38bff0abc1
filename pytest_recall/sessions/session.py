"""One agent session in flight: its output, its live turns, its deadlines and its end.

The driver (:mod:`pytest_recall.sessions.driver`) feeds each session the
events of its descriptors; this module decides what they mean. The session
ends when its main process exits: whatever it left behind is killed then,
through the session's cgroup (:mod:`pytest_recall.sessions.cgroup`) where
there is one, else by group and token (:mod:`pytest_recall.sessions.reaper`).
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import textwrap
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_recall.cases.live_protocol import DEFAULT_PROTOCOL, LiveProtocol
from pytest_recall.cases.runs import SessionResult, TurnResult
from pytest_recall.sessions.capture import HeadTailBuffer
from pytest_recall.sessions.cgroup import SessionCgroup
from pytest_recall.sessions.reaper import (
    SESSION_TOKEN_VAR,
    kill_tagged_processes,
    pids_allocated_since,
    process_group,
    signal_group,
)
from pytest_recall.sessions.render import LiveScreen, ScreenMark
from pytest_recall.sessions.spawn import AgentProcess, spawn_agent

READ_CHUNK = 1 << 16
# Without a pidfd the loop must wake to notice an exit; this bounds the delay.
POLL_INTERVAL_S = 0.05
DEFAULT_READY_IDLE_S = 1.0
# With a ready pattern, the screen must then stay still this long: a TUI shows its prompt for a
# moment before the spinner of a turn it just took, and keeps redrawing while it works.
DEFAULT_READY_SETTLE_S = 0.3
# Between a pasted turn and its Enter, so that a TUI's paste detection sees them apart.
KEY_PAUSE_S = 0.1
# A terminal in line mode keeps at most this many bytes of one line and drops the rest.
MAX_TURN_LINE_BYTES = 4095
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
        self.token = uuid.uuid4().hex
        env = dict(spec.env)
        env[SESSION_TOKEN_VAR] = self.token
        self._stdout = HeadTailBuffer(spec.max_output_bytes)
        self._stderr = HeadTailBuffer(spec.max_output_bytes)
        self._turns = list(spec.turns)
        self._input_closed = not spec.turns
        protocol = spec.protocol
        self._ready_pattern = re.compile(protocol.ready_pattern, re.M) if protocol.ready_pattern else None
        self._answer_pattern = re.compile(protocol.answer_pattern, re.M) if protocol.answer_pattern else None
        if protocol.ready_idle_s is not None:
            self._settle_s = protocol.ready_idle_s
        else:
            self._settle_s = DEFAULT_READY_SETTLE_S if self._ready_pattern is not None else DEFAULT_READY_IDLE_S
        self._turn_results: list[TurnResult] = []
        self._in_flight: tuple[str, float] | None = None
        # Key presses still to send, each part not before its time (a paste, then its Enter).
        self._pending_input = bytearray()
        self._queued_keys: list[tuple[bytes, float]] = []
        self._screen = LiveScreen() if spec.turns else None
        self._since: ScreenMark | None = self._screen.mark() if self._screen is not None else None
        self._turn_closed_at = time.monotonic()
        self._checked_at_fed = -1
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
                live=bool(spec.turns),
                stdin_pipe=spec.stdin is not None,
                cgroup=self.cgroup,
            )
        except BaseException:
            # Ctrl-C between the spawn and its return: the child exists but no one holds it yet.
            self._kill_everything()
            if self.cgroup is not None:
                self.cgroup.remove()
            raise
        # The agent's time starts when it does: the first session of a run may have waited for the spawner.
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
            self._last_output = time.monotonic()
            if self._screen is not None:
                self._screen.feed(chunk)
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

    def _ready_answer(self, now: float) -> str | None:
        """The answer to the turn in flight once the agent looks ready for the next; else None.

        Readiness is read from the rendered screen. With a ready pattern, the
        agent is ready when the pattern shows on the rows changed since the
        last send and the screen has then been still for the settle period;
        the answer is what those rows show before its last match. Without
        one, the agent is ready once it has been quiet for the idle period,
        and, after a turn was sent, has changed the screen since.
        """
        assert self._screen is not None and self._since is not None
        if self._pending_input or self._queued_keys or now - self._last_output < self._settle_s:
            return None
        if self._checked_at_fed == self._screen.fed:
            return None  # nothing new on the screen since the last look
        text = self._screen.changed_since(self._since)
        if self._ready_pattern is not None:
            shown = self._before_ready_prompt(text)
            if shown is None:
                self._checked_at_fed = self._screen.fed
            return shown
        if self._in_flight is not None and not text:
            return None
        return text

    def _before_ready_prompt(self, text: str) -> str | None:
        """``text`` up to the last match of the ready pattern; None when the pattern does not show."""
        matches = list(self._ready_pattern.finditer(text)) if self._ready_pattern is not None else []
        return text[: matches[-1].start()] if matches else None

    def _answer_of(self, shown: str, prompt: str) -> str:
        """What the agent said to a turn: the answer pattern's pick, or the rows after the echo of what was typed."""
        if self._answer_pattern is not None:
            marks = list(self._answer_pattern.finditer(shown))
            if marks:
                last = marks[-1]
                shown = _dedented(last.group(1) if last.re.groups else shown[last.end() :])
        elif self.spec.protocol.typed:
            typed = [line.rstrip() for line in self.spec.protocol.turn_text(prompt).splitlines() if line.strip()]
            lines = shown.split("\n")
            echo = next((i for i, line in enumerate(lines) if typed and line.rstrip().endswith(typed[-1])), None)
            if echo is not None:
                shown = "\n".join(lines[echo + 1 :])
        return shown.strip("\n")

    def _drive_turns(self, now: float) -> None:
        """Live sessions: send the next turn when ready; after the last answer, the quit keys."""
        self._write_pending(now)
        if self._input_closed or self.kill_at is not None:
            return
        shown = self._ready_answer(now)
        if shown is None:
            return
        if self._in_flight is not None:
            self._close_turn(self._answer_of(shown, self._in_flight[0]).encode("utf-8"), now, finished=True)
        self._turn_closed_at = now
        if self._turns:
            prompt = self._turns.pop(0)
            if self.spec.compose_turn is not None:
                previous = self._turn_results[-1].answer.decode("utf-8", "replace") if self._turn_results else ""
                prompt = self.spec.compose_turn(len(self._turn_results), previous)
            self._in_flight = (prompt, now)
            keys = self.spec.protocol.turn_keys(prompt)
        else:
            keys = (self.spec.protocol.quit_keys(self.child.eof_byte),)
            self._input_closed = True
        self._queued_keys = [(part, now + index * KEY_PAUSE_S) for index, part in enumerate(keys)]
        self._since = self._screen.mark() if self._screen is not None else None
        self._last_output = now
        self._write_pending(now)

    def _write_pending(self, now: float) -> None:
        """Write as much of the pending input as the pty takes now.

        A terminal in canonical mode buffers about 4 KiB of unread input; a
        longer prompt goes in as the agent reads it. The idle clock starts when
        the last byte is in, not when the turn was queued.
        """
        while self._queued_keys and not self._pending_input and self._queued_keys[0][1] <= now:
            self._pending_input += self._queued_keys.pop(0)[0]
        while self._pending_input:
            try:
                written = self.child.send(bytes(self._pending_input))
            except BlockingIOError:
                return
            except OSError:
                self._pending_input.clear()  # the agent is gone: nothing will read it
                self._queued_keys.clear()
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
        typing = self._pending_input or self._queued_keys
        if self.pidfd is None or (self.spec.turns and not self._input_closed) or typing:
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
        return self.child.poll()

    def finish(self) -> SessionResult:
        """Kill what the agent left behind, drain, and close everything."""
        # Leftovers are counted before the group is killed, so the count says what the agent
        # left running rather than how fast the kernel reaped it. After a timeout the group
        # has been signalled already: only processes that left it count then.
        uncounted_group = self.child.pid if self.timed_out else None
        if self.cgroup is not None:
            members = self.cgroup.pids()
            leftovers = self._cgroup_leftovers(members, uncounted_group)
            if members != []:
                # Only a cgroup with something still in it is killed; an empty one is reused as it is.
                self.cgroup.kill()
        else:
            leftovers = kill_tagged_processes(
                self.token,
                uncounted_group=uncounted_group,
                candidates=pids_allocated_since(self.child.pid, self.started),
            )
        # The main process is a zombie until reaped below, so the group's id is still this session's.
        signal_group(self.child.pid, signal.SIGKILL)
        # Everything that could write is dead now, so draining terminates.
        if self.stdout_fd is not None:
            while _readable_now(self.stdout_fd) and self.read_stdout():
                pass
        if self.stderr_fd is not None:
            while _readable_now(self.stderr_fd) and self.read_stderr():
                pass
        self.child.reap()
        self.child.close()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        self._close_unfinished_turn()
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
            turns=tuple(self._turn_results),
            ok_exit_codes=self.spec.ok_exit_codes,
        )
        return self.finished

    def _close_unfinished_turn(self) -> None:
        """A live session that ended before the agent looked ready: what it showed is kept, never lost.

        Mid-turn, the turn's answer is what the screen showed since the send
        (its ready prompt cut off if it shows). Before a turn was sent (an
        agent that exits at start-up, say), the next turn is recorded as never
        sent, with what the agent showed meanwhile.
        """
        if self._screen is None or self._since is None:
            return
        now = time.monotonic()
        text = self._screen.changed_since(self._since)
        if self._in_flight is not None:
            answer = self._before_ready_prompt(text)
            shown = self._answer_of(text if answer is None else answer, self._in_flight[0])
            self._close_turn(shown.encode("utf-8"), now, finished=False)
        elif self._turns and not self._input_closed:
            waited = now - self._turn_closed_at
            self._turn_results.append(TurnResult(self._turns[0], text.encode("utf-8"), waited, False, sent=False))

    def abort(self) -> None:
        """Used on interrupt: nothing of the agent may outlive the harness."""
        signal_group(self.child.pid, signal.SIGKILL)
        self._kill_everything()
        with contextlib.suppress(Exception):
            self.finish()

    def _kill_everything(self) -> None:
        if self.cgroup is not None:
            self.cgroup.kill()
        else:
            kill_tagged_processes(self.token)

    def _cgroup_leftovers(self, members: list[int] | None, uncounted_group: int | None) -> int:
        """The processes still in the session's cgroup besides the main one, counted before they are killed."""
        pids = [pid for pid in members or () if pid != self.child.pid]
        if uncounted_group is None:
            return len(pids)
        return sum(process_group(str(pid)) != uncounted_group for pid in pids)


def _dedented(text: str) -> str:
    """A TUI's message without its indent: the common indent of its later lines, whatever the first has."""
    first, _, rest = text.partition("\n")
    return first.strip() + ("\n" + textwrap.dedent(rest) if rest else "")


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


def _readable_now(fd: int) -> bool:
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return False
