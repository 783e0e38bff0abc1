"""How the reference notebook agent answers memory-audit questions.

It works from the prompt text alone, as any agent must, and never imports the
generator: if the two shared code, a bug in one would hide in the other. In
session 1 the notebook keeps :func:`parse_trail`'s text; in session 2 it calls
:func:`answer` on that text and :func:`question_of` the new prompt, and prints
:func:`format_answer` as its last line. Pure functions, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

TRAIL_BEGIN = "BEGIN AUDIT TRAIL"
TRAIL_END = "END AUDIT TRAIL"
_COLUMNS = ("project", "field", "kind", "actor", "value", "ref", "note")
_EVENT_ID = re.compile(r"^E\d+-\d+$")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z$")
_QUESTION = re.compile(
    r"^(?:as of (?P<date>\d{4}-\d{2}-\d{2})\b.*?,\s*)?"
    r"what (?:is|was) the (?:current )?value of (?P<field>\S+) for project (?P<project>[^\s?]+)\?$",
    re.IGNORECASE,
)
# Only the user decides; these are the kinds by which a user sets or withdraws a value.
_SETS = frozenset({"user_statement", "confirmation", "correction"})
_WITHDRAWS = "retraction"


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One line of a trail. ``value`` and ``ref`` are None where the line shows ``-``."""

    event_id: str
    time: str
    project: str
    field: str
    kind: str
    actor: str
    value: str | None
    ref: str | None
    note: str


@dataclass(frozen=True, slots=True)
class AuditQuestion:
    """A question: which field of which project, as of the end of which day (None: now)."""

    field: str
    project: str
    as_of: str | None


def parse_trail(prompt: str) -> str | None:
    """The trail block of an audit prompt, markers included, or None when the prompt has none."""
    start = prompt.find(TRAIL_BEGIN)
    end = prompt.find(TRAIL_END, start + 1)
    if start < 0 or end < 0:
        return None
    block = prompt[start : end + len(TRAIL_END)]
    return block if parse_events(block) else None


def parse_events(trail: str) -> tuple[AuditEvent, ...]:
    """Every event line of a trail; any other line is skipped."""
    events = []
    for line in trail.splitlines():
        parts = line.strip().split(" | ", len(_COLUMNS) + 1)
        if len(parts) != len(_COLUMNS) + 2 or not _EVENT_ID.match(parts[0]) or not _TIME.match(parts[1]):
            continue
        cells: dict[str, str] = {}
        for column, part in zip(_COLUMNS, parts[2:], strict=True):
            key, sep, text = part.partition("=")
            if key != column or not sep:
                break
            cells[column] = text
        else:
            events.append(
                AuditEvent(
                    event_id=parts[0],
                    time=parts[1],
                    project=cells["project"],
                    field=cells["field"],
                    kind=cells["kind"],
                    actor=cells["actor"],
                    value=None if cells["value"] == "-" else cells["value"],
                    ref=None if cells["ref"] == "-" else cells["ref"],
                    note=cells["note"],
                )
            )
    return tuple(events)


def question_of(prompt: str) -> str | None:
    """The text after the last ``Question:`` label of a step prompt."""
    found = [
        line.strip()[len("Question:") :].strip() for line in prompt.splitlines() if line.strip().startswith("Question:")
    ]
    return found[-1] if found else None


def parse_question(question: str) -> AuditQuestion:
    __tracebackhide__ = True
    match = _QUESTION.match(question.strip())
    if match is None:
        raise ValueError(f"not an audit question this solver knows: {question!r}")
    return AuditQuestion(field=match["field"], project=match["project"], as_of=match["date"])


def answer(events: str | Sequence[AuditEvent], question: str) -> dict[str, Any]:
    """``{"value", "evidence"}`` for a question, replaying the user's events in time order.

    ``events`` may be the stored trail text itself, so the notebook needs
    nothing but what it kept. Evidence is listed in time order.
    """
    trail = parse_events(events) if isinstance(events, str) else tuple(events)
    asked = parse_question(question)
    links = _alias_paths(trail, asked.project)
    deciding = [
        e
        for e in trail
        if e.actor == "user"
        and (e.kind in _SETS or e.kind == _WITHDRAWS)
        and e.field == asked.field
        and e.project in links
        and (asked.as_of is None or e.time[:10] <= asked.as_of)
    ]
    if not deciding:
        return {"value": None, "evidence": []}
    last = max(deciding, key=lambda e: e.time)
    cited = sorted((last, *links[last.project]), key=lambda e: e.time)
    return {"value": None if last.kind == _WITHDRAWS else last.value, "evidence": [e.event_id for e in cited]}


def _alias_paths(trail: Sequence[AuditEvent], project: str) -> dict[str, tuple[AuditEvent, ...]]:
    """Every name of ``project``, each with the alias events that tie it to the asked name.

    Breadth first, so each name is reached by the fewest aliases: that is the minimal citation.
    """
    aliases = [e for e in trail if e.kind == "alias" and e.actor == "user" and e.value is not None]
    paths: dict[str, tuple[AuditEvent, ...]] = {project: ()}
    frontier = [project]
    while frontier:
        reached = []
        for name in frontier:
            for link in aliases:
                other = link.value if link.project == name else link.project if link.value == name else None
                if other is not None and other not in paths:
                    paths[other] = (*paths[name], link)
                    reached.append(other)
        frontier = reached
    return paths


def format_answer(result: dict[str, Any]) -> str:
    """The one-line JSON an answer is printed as."""
    return json.dumps({"value": result["value"], "evidence": list(result["evidence"])}, separators=(",", ":"))
