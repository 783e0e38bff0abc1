"""Captured output, bounded while it streams.

An agent may print gigabytes. The harness keeps only a head and a tail of
each stream, so memory stays flat and the final line, which is what the judge
reads, always survives.
"""

from __future__ import annotations

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
