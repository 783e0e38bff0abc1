"""Small pieces of wording every text of a run shares: the terminal summary, the judge's lines, the page."""

from __future__ import annotations


def counted(n: int, word: str) -> str:
    """``1 case``, ``2 cases``: the one place a count meets its noun."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
