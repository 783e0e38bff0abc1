"""Ingest steps cut by a character budget, written as they fill: how a haystack of millions of tokens is told.

LongMemEval and LoCoMo group whole sessions into steps; a BEAM conversation
of ten million tokens has batches of a hundred thousand, and a
MemoryAgentBench context is one text of up to a million and a half tokens,
so a session is no unit for them. :class:`StepWriter` takes the
conversation a line at a time and writes ``ingest<N>.txt`` whenever the next
line would take the step past ``chars_per_step``, so no step is longer than
the budget (plus its headers) and nothing longer than one step is held. A
line longer than the budget is cut into pieces of the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_recall.suites.public_records import STORE_CUE

# The least budget that still leaves room for a header and a sentence.
MIN_CHARS_PER_STEP = 1000


class StepWriter:
    """Writes a group's ingest steps into ``folder``: ``opening()``, the session headers and lines, the store cue."""

    def __init__(self, folder: Path, chars_per_step: int, opening: Callable[[], str]) -> None:
        self.folder = folder
        self.budget = chars_per_step
        self.opening = opening
        self.header = ""
        self.lines: list[str] = []
        self.size = 0
        self.steps = 0

    def session(self, header: str) -> None:
        """A new session starts: its header opens its first lines, and again in any later step it runs into."""
        if self.lines and self.size + len(header) > self.budget:
            self.flush()
        self.header = header
        self._add(header)

    def line(self, text: str) -> None:
        for start in range(0, max(len(text), 1), self.budget):
            piece = text[start : start + self.budget]
            if self.lines and self.size + len(piece) > self.budget:
                self.flush()
                self._add(self.header)
            self._add(piece)

    def _add(self, text: str) -> None:
        self.lines.append(text)
        self.size += len(text) + 1

    def flush(self) -> None:
        if not self.lines or self.lines == [self.header]:
            return
        self.steps += 1
        text = "\n\n".join([self.opening(), "\n".join(self.lines), STORE_CUE]) + "\n"
        (self.folder / f"ingest{self.steps}.txt").write_bytes(text.encode("utf-8"))
        self.lines, self.size = [], 0

    def close(self) -> int:
        """Writes what is left; the number of ingest steps written."""
        self.flush()
        return self.steps
