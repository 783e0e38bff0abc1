"""LoCoMo's conversations, checked field by field, and the case group each becomes.

A record of ``locomo10.json`` is one long conversation between two speakers
(``conversation``: ``session_N`` lists of turns, each dated by
``session_N_date_time``) with its questions (``qa``). The questions share
the conversation, so a conversation becomes a *case group*: its sessions are
the group's ingest steps, run once, and each question is a case of one step
that reads the memory the ingest left.

Awkward parts of the real file handled here: date keys for sessions that
hold no turns (``session_20_date_time`` with no ``session_20``) are ignored;
image turns carry ``img_url`` and a ``blip_caption``, shown to the agent as
what was shared; category-5 (adversarial) questions may carry an
``adversarial_answer`` and no ``answer``, and are scored on declining.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_recall.cases import KIND_LOCOMO
from pytest_recall.suites.public_records import (
    RecordError,
    answer_text,
    require,
    require_list,
    require_text,
    shown,
)
from pytest_recall.suites.public_records import ingest_prompts as shared_ingest_prompts

# The categories as the evaluation code numbers them, with the names the paper's tables use.
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = 5
DECLINE_ANSWER = "Not mentioned in the conversation"
_SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True, slots=True)
class Turn:
    speaker: str
    text: str
    dia_id: str
    image_caption: str | None = None


@dataclass(frozen=True, slots=True)
class DatedChat:
    """One dated chat of a LoCoMo conversation (the dataset's "session"; not one of ours, which runs an agent)."""

    number: int
    date_time: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class QA:
    index: int
    question: str
    category: int
    answer: str | None
    adversarial_answer: str | None
    evidence: tuple[str, ...]

    @property
    def category_name(self) -> str:
        return CATEGORY_NAMES[self.category]


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[DatedChat, ...]
    questions: tuple[QA, ...]


def record_label(index: int, row: Any) -> str:
    sample = row.get("sample_id") if isinstance(row, Mapping) else None
    return f"record {index} (sample_id {sample!r})" if isinstance(sample, (str, int)) else f"record {index}"


def parse_conversation(index: int, row: Any) -> Conversation:
    """The record as a :class:`Conversation`, or :class:`RecordError` naming the record and the field."""
    where = record_label(index, row)
    if not isinstance(row, Mapping):
        raise RecordError(f"{where}: expected a JSON object, found {type(row).__name__}")
    sample = require(row, "sample_id", where)
    if isinstance(sample, bool) or not isinstance(sample, (str, int)) or not str(sample).strip():
        raise RecordError(f"{where}: field 'sample_id' must be a string, not {shown(sample)}")
    conversation = require(row, "conversation", where)
    if not isinstance(conversation, Mapping):
        raise RecordError(f"{where}: field 'conversation' must be an object")
    inner = f"{where}: field 'conversation'"
    speaker_a = require_text(conversation, "speaker_a", inner)
    speaker_b = require_text(conversation, "speaker_b", inner)
    sessions = _sessions(conversation, inner)
    if not sessions:
        raise RecordError(f"{inner} holds no session_N with turns")
    questions = tuple(_qa(number, qa, where) for number, qa in enumerate(require_list(row, "qa", where)))
    return Conversation(str(sample).strip(), speaker_a, speaker_b, sessions, questions)


def _sessions(conversation: Mapping[str, Any], where: str) -> tuple[DatedChat, ...]:
    numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION_KEY.match(str(key))))
    sessions = []
    for number in numbers:
        key = f"session_{number}"
        turns = conversation[key]
        if not isinstance(turns, list):
            raise RecordError(f"{where}.{key} must be a list of turns, not {type(turns).__name__}")
        if not turns:
            continue  # an empty session is no session, as the evaluation code reads it
        date_time = conversation.get(f"{key}_date_time")
        if not isinstance(date_time, str) or not date_time.strip():
            raise RecordError(f"{where}.{key}_date_time is missing or empty, but {key} has turns")
        parsed = tuple(_turn(turn, f"{where}.{key}[{i}]") for i, turn in enumerate(turns))
        sessions.append(DatedChat(number, date_time.strip(), parsed))
    return tuple(sessions)


def _turn(turn: Any, where: str) -> Turn:
    if not isinstance(turn, Mapping):
        raise RecordError(f"{where} must be an object with 'speaker' and 'text'")
    speaker = require_text(turn, "speaker", where)
    text = require(turn, "text", where)
    if not isinstance(text, str):
        raise RecordError(f"{where}: field 'text' must be a string, not {type(text).__name__}")
    caption = turn.get("blip_caption")
    if caption is not None and not isinstance(caption, str):
        raise RecordError(f"{where}: field 'blip_caption' must be a string, not {type(caption).__name__}")
    return Turn(speaker, text, str(turn.get("dia_id", "")), caption or None)


def _qa(number: int, qa: Any, where: str) -> QA:
    here = f"{where}: field 'qa[{number}]'"
    if not isinstance(qa, Mapping):
        raise RecordError(f"{here} must be an object")
    question = require_text(qa, "question", here)
    category = require(qa, "category", here)
    if isinstance(category, bool) or category not in CATEGORY_NAMES:
        raise RecordError(f"{here}: 'category' is {shown(category)}, not one of 1, 2, 3, 4, 5")
    answer = qa.get("answer")
    adversarial = qa.get("adversarial_answer")
    if category == ADVERSARIAL:
        answer = None if answer is None else answer_text(answer, f"{here}: 'answer'")
        adversarial = None if adversarial is None else answer_text(adversarial, f"{here}: 'adversarial_answer'")
    else:
        answer = answer_text(require(qa, "answer", here), f"{here}: 'answer'")
    evidence = qa.get("evidence", [])
    if not isinstance(evidence, list):
        raise RecordError(f"{here}: 'evidence' must be a list, not {type(evidence).__name__}")
    return QA(number, question, int(category), answer, adversarial, tuple(str(e) for e in evidence))


def turn_line(turn: Turn) -> str:
    shared = f" [shares an image: {turn.image_caption}]" if turn.image_caption else ""
    return f"{turn.speaker}: {turn.text}{shared}"


def ingest_prompts(conversation: Conversation, sessions_per_step: int) -> list[str]:
    """The group's ingest steps: ``sessions_per_step`` dated sessions each."""
    total = len(conversation.sessions)
    who = f"{conversation.speaker_a} and {conversation.speaker_b}"
    texts = [
        "\n".join([f"Session {position} of {total}, held at {session.date_time}:", *map(turn_line, session.turns)])
        for position, session in enumerate(conversation.sessions, start=1)
    ]

    def opening(count: int) -> str:
        what = "a session" if count == 1 else f"{count} sessions"
        return (
            f"Below is {what} of a long conversation between {who}. Remember what matters: in a later, "
            "separate session you will be asked questions about their conversations."
        )

    return shared_ingest_prompts(texts, sessions_per_step, opening)


def question_prompt(conversation: Conversation, qa: QA) -> str:
    return (
        f"Answer a question about the conversations between {conversation.speaker_a} and "
        f"{conversation.speaker_b} that you remember from earlier sessions.\n\n"
        f"Question: {qa.question}\n\n"
        "Answer with a short phrase on the final line of your output. If the conversations never mention it, "
        f"answer: {DECLINE_ANSWER}.\n"
    )


def question_id(conversation: Conversation, qa: QA) -> str:
    return f"{conversation.sample_id}-q{qa.index + 1:03d}"


def _said(conversation: Conversation, dia_id: str) -> str | None:
    """The text of the turn with this dialogue id (LoCoMo's evidence names turns as ``D<chat>:<turn>``)."""
    for chat in conversation.sessions:
        for turn in chat.turns:
            if turn.dia_id == dia_id:
                return turn.text
    return None


def expectation(conversation: Conversation, qa: QA, sessions_per_step: int) -> dict[str, Any]:
    """The answer.json of a question: the F1 judge reads ``answer`` and ``locomo_category``."""
    expected: dict[str, Any] = {
        "id": question_id(conversation, qa),
        "category": qa.category_name,
        # An adversarial question is scored on declining, so declining is its expected answer.
        "answer": DECLINE_ANSWER if qa.category == ADVERSARIAL else qa.answer,
        "answer_kind": KIND_LOCOMO,
        "question_id": question_id(conversation, qa),
        "sample_id": conversation.sample_id,
        "locomo_category": qa.category,
        "question": qa.question,
        "evidence": list(qa.evidence),
        # The evidence turns' own words, by their dialogue ids: what a memory must return (see scoring/memory_use).
        "evidence_text": [said for dia_id in qa.evidence if (said := _said(conversation, dia_id)) is not None],
        "sessions_per_step": sessions_per_step,
    }
    if qa.adversarial_answer is not None:
        expected["adversarial_answer"] = qa.adversarial_answer
    return expected


def matches_category(qa: QA, wanted: Sequence[str]) -> bool:
    return not wanted or str(qa.category) in wanted or qa.category_name in wanted
