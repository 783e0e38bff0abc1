"""Small pieces of wording every text of a run shares: the terminal summary, the judge's lines, the page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def counted(n: int, word: str) -> str:
    """``1 case``, ``2 cases``: the one place a count meets its noun."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def left_out_text(block: Mapping[str, Any]) -> str:
    """``; 1 case left out (...)``: the cases the lift, or help and harm, leave out because their agent never
    answered in an arm (``n_unanswered``); nothing when none was."""
    unanswered = block.get("n_unanswered")
    if not isinstance(unanswered, int) or not unanswered:
        return ""
    return f"; {counted(unanswered, 'case')} left out (its agent never answered in one arm or both)"
