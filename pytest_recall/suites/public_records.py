"""What the public-benchmark importers share: field checks that name the record, and how sessions group into steps.

Every check raises :class:`RecordError` with one line that says which record
and which field, so a malformed data file stops the import before anything
is written.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

# How an error line shows a value from the file: a few levels and items of it, so the line stays one short line.
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict, _SHOWN.maxstring, _SHOWN.maxother = 3, 3, 3, 40, 40


class RecordError(ValueError):
    """A record of a data file that cannot be imported; the message names the record and the field."""


def shown(value: Any) -> str:
    """``value`` as an error line shows it: cut short, however long or deeply nested it is in the file."""
    return _SHOWN.repr(value)


def require(row: Mapping[str, Any], field: str, where: str) -> Any:
    if field not in row:
        raise RecordError(f"{where}: field {field!r} is missing")
    return row[field]


def require_text(row: Mapping[str, Any], field: str, where: str) -> str:
    value = require(row, field, where)
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"{where}: field {field!r} must be a non-empty string, not {shown(value)}")
    return value


def require_list(row: Mapping[str, Any], field: str, where: str) -> list[Any]:
    value = require(row, field, where)
    if not isinstance(value, list):
        raise RecordError(f"{where}: field {field!r} must be a list, not {type(value).__name__}")
    return value


def answer_text(value: Any, where: str) -> str:
    """A gold answer as text: the data sets hold some as numbers (a count, a year), which the judges read as text."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise RecordError(f"{where} must be a string or a number, not {shown(value)}")
    text = str(value).strip()
    if not text:
        raise RecordError(f"{where} is empty")
    return text


STORE_CUE = "Reply OK once you have stored what you need."


def steps_of_sessions(texts: Sequence[str], per_step: int) -> Iterator[Sequence[str]]:
    """Consecutive sessions, ``per_step`` to a step: 1 is one session per step (the faithful feed)."""
    for start in range(0, len(texts), per_step):
        yield texts[start : start + per_step]


def ingest_prompts(texts: Sequence[str], per_step: int, opening: Callable[[int], str]) -> list[str]:
    """The ingest steps: ``opening(n)`` for the ``n`` sessions of a step, the sessions, and the cue to store them."""
    return [
        "\n\n".join([opening(len(group)), *group, STORE_CUE]) + "\n" for group in steps_of_sessions(texts, per_step)
    ]
