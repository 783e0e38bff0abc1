"""The records of a JSON file whose top level is one array, read one at a time.

The public memory benchmarks ship as one array of records in one file
(``longmemeval_m`` is hundreds of megabytes), and ``json.load`` would hold
all of it, twice over while it parses. This reader keeps one record and a
read buffer: it decodes the next element with ``raw_decode`` and, when an
element runs past the buffer, reads as much again and retries, so a record
of any size costs time linear in its length.

A record nested deeper than the decoder follows (Python's recursion limit,
about a thousand levels) is refused with one line; a benchmark's records
nest a few levels.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

CHUNK_CHARS = 1 << 16
_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()


class StreamError(ValueError):
    """The file is not one JSON array of records; the message names the file and the record."""


class _Buffer:
    """A text window over the file: ``text[pos:]`` is what has been read and not yet consumed."""

    def __init__(self, handle: TextIO, chunk: int) -> None:
        self.handle = handle
        self.chunk = chunk
        self.text = ""
        self.pos = 0
        self.eof = False

    def more(self, at_least: int) -> bool:
        """Read at least ``at_least`` more characters (fewer only at the end); False at the end."""
        if self.eof:
            return False
        read = self.handle.read(max(at_least, self.chunk))
        if not read:
            self.eof = True
            return False
        self.text = self.text[self.pos :] + read
        self.pos = 0
        return True

    def skip_space(self) -> str:
        """The next character that is not whitespace, without consuming it; '' at the end of the file."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more(self.chunk):
                return ""


def iter_array(path: Path, *, chunk: int = CHUNK_CHARS) -> Iterator[Any]:
    """Each element of the top-level array in ``path``, in order, decoded on its own."""
    try:
        with path.open(encoding="utf-8") as handle:
            yield from _elements(_Buffer(handle, chunk), path)
    except UnicodeDecodeError as exc:
        raise StreamError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start} of a block)") from None


def _elements(buffer: _Buffer, path: Path) -> Iterator[Any]:
    first = buffer.skip_space()
    if first != "[":
        found = "an empty file" if first == "" else f"{first!r}"
        raise StreamError(f"{path}: expected a JSON array of records at the top level, found {found}")
    buffer.pos += 1
    index = 0
    while True:
        mark = buffer.skip_space()
        if mark == "]":
            buffer.pos += 1
            break
        if index > 0:
            if mark != ",":
                raise StreamError(f"{path}: after record {index - 1}, expected ',' or ']', found {mark or 'the end'!r}")
            buffer.pos += 1
            if buffer.skip_space() == "]":
                raise StreamError(f"{path}: a trailing ',' after record {index - 1} is not JSON")
        yield _decode(buffer, path, index)
        index += 1
    if buffer.skip_space() != "":
        raise StreamError(f"{path}: text after the closing ']' of the array")


def _decode(buffer: _Buffer, path: Path, index: int) -> Any:
    """The element at the buffer's position; reads more, doubling, while the element runs past the buffer."""
    while True:
        try:
            value, end = _DECODER.raw_decode(buffer.text, buffer.pos)
        except json.JSONDecodeError as exc:
            # An element cut by the buffer's end looks malformed until the rest is read.
            if buffer.more(len(buffer.text) - buffer.pos):
                continue
            raise StreamError(f"{path}: record {index} is not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise StreamError(
                f"{path}: record {index} is nested too deep to read; a benchmark record nests a few levels"
            ) from None
        # A number at the buffer's end may go on in the next read ("12" of "123").
        at_end = end == len(buffer.text) and not buffer.eof and isinstance(value, (int, float))
        if at_end and buffer.more(buffer.chunk):
            continue
        buffer.pos = end
        return value
