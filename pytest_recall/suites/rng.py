"""SplitMix64: the one pseudo-random generator every generated suite draws from.

``random`` and ``hash()`` differ between Python versions and runs, and a suite
that moves under a user's feet cannot be compared across runs, so the suites
own these few lines. The ledger and the audit suites draw numbers in ranges
differently (multiply-shift against modulo); both ways are here, and each
suite keeps the one its saved cases were made with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
_PARTS_START = 0x6A09E667F3BCC908
_T = TypeVar("_T")


def mix64(z: int) -> int:
    """SplitMix64's output function: a bijection of 64-bit words that scatters every bit."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


class SplitMix64:
    """A tiny PRNG whose output is fixed by its seed on every machine and Python version."""

    __slots__ = ("_state",)

    def __init__(self, seed: int) -> None:
        self._state = seed & MASK64

    @classmethod
    def from_parts(cls, *parts: int) -> SplitMix64:
        """A generator seeded by several whole numbers, each mixed in so nearby tuples draw unrelated streams."""
        state = _PARTS_START
        for part in parts:
            state = mix64((state ^ (part & MASK64)) + GOLDEN_GAMMA)
        return cls(state)

    def next_u64(self) -> int:
        self._state = (self._state + GOLDEN_GAMMA) & MASK64
        return mix64(self._state)

    def below(self, n: int) -> int:
        """A number from 0 to ``n - 1`` by multiply-shift (the ledger suite's way)."""
        return (self.next_u64() * n) >> 64

    def between(self, low: int, high: int) -> int:
        """A number from ``low`` to ``high`` inclusive, by modulo (the audit suite's way)."""
        return low + self.next_u64() % (high - low + 1)

    def chance(self) -> bool:
        return self.next_u64() & 1 == 1

    def choice(self, items: Sequence[_T]) -> _T:
        return items[self.between(0, len(items) - 1)]

    def shuffled(self, items: Sequence[_T]) -> list[_T]:
        out = list(items)
        for i in range(len(out) - 1, 0, -1):
            j = self.between(0, i)
            out[i], out[j] = out[j], out[i]
        return out
