"""LongMemEval's records, checked field by field, and the case each becomes.

A record (one of the 500 in ``longmemeval_s.json``, ``longmemeval_m.json`` or
``longmemeval_oracle.json``) holds a question, its answer, the question's date
and a haystack of dated chat sessions. Each haystack session becomes a step
that tells the agent the session's date and turns and asks it to remember;
the question is the last step, told the question's date. Questions whose id
ends in ``_abs`` have no answer in the haystack: the gold text explains why,
and the right reply declines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_recall.cases import KIND_LONGMEMEVAL
from pytest_recall.suites.public_records import (
    RecordError,
    answer_text,
    require,
    require_list,
    require_text,
    shown,
)
from pytest_recall.suites.public_records import ingest_prompts as shared_ingest_prompts

QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
ABSTENTION = "abstention"
ABSTENTION_SUFFIX = "_abs"
ROLES = ("user", "assistant")


@dataclass(frozen=True, slots=True)
class Turn:
    role: str
    content: str
    # The dataset's ``has_answer``: an evidence turn. Kept for retrieval figures, never shown to the agent.
    has_answer: bool = False


@dataclass(frozen=True, slots=True)
class DatedChat:
    """One dated chat of a question's haystack (the dataset's "session"; not one of ours, which runs an agent)."""

    session_id: str
    date: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    """One LongMemEval record, checked."""

    question_id: str
    question_type: str
    question: str
    answer: str
    question_date: str
    sessions: tuple[DatedChat, ...]

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith(ABSTENTION_SUFFIX)

    @property
    def category(self) -> str:
        """The type a result is reported under; abstention questions are reported apart, as in the paper."""
        return ABSTENTION if self.abstention else self.question_type


def record_label(index: int, row: Any) -> str:
    """How an error names a record: its position, and its id when it has a usable one."""
    qid = row.get("question_id") if isinstance(row, Mapping) else None
    return f"record {index} (question_id {qid!r})" if isinstance(qid, str) and qid else f"record {index}"


def parse_question(index: int, row: Any) -> Question:
    """The record as a :class:`Question`, or :class:`RecordError` naming the record and the field."""
    where = record_label(index, row)
    if not isinstance(row, Mapping):
        raise RecordError(f"{where}: expected a JSON object, found {type(row).__name__}")
    qid = require_text(row, "question_id", where)
    qtype = require_text(row, "question_type", where)
    if qtype not in QUESTION_TYPES:
        raise RecordError(f"{where}: field 'question_type' is {qtype!r}, not one of {', '.join(QUESTION_TYPES)}")
    dates = require_list(row, "haystack_dates", where)
    sessions = require_list(row, "haystack_sessions", where)
    ids = row.get("haystack_session_ids")
    if ids is not None and (not isinstance(ids, list) or len(ids) != len(sessions)):
        raise RecordError(f"{where}: field 'haystack_session_ids' must be a list as long as 'haystack_sessions'")
    if not sessions:
        raise RecordError(f"{where}: field 'haystack_sessions' is empty; a question needs sessions to remember")
    if len(dates) != len(sessions):
        raise RecordError(
            f"{where}: field 'haystack_dates' has {len(dates)} dates for {len(sessions)} haystack sessions"
        )
    parsed = []
    for number, (date, turns) in enumerate(zip(dates, sessions, strict=True)):
        if not isinstance(date, str) or not date.strip():
            raise RecordError(f"{where}: field 'haystack_dates[{number}]' must be a date string, not {shown(date)}")
        session_id = str(ids[number]) if ids is not None else f"session_{number + 1}"
        parsed.append(DatedChat(session_id, date.strip(), _turns(turns, where, f"haystack_sessions[{number}]")))
    return Question(
        question_id=qid,
        question_type=qtype,
        question=require_text(row, "question", where),
        answer=answer_text(require(row, "answer", where), f"{where}: field 'answer'"),
        question_date=require_text(row, "question_date", where),
        sessions=tuple(parsed),
    )


def _turns(turns: Any, where: str, field: str) -> tuple[Turn, ...]:
    if not isinstance(turns, list):
        raise RecordError(f"{where}: field {field!r} must be a list of turns, not {type(turns).__name__}")
    parsed = []
    for number, turn in enumerate(turns):
        here = f"{where}: field '{field}[{number}]'"
        if not isinstance(turn, Mapping):
            raise RecordError(f"{here} must be an object with 'role' and 'content'")
        role, content = turn.get("role"), turn.get("content")
        if role not in ROLES:
            raise RecordError(f"{here}: 'role' is {shown(role)}, not user or assistant")
        if not isinstance(content, str):
            raise RecordError(f"{here}: 'content' must be a string, not {type(content).__name__}")
        # ``has_answer`` marks the evidence turns for retrieval metrics; the agent must never see it.
        parsed.append(Turn(role, content, turn.get("has_answer") is True))
    return tuple(parsed)


def session_text(session: DatedChat, position: int, total: int) -> str:
    lines = [f"Chat session {position} of {total}, held on {session.date}:"]
    lines += [f"{turn.role}: {turn.content}" for turn in session.turns]
    return "\n".join(lines)


def ingest_opening(count: int) -> str:
    what, them = ("is a past chat session", "it") if count == 1 else (f"are {count} past chat sessions", "them")
    return (
        f"Below {what} between a user and you, an AI assistant, from before today. Remember what matters in "
        f"{them}: in a later, separate session the user may ask you about {them}."
    )


def ingest_prompts(question: Question, sessions_per_step: int) -> list[str]:
    """One step per group of ``sessions_per_step`` haystack sessions, each with its date."""
    total = len(question.sessions)
    texts = [session_text(session, i, total) for i, session in enumerate(question.sessions, start=1)]
    return shared_ingest_prompts(texts, sessions_per_step, ingest_opening)


def question_prompt(question: Question) -> str:
    return (
        f"The current date is {question.question_date}. Answer the user's question from what you remember of "
        "your earlier chat sessions with them.\n\n"
        f"Question: {question.question}\n\n"
        "Give your answer on the final line of your output. If your earlier sessions never gave the information "
        "asked for, say that it was not mentioned.\n"
    )


# An evidence turn's opening kept as its evidence text: a memory that returns the turn returns its opening too.
EVIDENCE_CHARS = 500


def expectation(question: Question, sessions_per_step: int) -> dict[str, Any]:
    """The answer.json of the case: what the lexical judge (and a later LLM judge) needs, and what a record keeps."""
    return {
        "id": question.question_id,
        "category": question.category,
        "answer": question.answer,
        "answer_kind": KIND_LONGMEMEVAL,
        "question_id": question.question_id,
        "question_type": question.question_type,
        "question": question.question,
        # A judge prompt may name it (recall-judge --prompt-file): a temporal question is asked as of this date.
        "question_date": question.question_date,
        "abstention": question.abstention,
        "sessions_per_step": sessions_per_step,
        # What a memory must return for this question: the turns the dataset marks has_answer (see scoring/memory_use).
        "evidence_text": [
            turn.content[:EVIDENCE_CHARS] for chat in question.sessions for turn in chat.turns if turn.has_answer
        ],
    }


def case_prompts(question: Question, sessions_per_step: int) -> list[str]:
    return [*ingest_prompts(question, sessions_per_step), question_prompt(question)]


def matches_type(question: Question, wanted: Sequence[str]) -> bool:
    return not wanted or question.category in wanted or question.question_type in wanted
