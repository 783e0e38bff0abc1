"""MemoryAgentBench's rows, checked field by field, and the case group each row becomes.

MemoryAgentBench (ICLR 2026) is published as four splits named for its
competencies (``Accurate_Retrieval``, ``Test_Time_Learning``,
``Long_Range_Understanding``, ``Conflict_Resolution``). A row holds one long
``context``, its ``questions`` and ``answers`` (one list of acceptable
answers per question, or one string), and ``metadata`` whose ``source``
names the sub-dataset (``eventqa_full``, ``ruler_qa1_197K``,
``factconsolidation_mh_262k``, ``icl_banking77_5900shot_balance``,
``detective_qa``, ...) and may carry ``question_ids`` or ``qa_pair_ids``.
The hub stores the splits as Parquet; this reads the same rows as JSON
Lines (what ``datasets``' ``to_json`` writes) or as one JSON array, so no
Parquet reader joins the dependencies: convert a split once with
``datasets`` or ``pandas`` (docs/public-benchmarks.md shows how).

"Inject once, ask many": a row becomes a case group whose ingest steps tell
the context in pieces of ``chars_per_step`` characters, cut at line ends,
and each question is a case of one step. One row is held at a time, and
not its context: the reader spools that to a temporary file
(:class:`~pytest_recall.suites.json_stream.SpooledText`) and the steps are
written from it a piece at a time, so a context of any length costs a
buffer of memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_recall.cases import KIND_MEMORYAGENTBENCH
from pytest_recall.suites.json_stream import SpooledText
from pytest_recall.suites.public_records import RecordError, answer_text, require, shown

COMPETENCIES = ("Accurate_Retrieval", "Test_Time_Learning", "Long_Range_Understanding", "Conflict_Resolution")
# A sub-dataset's name by its start, and the competency (the split) it belongs to.
COMPETENCY_BY_SOURCE = (
    ("eventqa", "Accurate_Retrieval"),
    ("ruler_", "Accurate_Retrieval"),
    ("longmemeval", "Accurate_Retrieval"),
    ("icl_", "Test_Time_Learning"),
    ("recsys", "Test_Time_Learning"),
    ("infbench", "Long_Range_Understanding"),
    ("detective", "Long_Range_Understanding"),
    ("factconsolidation", "Conflict_Resolution"),
)
UNDATED = "an unrecorded time"
# A sub-dataset's name by its start, and the metric its accuracy is, as the data set's README maps them; the
# judge (scoring/memoryagentbench_metrics.py) reads the name from answer.json's ``mab_metric``.
METRIC_BY_SOURCE = (
    ("eventqa", "substring_exact_match"),
    ("ruler_qa", "substring_exact_match"),
    ("factconsolidation", "substring_exact_match"),
    ("ruler_niah", "recall"),
    ("detective", "exact_match"),
    ("icl_", "exact_match"),
    ("recsys", "llm_judge"),
    ("infbench", "llm_judge"),
    ("longmemeval", "llm_judge"),
)


def metric_for(source: str) -> str:
    """The metric a sub-dataset's accuracy is; an unknown one is scored by substring match, the commonest."""
    lowered = source.lower()
    return next((metric for start, metric in METRIC_BY_SOURCE if lowered.startswith(start)), "substring_exact_match")


@dataclass(frozen=True, slots=True)
class Question:
    index: int
    question_id: str
    question: str
    answers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Row:
    sample_id: str
    source: str
    competency: str
    context: SpooledText
    questions: tuple[Question, ...]


def competency(source: str, file_name: str) -> str | None:
    """The split a row belongs to: by its sub-dataset, else by the split's name in the file's name."""
    lowered = source.lower()
    found = next((split for start, split in COMPETENCY_BY_SOURCE if lowered.startswith(start)), None)
    return found or next((split for split in COMPETENCIES if split.lower() in file_name.lower()), None)


def parse_row(index: int, row: Any, file_name: str) -> Row:
    where = f"record {index}"
    if not isinstance(row, Mapping):
        raise RecordError(f"{where}: expected a JSON object, found {type(row).__name__}")
    context = require(row, "context", where)
    if not isinstance(context, SpooledText) or context.blank:
        found = "a blank one" if isinstance(context, SpooledText) else shown(context)[:40]
        raise RecordError(f"{where}: field 'context' must be a non-empty string, not {found}")
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise RecordError(f"{where}: field 'metadata' must be an object, not {shown(metadata)}")
    source = str(metadata.get("source") or row.get("source") or "").strip()
    split = competency(source, file_name)
    if split is None:
        raise RecordError(
            f"{where}: field 'metadata.source' is {source!r}, which names no competency; "
            f"name the split in the file's name ({', '.join(COMPETENCIES)})"
        )
    sample = f"{source or split}-{index:04d}"
    questions = _listed(require(row, "questions", where))
    answers = _listed(require(row, "answers", where))
    if len(questions) != len(answers) or not questions:
        raise RecordError(f"{where}: {len(questions)} questions for {len(answers)} answers; they must pair up")
    ids = _listed(metadata.get("question_ids") or metadata.get("qa_pair_ids") or [])
    parsed = []
    for number, (question, gold) in enumerate(zip(questions, answers, strict=True)):
        here = f"{where}: questions[{number}]"
        if not isinstance(question, str) or not question.strip():
            raise RecordError(f"{here} must be a non-empty string, not {shown(question)}")
        golds = tuple(answer_text(g, f"{where}: answers[{number}]") for g in _flat(gold))
        if not golds:
            raise RecordError(f"{where}: answers[{number}] is empty")
        qid = str(ids[number]) if len(ids) == len(questions) else f"{sample}-q{number + 1:03d}"
        parsed.append(Question(number, qid, question.strip(), golds))
    return Row(sample, source, split, context, tuple(parsed))


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value not in (None, "") else []


def _flat(gold: Any) -> list[Any]:
    if isinstance(gold, list):
        return [item for part in gold for item in (part if isinstance(part, list) else [part])]
    return [gold]


def session_header(part: int, total: int) -> str:
    """A piece's header, in the form the harness's reference agents read sessions by."""
    return f"Session {part} of {total}, held at {UNDATED}:"


def ingest_opening() -> str:
    return (
        "Below is part of a long text shown to you, an AI assistant, in earlier sessions. Memorise what matters: "
        "in a later, separate session you will be asked questions about it."
    )


def question_prompt(question: Question) -> str:
    return (
        "Answer the question from what you memorised of the text in your earlier sessions.\n\n"
        f"Question: {question.question}\n\n"
        "Give only the answer on the final line of your output.\n"
    )


def expectation(row: Row, question: Question, chars_per_step: int) -> dict[str, Any]:
    """The answer.json of a question: the gold answers, the sub-dataset's metric, and the origin."""
    return {
        "id": question.question_id,
        "category": row.competency,
        "answer": question.answers[0],
        "answer_kind": KIND_MEMORYAGENTBENCH,
        "question_id": question.question_id,
        "sample_id": row.sample_id,
        "mab_source": row.source,
        "mab_metric": metric_for(row.source),
        "question": question.question,
        "answers": list(question.answers),
        "chars_per_step": chars_per_step,
    }
