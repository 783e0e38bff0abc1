"""A session's terminal output as the screen showed it: cursor moves, erases and redraws applied.

Agents that stream into a terminal (aider, anything built on rich's ``Live``)
print a partial line, move the cursor back up, erase and redraw. Stripping the
escape sequences keeps every fragment and every superseded copy, and the
judge's whole-output candidate search then scans text no person ever saw.
So output that moves the cursor is fed through ``pyte``, a VT100 emulator of
the session's own terminal size, and the judged text is its screen with the
scrollback above it, in order.

Output that never moves the cursor renders to what
:func:`pytest_recall.terminal_text.clean_terminal_text` gives, so it takes
that path: no emulator cost for plain agents, and the seed suite's judged
text stays byte for byte what it was.

The emulator's cost grows with what it is fed, so only the tail the judge
reads is rendered (:data:`RENDER_TAIL_CHARS`); the raw capture stays in the
session result untouched.
"""

from __future__ import annotations

import codecs
import re
from collections import deque
from collections.abc import MutableSequence
from dataclasses import dataclass
from typing import Any

import pyte
from pyte.modes import DECAWM, IRM

from pytest_recall.sessions.spawn import TERMINAL_SIZE
from pytest_recall.terminal_text import clean_terminal_text

# The answer is at the end; 256 KiB of it is far more than any judge reads, and bounds the emulator's work.
RENDER_TAIL_CHARS = 256 * 1024
# What makes the screen differ from the text with escapes stripped: cursor motion, erases, line
# inserts and deletes, scrolling, reverse index, cursor save and restore. Colours and modes do not.
_MOVES_THE_CURSOR = re.compile(r"\x1b\[[0-?]*[ -/]*[@A-HJ-MPSTX`a-fr]|\x1b[78DEM]")
# A live session's scrollback, in rows: enough for any turn's answer, and a bound on the harness's memory.
LIVE_SCROLLBACK_ROWS = 5000
# Sequences pyte does not know and would draw the last letter of: the kitty keyboard protocol's
# queries and mode pushes (ESC[?u, ESC[>1u, ESC[<u), which Claude Code sends.
_UNKNOWN_TO_PYTE = re.compile(r"\x1b\[[<=>?][0-9;]*u")
# An escape sequence cut off at the end of a chunk, kept for the next so the filter above sees it whole.
_CUT_SEQUENCE = re.compile(r"\x1b(?:\[[<=>?]?[0-9;]*)?\Z")
# A control sequence's parameters, and a number among them longer than pyte's own bound of 9999. pyte reads each
# with int() before it bounds it, and int() refuses more than 4300 digits: an agent printing ESC[ and 5000 nines
# would make the harness raise on its output. Such a number is 9999 to pyte whatever its length, so it is cut first.
_SEQUENCE_PARAMETERS = re.compile(r"\x1b\[[0-?]+")
_LONG_NUMBER = re.compile(r"\d{5,}")
# pyte stops drawing a chunk at a zero-width character that is not combining; they show nothing anyway.
_ZERO_WIDTH = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff]")


def render_terminal(text: str, *, size: tuple[int, int] = TERMINAL_SIZE) -> str:
    """What a person would read on the session's terminal: its scrollback, then its screen.

    ``size`` is (rows, columns), the pty's size, so that an agent's redraws,
    which count wrapped rows at that width, land where they did.
    """
    if not _MOVES_THE_CURSOR.search(text):
        return clean_terminal_text(text)
    tail = _tail(text)
    rows, columns = size
    screen = _Screen(columns, rows)
    screen.set_mode(pyte.modes.LNM)  # a bare "\n" starts a new line, as the pty's own CRLF does
    pyte.Stream(screen).feed(_fed_to_pyte(tail))
    lines = [*screen.scrollback, *(_row_text(screen.buffer[y], columns) for y in range(rows))]
    shown = _joined(lines)
    return shown + "\n" if shown and text.endswith("\n") else shown


def _fed_to_pyte(text: str) -> str:
    """``text`` as pyte reads it without fault: no zero-width characters, no parameter over 9999."""
    return _SEQUENCE_PARAMETERS.sub(_bounded_parameters, _ZERO_WIDTH.sub("", text))


def _bounded_parameters(sequence: re.Match[str]) -> str:
    return _LONG_NUMBER.sub(lambda number: "9999" if len(number[0].lstrip("0")) > 4 else number[0], sequence[0])


def _tail(text: str) -> str:
    """The last :data:`RENDER_TAIL_CHARS` characters, from a line start so no escape is cut in half."""
    if len(text) <= RENDER_TAIL_CHARS:
        return text
    start = len(text) - RENDER_TAIL_CHARS
    newline = text.find("\n", start)
    return text[newline + 1 :] if newline != -1 else text[start:]


def _row_text(line: Any, columns: int) -> tuple[str, bool]:
    """One screen row as text, and whether it ran on into the next row."""
    wrapped = bool(vars(line).get(_WRAPPED, False))
    if not line:
        return "", wrapped
    cells = [" "] * min(columns, max(line) + 1)
    for x, char in line.items():
        if x < columns:
            cells[x] = char.data
    row = "".join(cells)
    return (row if wrapped else row.rstrip()), wrapped


def _mark_wrapped(line: Any, wrapped: bool) -> None:
    vars(line)[_WRAPPED] = wrapped


def _joined(lines: list[tuple[str, bool]]) -> str:
    """Rows as text; a row the terminal wrapped joins the next, and blank rows at either end go."""
    out: list[str] = []
    current = ""
    for row, wrapped in lines:
        current += row
        if not wrapped:
            out.append(current)
            current = ""
    if current:
        out.append(current.rstrip())
    while out and not out[-1]:
        out.pop()
    while out and not out[0]:
        out.pop(0)
    return "\n".join(out)


# The attribute on a pyte row that says it ran on into the next row.
_WRAPPED = "recall_wrapped"
_DEFAULT_G0 = pyte.Screen(1, 1).g0_charset
_CELLS: dict[str, Any] = {}


def _cell(char: str) -> Any:
    cell = _CELLS.get(char)
    if cell is None:
        cell = _CELLS[char] = pyte.screens.Char(char)
    return cell


class _Screen(pyte.Screen):
    """A screen that keeps, as text, every row scrolled off its top, and which rows wrapped.

    pyte's own ``HistoryScreen`` wraps every attribute access in Python code
    (about 40 times slower here) and keeps scrolled-off rows as dicts of
    cells; a row of text is all the judge needs. A row that ran on into the
    next because it was full is marked, so a long answer line is not broken
    at the terminal width; the mark sits on the row object, which pyte moves
    as the screen scrolls, and an erase that reaches the row's end clears it.
    Erases drop cells rather than fill them with blanks: colours are not judged.
    """

    def __init__(self, columns: int, lines: int, scrollback: MutableSequence[tuple[str, bool]] | None = None) -> None:
        super().__init__(columns, lines)
        self.scrollback: MutableSequence[tuple[str, bool]] = [] if scrollback is None else scrollback
        # Rows ever scrolled off the top, kept or dropped: a row's absolute number stays put as the screen scrolls.
        self.scrolled = 0
        self._drawing = False

    def draw(self, data: str) -> None:
        self._drawing = True
        try:
            if data.isascii() and not self.charset and self.g0_charset is _DEFAULT_G0 and IRM not in self.mode:
                self._draw_ascii(data)
            else:
                super().draw(data)
        finally:
            self._drawing = False

    def _draw_ascii(self, data: str) -> None:
        """pyte's draw, for the common case of plain ASCII, a run of cells at a time.

        pyte builds a new cell (a namedtuple with the cursor's colours) per
        character; colours are not judged, so one shared cell per character will do.
        """
        cursor, columns = self.cursor, self.columns
        while data:
            if cursor.x == columns:
                if DECAWM not in self.mode:
                    cursor.x -= 1
                else:
                    self.carriage_return()
                    self.linefeed()
            run, data = data[: columns - cursor.x], data[columns - cursor.x :]
            self.buffer[cursor.y].update(zip(range(cursor.x, cursor.x + len(run)), map(_cell, run), strict=True))
            cursor.x += len(run)
        self.dirty.add(cursor.y)

    def linefeed(self) -> None:
        # Inside draw, a line feed only ever comes from wrapping at the last column.
        _mark_wrapped(self.buffer[self.cursor.y], self._drawing)
        super().linefeed()

    def index(self) -> None:
        top, bottom = self.margins or (0, self.lines - 1)
        if self.cursor.y == bottom and top == 0:
            self.scrollback.append(_row_text(self.buffer[0], self.columns))
            self.scrolled += 1
        super().index()

    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        line = self.buffer[self.cursor.y]
        if how == 1:
            for x in [x for x in line if x <= self.cursor.x]:
                del line[x]
            return
        for x in [x for x in line if x >= self.cursor.x] if how == 0 else list(line):
            del line[x]
        _mark_wrapped(line, False)

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        if how in (0, 1):
            self.erase_in_line(how)
        cleared = range(self.cursor.y + 1, self.lines) if how == 0 else range(self.cursor.y) if how == 1 else None
        for y in cleared if cleared is not None else range(self.lines):
            self.buffer.pop(y, None)


@dataclass(frozen=True, slots=True)
class ScreenMark:
    """The screen at one moment, rows numbered from the start of the session, so later change can be found."""

    first_row: int
    rows: tuple[tuple[str, bool], ...]
    fed: int
    # Where the cursor was: what a program writes next starts there, after its prompt on the same row.
    cursor_row: int = 0
    cursor_column: int = 0


class LiveScreen:
    """A live session's terminal as a person sees it, fed as output arrives, with a bounded scrollback.

    A turn's answer is what changed on it since the turn was sent: rows are
    numbered from the session's start, so rows that scrolled up are still
    the same rows, and a TUI that redraws its whole frame with the same
    content changes nothing. What scrolled beyond :data:`LIVE_SCROLLBACK_ROWS`
    is gone, and an answer longer than that keeps its end.
    """

    def __init__(self, size: tuple[int, int] = TERMINAL_SIZE, scrollback_rows: int = LIVE_SCROLLBACK_ROWS) -> None:
        rows, columns = size
        self._screen = _Screen(columns, rows, deque(maxlen=scrollback_rows))
        self._stream = pyte.Stream(self._screen)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._carry = ""
        self.fed = 0  # bytes fed so far: a mark says how much output it saw

    def feed(self, data: bytes) -> None:
        self.fed += len(data)
        text = self._carry + self._decoder.decode(data)
        cut = _CUT_SEQUENCE.search(text)
        self._carry = text[cut.start() :] if cut is not None else ""
        text = text[: cut.start()] if cut is not None else text
        if text:
            self._stream.feed(_fed_to_pyte(_UNKNOWN_TO_PYTE.sub("", text)))

    def mark(self) -> ScreenMark:
        first, cursor = self._first_row(), self._screen.cursor
        return ScreenMark(
            first, tuple(self._rows()), self.fed, first + len(self._screen.scrollback) + cursor.y, cursor.x
        )

    def changed_since(self, mark: ScreenMark) -> str:
        """The text of every row from the first that differs from ``mark``, wrapped rows joined.

        On the row the cursor was on, what stood before the cursor (a prompt
        such as ``> ``) is not part of the change when it still stands there.
        """
        first, rows = self._first_row(), self._rows()
        row = max(first, mark.first_row)
        while row - first < len(rows):
            then = row - mark.first_row
            if then >= len(mark.rows) or mark.rows[then] != rows[row - first]:
                break
            row += 1
        changed = rows[row - first :]
        if changed and row == mark.cursor_row and 0 <= row - mark.first_row < len(mark.rows):
            before = mark.rows[row - mark.first_row][0][: mark.cursor_column]
            text, wrapped = changed[0]
            if before and text.startswith(before):
                changed[0] = (text[len(before) :], wrapped)
        return _joined(changed)

    def _first_row(self) -> int:
        """The absolute number of the oldest row still kept."""
        return self._screen.scrolled - len(self._screen.scrollback)

    def _rows(self) -> list[tuple[str, bool]]:
        """Scrollback and screen; the cursor's row keeps its blanks up to the cursor, as a prompt "> " shows."""
        screen = self._screen
        rows = list(screen.scrollback)
        for y in range(screen.lines):
            text, wrapped = _row_text(screen.buffer[y], screen.columns)
            if y == screen.cursor.y and screen.cursor.x > len(text):
                text = text.ljust(min(screen.cursor.x, screen.columns))
            rows.append((text, wrapped))
        return rows
