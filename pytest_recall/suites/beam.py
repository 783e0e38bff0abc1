"""BEAM's conversations and probing questions, checked field by field, and the case group each conversation becomes.

BEAM ("Beyond a Million Tokens") ships one folder per conversation, as its
repository's ``chats/<size>/<n>/`` and its Hugging Face export's
``download_dataset.py`` lay them out:

- ``chat.json``: an array of batches ``{"batch_number", "time_anchor",
  "turns": [[message, ...], ...]}``, each message ``{"role", "id",
  "content", ...}``; the 10M conversations nest the batches one level
  deeper, as ``[{"plan-1": [batch, ...]}, {"plan-2": [...]}, ...]``. Where a
  ``chat_trunecated.json`` (sic) is present it is the chat the paper's
  answer generation reads, and so is the one read here.
- ``probing_questions/probing_questions.json``: an object of the ten
  abilities, each a list of questions with ``question``, a ``rubric`` list,
  and a reference answer under a name that varies by ability (``answer``,
  ``ideal_response``, ``ideal_answer``, ``ideal_summary``,
  ``expected_compliance``).

The hub's rows (``conversation_id``, ``chat``, ``probing_questions``, ...,
as ``datasets``' ``to_json`` writes a split such as ``100K``) are read too:
there ``chat`` is a list of batches, each a flat list of messages (the 10M
split: a list of ``{"plan-N": [batch, ...]}`` objects, the other plans
null), and ``probing_questions`` is the Python literal of the probing
questions' object, read with ``ast.literal_eval``. A row's ``chat`` is
spooled to a temporary file a batch at a time as the row is read (a 10M
row's a plan at a time), as MemoryAgentBench's contexts are, so no row's
conversation is held whole.

A conversation becomes a case group: its batches are ingested once, cut into
steps by a character budget (:mod:`long_steps`), and each probing question
is a case of one step. The chat is read one batch at a time, twice (checked,
then written), so a 10M-token conversation is never held whole.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_recall.cases import KIND_BEAM
from pytest_recall.suites.json_stream import Digest, SpooledItems, iter_array
from pytest_recall.suites.public_records import RecordError, require, require_list, require_text, shown

# The ten memory abilities, as the paper and the probing-question files name them.
ABILITIES = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
PROBING_FILE = Path("probing_questions") / "probing_questions.json"
CHAT_FILES = ("chat_trunecated.json", "chat.json")
# Where each ability keeps its reference answer.
GOLD_FIELDS = ("answer", "ideal_response", "ideal_answer", "ideal_summary", "expected_compliance")
ROLES = ("user", "assistant")
# The key of a 10M chat's plan, whose batches are read one at a time.
PLAN_KEY = re.compile(r"plan-\d+")
UNDATED = "an unrecorded date"
# The generator's index marker at the end of a user message ("... ->-> 1,1"): bookkeeping, not conversation.
_INDEX_MARK = re.compile(r"\s*->->\s*\d+(?:\s*,\s*\d+)*\s*$")


@dataclass(frozen=True, slots=True)
class Probe:
    ability: str
    index: int
    question: str
    answer: str
    rubric: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Batch:
    number: int
    time_anchor: str
    messages: tuple[tuple[str, str], ...]


def conversation_folders(source: Path) -> list[Path]:
    """The conversation folders ``source`` names: itself, or its sub-folders that hold probing questions."""
    if (source / PROBING_FILE).is_file():
        return [source]
    if not source.is_dir():
        raise RecordError(f"{source}: not a BEAM conversation folder (one holding {PROBING_FILE}) nor a folder of them")
    found = [child for child in source.iterdir() if (child / PROBING_FILE).is_file()]
    if not found:
        raise RecordError(f"{source}: no folder here holds {PROBING_FILE}; give chats/<size> or chats/<size>/<n>")
    return sorted(found, key=lambda child: (0, int(child.name), "") if child.name.isdigit() else (1, 0, child.name))


def chat_file(folder: Path) -> Path:
    for name in CHAT_FILES:
        if (folder / name).is_file():
            return folder / name
    raise RecordError(f"{folder}: holds no chat.json")


def sample_id(folder: Path) -> str:
    """A conversation's id: its size and number (``100K-1``), unique across the sizes."""
    return f"{folder.parent.name}-{folder.name}"


def parse_probes(data: Any, where: str) -> list[Probe]:
    if not isinstance(data, Mapping):
        raise RecordError(f"{where}: expected an object of the ten abilities, found {type(data).__name__}")
    probes = []
    for ability, questions in data.items():
        if ability not in ABILITIES:
            raise RecordError(f"{where}: {ability!r} is not one of BEAM's abilities ({', '.join(ABILITIES)})")
        if not isinstance(questions, list):
            raise RecordError(f"{where}: field {ability!r} must be a list of questions")
        for index, probe in enumerate(questions):
            probes.append(_probe(ability, index, probe, f"{where}: field '{ability}[{index}]'"))
    return probes


def _probe(ability: str, index: int, probe: Any, where: str) -> Probe:
    if not isinstance(probe, Mapping):
        raise RecordError(f"{where} must be an object")
    question = require_text(probe, "question", where)
    rubric = require_list(probe, "rubric", where)
    if not all(isinstance(item, str) and item.strip() for item in rubric) or not rubric:
        raise RecordError(f"{where}: field 'rubric' must be a non-empty list of strings, not {shown(rubric)}")
    gold = next((probe[name] for name in GOLD_FIELDS if isinstance(probe.get(name), str) and probe[name].strip()), None)
    if gold is None:
        raise RecordError(f"{where}: no reference answer (one of {', '.join(GOLD_FIELDS)})")
    return Probe(ability, index, question.strip(), gold.strip(), tuple(item.strip() for item in rubric))


def iter_batches(path: Path, digest: Digest | None = None) -> Iterator[Batch]:
    """The chat's batches in order, one at a time; a 10M chat's plans are read through, batch by batch."""
    for number, (plan, batch) in enumerate(iter_array(path, digest=digest, unwrap=PLAN_KEY), start=1):
        where = f"{path.name}: batch {number}" + (f" (in {plan!r})" if plan else "")
        yield _batch(number, batch, where)


def _batch(number: int, batch: Any, where: str) -> Batch:
    if not isinstance(batch, Mapping):
        raise RecordError(f"{where} must be an object with 'turns'")
    turns = require_list(batch, "turns", where)
    messages: list[tuple[str, str]] = []
    anchor = batch.get("time_anchor")
    for t, turn in enumerate(turns):
        for m, message in enumerate(turn if isinstance(turn, list) else [turn]):
            here = f"{where}: turns[{t}][{m}]"
            if not isinstance(message, Mapping) or message.get("role") not in ROLES:
                raise RecordError(f"{here} must be an object whose 'role' is user or assistant")
            content = message.get("content")
            if not isinstance(content, str):
                raise RecordError(f"{here}: field 'content' must be a string, not {shown(content)}")
            anchor = anchor or message.get("time_anchor")
            messages.append((str(message["role"]), _INDEX_MARK.sub("", content)))
    dated = anchor.strip() if isinstance(anchor, str) and anchor.strip() else UNDATED
    return Batch(number, dated, tuple(messages))


def session_header(batch: Batch, total: int) -> str:
    """The batch's header, in the form the harness's reference agents read sessions by."""
    return f"Chat session {batch.number} of {total}, held on {batch.time_anchor}:"


def ingest_opening() -> str:
    return (
        "Below is part of a long conversation between a user and you, an AI assistant, from before today. "
        "Remember what matters: in a later, separate session the user will ask you about it."
    )


def question_id(sample: str, probe: Probe) -> str:
    return f"{sample}-{probe.ability}-{probe.index + 1}"


def question_prompt(probe: Probe) -> str:
    return (
        "Answer the user's question from what you remember of your earlier conversation with them.\n\n"
        f"Question: {probe.question}\n\n"
        "Give your answer on the final line of your output (an ordered list may take several lines). If the "
        "conversation never gave the information asked for, say that it was not mentioned.\n"
    )


def expectation(sample: str, probe: Probe, chars_per_step: int) -> dict[str, Any]:
    """The answer.json of a probing question: the rubric the judges read, and its origin."""
    return {
        "id": question_id(sample, probe),
        "category": probe.ability,
        "answer": probe.answer,
        "answer_kind": KIND_BEAM,
        "question_id": question_id(sample, probe),
        "sample_id": sample,
        "beam_ability": probe.ability,
        "question": probe.question,
        "rubric": list(probe.rubric),
        "chars_per_step": chars_per_step,
    }


def parse_row(index: int, row: Any, split: str) -> tuple[str, list[Probe], Iterator[Batch]]:
    """A hub row: its id (``<split>-<conversation_id>``), its probing questions and its batches, read as used (a
    row read by :func:`~pytest_recall.suites.json_stream.iter_rows` holds its chat spooled, not in memory)."""
    where = f"record {index}"
    if not isinstance(row, Mapping):
        raise RecordError(f"{where}: expected a JSON object, found {type(row).__name__}")
    conversation = row.get("conversation_id")
    if not isinstance(conversation, (str, int)) or isinstance(conversation, bool) or not str(conversation).strip():
        raise RecordError(f"{where}: field 'conversation_id' must be a string, not {shown(conversation)}")
    sample = f"{split}-{str(conversation).strip()}"
    probes = require(row, "probing_questions", where)
    if isinstance(probes, str):
        try:
            probes = ast.literal_eval(probes)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise RecordError(f"{where}: field 'probing_questions' is no Python literal of the questions") from None
    parsed = parse_probes(probes, f"{where}: field 'probing_questions'")
    chat = row.get("chat")
    items = chat.items() if isinstance(chat, SpooledItems) else iter(require_list(row, "chat", where))
    return sample, parsed, _row_batches(items, where)


def _row_batches(items: Iterator[Any], where: str) -> Iterator[Batch]:
    """A hub row's batches, read as they are used from its chat's elements (spooled by the reader, one held)."""
    number = 0
    for item in items:
        # A 10M row's item is {"plan-N": [batch, ...], <the other plans>: null}; any other row's item is a batch.
        plans = [v for v in item.values() if v is not None] if isinstance(item, Mapping) else [[item]]
        for plan in plans:
            for batch in plan if isinstance(plan, list) else [plan]:
                number += 1
                # A batch is a flat list of messages, or (as chat.json writes it) an object of turns.
                turns = batch if isinstance(batch, Mapping) else {"turns": [batch]}
                yield _batch(number, turns, f"{where}: chat batch {number}")
