"""What a well-formed answer of each built-in kind looks like, checked when a case is collected.

An answer the judge can never match (``12345`` for money, ``null``, a
voucher in lower case) would fail every run with a baffling reason, so it
is refused before any agent runs, with the spelling that works.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# The built-in answer kinds: part of what a case is, so they are named here, below the judges.
KIND_MONEY = "money"
KIND_VOUCHER = "voucher"
KIND_EVIDENCE_JSON = "evidence_json"
KIND_ABSTAIN = "abstain"
KIND_FILES = "files"
# The public benchmarks' kinds: free-form answers, each with its own deterministic judge (a lexical one for
# LongMemEval, the paper's token F1 for LoCoMo); an LLM judge may attach to them by kind.
KIND_LONGMEMEVAL = "longmemeval"
KIND_LOCOMO = "locomo"
# BEAM's rubric-judged answers (a lexical reading of the rubric here) and MemoryAgentBench's matched answers.
KIND_BEAM = "beam"
KIND_MEMORYAGENTBENCH = "memoryagentbench"
# An open question of the user's own: no deterministic judge; only the judge command (--recall-judge-cmd) scores it.
KIND_FREE = "free"
BUILTIN_KINDS = frozenset(
    {
        KIND_MONEY,
        KIND_VOUCHER,
        KIND_EVIDENCE_JSON,
        KIND_ABSTAIN,
        KIND_FILES,
        KIND_LONGMEMEVAL,
        KIND_LOCOMO,
        KIND_BEAM,
        KIND_MEMORYAGENTBENCH,
        KIND_FREE,
    }
)
# The public benchmarks' questions no deterministic metric can read, so only the judge command scores them: BEAM's
# abilities whose rubric is about how an answer is written, and MemoryAgentBench's sub-datasets it scores by an LLM.
BEAM_JUDGE_ONLY_ABILITIES = frozenset({"instruction_following", "preference_following"})
MAB_JUDGE_ONLY_METRIC = "llm_judge"
# Keys an answer.json of these kinds carries besides the four every answer has: what a record keeps to compare
# with the published tables, and what a judge needs.
EXTRA_ANSWER_KEYS = {
    KIND_LONGMEMEVAL: frozenset(
        {"question_id", "question_type", "question", "question_date", "abstention", "sessions_per_step"}
    ),
    KIND_FREE: frozenset({"question"}),
    KIND_BEAM: frozenset({"question_id", "sample_id", "beam_ability", "question", "rubric", "chars_per_step"}),
    KIND_MEMORYAGENTBENCH: frozenset(
        {"question_id", "sample_id", "mab_source", "mab_metric", "question", "answers", "chars_per_step"}
    ),
    KIND_LOCOMO: frozenset(
        {
            "question_id",
            "sample_id",
            "locomo_category",
            "question",
            "evidence",
            "adversarial_answer",
            "sessions_per_step",
        }
    ),
}

# The judge's canonical money form: digits, a period, exactly two decimals, no sign of grouping.
MONEY_FORM = re.compile(r"-?(?:0|[1-9]\d*)\.\d{2}")
VOUCHER_FORM = re.compile(r"AR-2026-\d{4}")


def builtin_kind(kind: str) -> bool:
    return kind in BUILTIN_KINDS


def judge_only_label(expected: Mapping[str, Any]) -> str | None:
    """What makes an imported question one only the judge command can score: its BEAM ability or its
    MemoryAgentBench sub-dataset (each part of the case's node id, so ``-k`` can leave it out); None for any other.
    A ``free`` case, the user's own, is told apart by its kind."""
    kind = expected.get("answer_kind")
    if kind == KIND_BEAM and expected.get("beam_ability") in BEAM_JUDGE_ONLY_ABILITIES:
        return str(expected["beam_ability"])
    if kind == KIND_MEMORYAGENTBENCH and expected.get("mab_metric") == MAB_JUDGE_ONLY_METRIC:
        return str(expected.get("mab_source") or expected.get("category"))
    return None


def answer_form_error(kind: str, answer: Any) -> str | None:
    """Why ``answer`` can never be matched by the judge of ``kind``, with how to write it; None when it is fine."""
    if kind == KIND_MONEY:
        if not isinstance(answer, str) or not MONEY_FORM.fullmatch(answer):
            return (
                f'a money answer must be a JSON string with two decimals and no grouping, like "12345.00", '
                f"not {_shown(answer)}"
            )
    elif kind == KIND_VOUCHER:
        if not isinstance(answer, str) or not VOUCHER_FORM.fullmatch(answer):
            return f'a voucher answer must be a JSON string like "AR-2026-0042", not {_shown(answer)}'
    elif kind == KIND_EVIDENCE_JSON:
        return _evidence_error(answer)
    elif kind in (KIND_LONGMEMEVAL, KIND_LOCOMO, KIND_BEAM, KIND_MEMORYAGENTBENCH, KIND_FREE):
        if not isinstance(answer, str) or not answer.strip():
            return f"a {kind} answer must be a non-empty JSON string, not {_shown(answer)}"
    elif kind == KIND_FILES:
        from pytest_recall.cases.files_checks import files_answer_error

        return files_answer_error(answer)
    return None


def _evidence_error(answer: Any) -> str | None:
    how = 'an evidence_json answer must be an object like {"value": "a string or null", "evidence": ["E1-3"]}'
    if not isinstance(answer, dict):
        return f"{how}, not {_shown(answer)}"
    if set(answer) != {"value", "evidence"}:
        return f"{how}; it has key(s) {', '.join(sorted(answer)) or 'none'}"
    value, evidence = answer["value"], answer["evidence"]
    if value is not None and not isinstance(value, str):
        return f"{how}; its value is {_shown(value)}"
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        return f"{how}; its evidence is {_shown(evidence)}"
    if len(set(evidence)) != len(evidence):
        return f"{how}; its evidence names an event twice"
    return None


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
