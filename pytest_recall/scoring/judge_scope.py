"""Which answers the LLM judge (``--recall-judge-cmd``) sees, what it is asked, and when its word is the score.

Pure rules, no I/O. Free-form kinds (the public benchmarks' ``longmemeval``
and ``locomo``, and ``free``, which a user writes for an open question) are
always put to the judge; with ``--recall-judge-both`` every other kind whose
gold answer is text is too, so the two judges can be compared. The
deterministic score stays the case's score, except for ``free`` and the imported
questions no metric can read (which have no other judge) and, with
``--recall-free-form-judge=llm``, the free-form kinds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pytest_recall.cases import (
    KIND_BEAM,
    KIND_FILES,
    KIND_FREE,
    KIND_LOCOMO,
    KIND_LONGMEMEVAL,
    KIND_MEMORYAGENTBENCH,
    Case,
    CaseRun,
    judge_only_label,
)

# Kinds whose answers are open text: a deterministic judge of them is an approximation, an LLM judge the norm.
FREE_FORM_KINDS = frozenset({KIND_LONGMEMEVAL, KIND_LOCOMO, KIND_BEAM, KIND_MEMORYAGENTBENCH, KIND_FREE})
# Whose verdict is the score of a free-form kind's case: the built-in judge's, or the judge command's.
FreeFormJudge = Literal["deterministic", "llm"]
# The judge reads at most this much of an answer: its tail, where the answer line is.
MAX_JUDGED_ANSWER_CHARS = 4000


def has_text_gold(expected: Mapping[str, Any]) -> bool:
    """A gold answer a judge can read as text: not a files check list, not an evidence object."""
    answer = expected.get("answer")
    return isinstance(answer, (str, int, float)) and not isinstance(answer, bool)


def judged_by_llm(expected: Mapping[str, Any], *, both: bool) -> bool:
    """Whether a case's answer goes to the judge command: every free-form kind, and with ``both`` any text gold."""
    kind = str(expected.get("answer_kind", "money"))
    if kind in FREE_FORM_KINDS:
        return True
    return both and kind != KIND_FILES and has_text_gold(expected)


def llm_decides(expected: Mapping[str, Any], free_form: FreeFormJudge) -> bool:
    """Whether the judge command's verdict is the case's score: always for ``free`` and for an imported question no
    metric can read (a BEAM instruction-following one), by choice for the other free-form kinds."""
    kind = str(expected.get("answer_kind", "money"))
    if kind == KIND_FREE or judge_only_label(expected) is not None:
        return True
    return free_form == "llm" and kind in FREE_FORM_KINDS


def judge_request(case: Case, answer: str) -> dict[str, Any]:
    """The JSON object the judge command reads: the question, the gold, the answer, its kind, the case."""
    expected = case.expected
    question = expected.get("question")
    if not isinstance(question, str) or not question.strip():
        # A case of the user's own: its question is the last step's prompt.
        question = case.steps[-1].prompt if case.steps else ""
    request: dict[str, Any] = {
        "case_id": f"{case.suite}/{case.case_id}",
        "kind": case.answer_kind,
        "question": question,
        "gold": expected.get("answer"),
        "answer": answer.strip()[-MAX_JUDGED_ANSWER_CHARS:],
    }
    for key in ("question_type", "question_id", "question_date"):
        if expected.get(key) is not None:
            request[key] = expected[key]
    if expected.get("abstention"):
        request["question_type"] = "abstention"
    return request


def answer_to_judge(run: CaseRun) -> str | None:
    """The last answer a judge may read; None after an error, an agent fault or a failed step, or when blank:
    such a run failed on its own account, and no judge's word changes that."""
    if run.error or run.agent_fault or not run.steps or any(step.result.failed for step in run.steps):
        return None
    answer = run.judged_stdout
    return answer if answer.strip() else None


def kept_request(run: CaseRun, *, both: bool) -> dict[str, Any] | None:
    """What a record keeps so a later judge can be asked what this run's judge was, without the agent:
    the request but for its case id, which the record holds. Only for a case a judge could take in this run
    (a free-form kind; with ``both``, a text gold), so a suite of short exact answers keeps its records small."""
    answer = answer_to_judge(run)
    if answer is None or not judged_by_llm(run.case.expected, both=both):
        return None
    request = judge_request(run.case, answer)
    del request["case_id"]
    return request


def judge_cache_key(argv: Sequence[str], request: Mapping[str, Any], sample: int = 0) -> str:
    """What makes two verdicts the same one: the judge command, and the request but for which case asked.

    With several samples of one answer (``--judge-samples``), each sample past the first is a verdict of its own,
    so the cache never folds K askings into one; the first sample's key is the one a run uses."""
    asked = {name: value for name, value in request.items() if name != "case_id"}
    keyed: list[Any] = [list(argv), asked] + ([sample] if sample else [])
    text = json.dumps(keyed, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
