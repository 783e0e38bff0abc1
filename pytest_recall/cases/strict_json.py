"""JSON from outside the run, read so that no input can turn into a traceback.

Reports, run logs and shards come back from disk to ``report``, ``merge``,
``compare`` and ``--recall-resume``. Python's parser recurses, so a document
nested 100,000 levels deep is a ``RecursionError``; a single 1 GB line is a
``MemoryError``; and it quietly keeps the last of two equal keys, so a record
could say two things at once. Here each of those is a ``ValueError`` with one
line that says what is wrong, which every caller already turns into a clean
exit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import IO, Any

# One record on one line is a few kilobytes (transcripts are cut to their tails); this is far more.
MAX_LINE_BYTES = 64 << 20


class DuplicateKey(ValueError):
    """An object names one key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(f"duplicate key {key[:80]!r}")
            seen.add(key)
    return result


def record_loads(text: str | bytes) -> Any:
    """One parse that refuses a key twice (:class:`DuplicateKey`); any other error is json's or RecursionError."""
    return json.loads(text, object_pairs_hook=_unique_keys)


def strict_loads(text: str | bytes) -> Any:
    """``json.loads`` that refuses too-deep nesting, duplicate keys and trailing data, each as a ValueError."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise ValueError("JSON nested too deep to read") from None
    except MemoryError:
        raise ValueError("JSON too large to read in the memory there is") from None


def bounded_lines(handle: IO[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """The lines of a binary file, each at most ``limit`` bytes; a longer one is a ValueError, never read whole."""
    offset = 0
    while line := handle.readline(limit + 1):
        if len(line) > limit and not line.endswith(b"\n"):
            raise ValueError(f"a line at byte {offset} is longer than {limit >> 20} MiB")
        offset += len(line)
        yield line


def bounded_number(value: Any, most: float) -> float | None:
    """``value`` when it is a number from 0 to ``most`` (an int of any length, NaN and infinity included, is
    compared without overflow); else None. For figures an agent or a server wrote."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and value.bit_length() > 1023:
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number <= most else None
