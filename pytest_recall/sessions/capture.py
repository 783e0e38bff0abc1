"""Captured output: bounded while it streams, and cleaned before it is judged.

An agent may print gigabytes. The harness keeps only a head and a tail of
each stream, so memory stays flat and the final line, which is what the judge
reads, always survives. Terminal noise (colours, cursor moves, spinners that
rewrite a line with CR, the pty's CRLF) is removed from the judged text,
because the agent's answer is what a person would read on the screen.
"""

from __future__ import annotations

import re

DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024
# The head is small: the decisive final line lives in the tail.
HEAD_SHARE = 0.125
TRUNCATION_MARK = "\n[... {skipped} bytes of output skipped by pytest-recall ...]\n"


class HeadTailBuffer:
    """Keeps the first and last bytes of a stream, counting what it drops."""

    __slots__ = ("_head", "_head_limit", "_tail", "_tail_limit", "total")

    def __init__(self, limit: int = DEFAULT_MAX_OUTPUT_BYTES) -> None:
        self._head_limit = max(1, int(limit * HEAD_SHARE))
        self._tail_limit = max(1, limit - self._head_limit)
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            # Trim in bulk, not per chunk: slicing a large bytearray on every
            # 4 KiB read would make capture quadratic.
            if len(self._tail) > 2 * self._tail_limit:
                del self._tail[: len(self._tail) - self._tail_limit]

    @property
    def truncated(self) -> bool:
        return self.total > len(self._head) + min(len(self._tail), self._tail_limit)

    def getvalue(self) -> bytes:
        tail = bytes(self._tail[-self._tail_limit :]) if self._tail else b""
        skipped = self.total - len(self._head) - len(tail)
        if skipped > 0:
            return bytes(self._head) + TRUNCATION_MARK.format(skipped=skipped).encode() + tail
        return bytes(self._head) + tail


def decode(data: bytes) -> str:
    """Bytes to text that never fails: invalid UTF-8 becomes U+FFFD."""
    return data.decode("utf-8", errors="replace")


_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, hyperlinks
    r"|\x1b[PX^_][^\x1b]*\x1b\\"  # DCS, SOS, PM, APC strings
    r"|\x1b[()*+][0-9A-Za-z]"  # charset selection
    r"|\x1b[@-Z\\-_=>78]"  # two-byte escapes
)
_CR_BEFORE_NEWLINE = re.compile(r"\r+\n")
_BACKSPACED = re.compile(r"[^\n\x08]\x08")
_INVISIBLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def clean_terminal_text(text: str) -> str:
    """What a terminal would show, line by line, as plain text."""
    text = _ESCAPE_SEQUENCE.sub("", text)
    text = _CR_BEFORE_NEWLINE.sub("\n", text)
    while "\x08" in text:
        reduced = _BACKSPACED.sub("", text)
        if reduced == text:
            break
        text = reduced
    if "\r" in text:
        text = "\n".join(_last_rewrite(line) for line in text.split("\n"))
    return _INVISIBLE.sub("", text)


def _last_rewrite(line: str) -> str:
    """A line rewritten with CR shows its last non-empty version."""
    if "\r" not in line:
        return line
    for version in reversed(line.split("\r")):
        if version:
            return version
    return ""
