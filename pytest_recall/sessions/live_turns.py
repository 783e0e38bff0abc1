"""The live-turn protocol of a continue session: when the agent looks ready, what to type, what it answered.

A live session is one process for every step. This module owns the turn
side of it and nothing of the process: the session
(:mod:`pytest_recall.sessions.session`) feeds it the terminal output as it
arrives and lets it type through a ``send`` callable; how turns are typed and
read is the case's :class:`~pytest_recall.cases.live_protocol.LiveProtocol`.
"""

from __future__ import annotations

import re
import textwrap
import time
from collections.abc import Callable

from pytest_recall.cases import LiveProtocol, TurnResult
from pytest_recall.sessions.render import LiveScreen

DEFAULT_READY_IDLE_S = 1.0
# With a ready pattern, the screen must then stay still this long: a TUI shows its prompt for a
# moment before the spinner of a turn it just took, and keeps redrawing while it works.
DEFAULT_READY_SETTLE_S = 0.3
# Between a pasted turn and its Enter, so that a TUI's paste detection sees them apart.
KEY_PAUSE_S = 0.1
# A terminal in line mode keeps at most this many bytes of one line and drops the rest.
MAX_TURN_LINE_BYTES = 4095

# Composes a turn's prompt from its index and the previous answer (the audit suite's feedback).
ComposeTurn = Callable[[int, str], str]
# Writes keys to the agent's terminal; returns how many bytes it took (BlockingIOError when none).
SendKeys = Callable[[bytes], int]


class LiveTurns:
    """The turns of one live session: sent one at a time, each answer read off the rendered screen."""

    def __init__(self, turns: tuple[str, ...], protocol: LiveProtocol, compose_turn: ComposeTurn | None) -> None:
        self.protocol = protocol
        self.compose_turn = compose_turn
        self._turns = list(turns)
        self.input_closed = not turns
        self._ready_pattern = re.compile(protocol.ready_pattern, re.M) if protocol.ready_pattern else None
        self._answer_pattern = re.compile(protocol.answer_pattern, re.M) if protocol.answer_pattern else None
        if protocol.ready_idle_s is not None:
            self._settle_s = protocol.ready_idle_s
        else:
            self._settle_s = DEFAULT_READY_SETTLE_S if self._ready_pattern is not None else DEFAULT_READY_IDLE_S
        self.results: list[TurnResult] = []
        self._in_flight: tuple[str, float] | None = None
        # Key presses still to send, each part not before its time (a paste, then its Enter).
        self._pending_input = bytearray()
        self._queued_keys: list[tuple[bytes, float]] = []
        self._screen = LiveScreen()
        self._since = self._screen.mark()
        self._turn_closed_at = time.monotonic()
        self._checked_at_fed = -1
        self._last_output = time.monotonic()

    def feed(self, chunk: bytes) -> None:
        """Terminal output as the session read it."""
        self._last_output = time.monotonic()
        self._screen.feed(chunk)

    @property
    def typing(self) -> bool:
        """Keys are still waiting to go in: the session must wake soon to send them."""
        return bool(self._pending_input or self._queued_keys)

    def drive(self, now: float, send: SendKeys, eof_byte: bytes, *, ending: bool = False) -> None:
        """Send the next turn when the agent looks ready; after the last answer, the quit keys.

        Keys already queued still go in once the session is ``ending`` (past its
        deadline); no new turn starts then.
        """
        self._write_pending(now, send)
        if self.input_closed or ending:
            return
        shown = self._ready_answer(now)
        if shown is None:
            return
        if self._in_flight is not None:
            self._close_turn(self._answer_of(shown, self._in_flight[0]).encode("utf-8"), now, finished=True)
        self._turn_closed_at = now
        if self._turns:
            prompt = self._turns.pop(0)
            if self.compose_turn is not None:
                previous = self.results[-1].answer.decode("utf-8", "replace") if self.results else ""
                prompt = self.compose_turn(len(self.results), previous)
            self._in_flight = (prompt, now)
            keys = self.protocol.turn_keys(prompt)
        else:
            keys = (self.protocol.quit_keys(eof_byte),)
            self.input_closed = True
        self._queued_keys = [(part, now + index * KEY_PAUSE_S) for index, part in enumerate(keys)]
        self._since = self._screen.mark()
        self._last_output = now
        self._write_pending(now, send)

    def close_unfinished(self) -> None:
        """A live session that ended before the agent looked ready: what it showed is kept, never lost.

        Mid-turn, the turn's answer is what the screen showed since the send
        (its ready prompt cut off if it shows). Before a turn was sent (an
        agent that exits at start-up, say), the next turn is recorded as never
        sent, with what the agent showed meanwhile.
        """
        now = time.monotonic()
        text = self._screen.changed_since(self._since)
        if self._in_flight is not None:
            answer = self._before_ready_prompt(text)
            shown = self._answer_of(text if answer is None else answer, self._in_flight[0])
            self._close_turn(shown.encode("utf-8"), now, finished=False)
        elif self._turns and not self.input_closed:
            waited = now - self._turn_closed_at
            self.results.append(TurnResult(self._turns[0], text.encode("utf-8"), waited, False, sent=False))

    def _ready_answer(self, now: float) -> str | None:
        """The answer to the turn in flight once the agent looks ready for the next; else None.

        Readiness is read from the rendered screen. With a ready pattern, the
        agent is ready when the pattern shows on the rows changed since the
        last send and the screen has then been still for the settle period;
        the answer is what those rows show before its last match. Without
        one, the agent is ready once it has been quiet for the idle period,
        and, after a turn was sent, has changed the screen since.
        """
        if self.typing or now - self._last_output < self._settle_s:
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
        elif self.protocol.typed:
            typed = [line.rstrip() for line in self.protocol.turn_text(prompt).splitlines() if line.strip()]
            lines = shown.split("\n")
            echo = next((i for i, line in enumerate(lines) if typed and line.rstrip().endswith(typed[-1])), None)
            if echo is not None:
                shown = "\n".join(lines[echo + 1 :])
        return shown.strip("\n")

    def _write_pending(self, now: float, send: SendKeys) -> None:
        """Write as much of the pending input as the pty takes now.

        A terminal in canonical mode buffers about 4 KiB of unread input; a
        longer prompt goes in as the agent reads it. The idle clock starts when
        the last byte is in, not when the turn was queued.
        """
        while self._queued_keys and not self._pending_input and self._queued_keys[0][1] <= now:
            self._pending_input += self._queued_keys.pop(0)[0]
        while self._pending_input:
            try:
                written = send(bytes(self._pending_input))
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
        self.results.append(TurnResult(prompt, answer, now - sent_at, finished, sent_at=sent_at))
        self._in_flight = None


def _dedented(text: str) -> str:
    """A TUI's message without its indent: the common indent of its later lines, whatever the first has."""
    first, _, rest = text.partition("\n")
    return first.strip() + ("\n" + textwrap.dedent(rest) if rest else "")
