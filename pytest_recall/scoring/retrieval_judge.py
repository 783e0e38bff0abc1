"""The retrieval judge, ``--recall-answer-judge=contains``: did what the memory returned hold the answer?

A memory server measured on its own (``recall-mcp``) answers nothing: it
returns what its search found. So the question is only whether the gold
answer is in there, anywhere, as text (case and spacing aside) or, for a
money answer, as the same amount however it is grouped. That makes the score
a recall, and recall alone flatters a store that returns everything: the
verdict carries the bytes returned, so a report can set one against the other.

``--recall-answer-judge=evidence`` asks what a retrieval benchmark asks
instead: did what came back hold the case's *evidence* (an imported question's
evidence turns, else its answer; see :mod:`~pytest_recall.scoring.memory_use`)?
An answer can be in a store by chance, or computed from several facts and in
none; the evidence is what the memory had to find. The score is then the
server's evidence recall, per category in the summary, with no model at all.

Neither judge counts a shotgun as a retrieval. An agent with no memory that
prints the whole answer space (every voucher with every balance) holds every
answer and every evidence text, at a recall of 1. The field scores retrieval
at a handful of items: LongMemEval reports recall at 5 and 10 retrieved
sessions, LoCoMo's retrieval-augmented runs take the top 5 to 50 items, and
both ask short answers of the reader. So what came back may be at most
:data:`MAX_RETURNED_BYTES` (some fifty passages of a kilobyte and more), and,
for a money answer, hold at most :data:`MAX_CANDIDATE_AMOUNTS` different
amounts with cents (LoCoMo's largest top-k); past either, the case scores 0 with that
reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pytest_recall.cases import KIND_MONEY
from pytest_recall.scoring.judge import MONEY_PATTERN, normalise_money
from pytest_recall.scoring.memory_use import evidence_of, holds_evidence

# How a case's last answer is judged (``--recall-answer-judge``): the answer judge, or this one.
AnswerJudgeName = Literal["answer", "contains", "evidence"]
_SPACE = re.compile(r"\s+")
# What a search returns is often JSON, where a line break inside a string is the two characters \n:
# read as a break, so an amount at the start of a line is still an amount.
_JSON_ESCAPE = re.compile(r"\\[nrt]")
# What a retrieval may return before it is read as the store printed whole (see the module docstring).
MAX_RETURNED_BYTES = 64 * 1024
MAX_CANDIDATE_AMOUNTS = 50


def shotgun(stdout: str, returned: int, expected: Mapping[str, Any]) -> str | None:
    """Why what came back is no retrieval (more than a retrieval returns); None when it is within the bounds."""
    if returned > MAX_RETURNED_BYTES:
        return (
            f"{returned} bytes returned, more than the {MAX_RETURNED_BYTES // 1024} KiB a retrieval of a few "
            "passages returns: no retrieval, scored 0"
        )
    if expected.get("answer_kind", KIND_MONEY) == KIND_MONEY:
        # Amounts with cents: ids, counts and dates, which any passage is full of, are no candidates.
        amounts = {
            normalise_money(found.group(0)) for found in MONEY_PATTERN.finditer(stdout) if "." in found.group(0)
        } - {None}
        if len(amounts) > MAX_CANDIDATE_AMOUNTS:
            return (
                f"{len(amounts)} different amounts returned, more than the {MAX_CANDIDATE_AMOUNTS} candidates a "
                "retrieval returns: no retrieval, scored 0"
            )
    return None


def _plain(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def score_contains(stdout: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """1.0 when the expected answer appears in ``stdout``, else 0.0; ``returned_bytes`` says how much came back."""
    answer = expected.get("answer")
    returned = len(stdout.encode("utf-8"))
    verdict: dict[str, Any] = {"category": expected.get("category"), "returned_bytes": returned}
    if not isinstance(answer, (str, int, float)) or isinstance(answer, bool) or not str(answer).strip():
        return verdict | {"score": 0.0, "reason": "the contains judge needs a literal answer", "reported": ""}
    wanted = str(answer)
    stdout = _JSON_ESCAPE.sub(" ", stdout)
    refused = shotgun(stdout, returned, expected)
    if refused is not None:
        return verdict | {"score": 0.0, "reason": refused, "reported": ""}
    found = _plain(wanted) in _plain(stdout)
    if not found and expected.get("answer_kind", KIND_MONEY) == KIND_MONEY:
        target = normalise_money(wanted)
        found = target is not None and any(
            normalise_money(m.group(0)) == target for m in MONEY_PATTERN.finditer(stdout)
        )
    reason = f"answer {'found' if found else 'not found'} in {returned} bytes returned"
    return verdict | {"score": 1.0 if found else 0.0, "reason": reason, "reported": wanted if found else ""}


def score_evidence(stdout: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """1.0 when ``stdout`` holds one of the case's evidence texts, else 0.0; ``returned_bytes`` says how much came
    back. A case with no evidence long enough to look for scores 0 and says so."""
    evidence = evidence_of(expected)
    returned = len(stdout.encode("utf-8"))
    verdict: dict[str, Any] = {"category": expected.get("category"), "returned_bytes": returned, "reported": ""}
    stdout = _JSON_ESCAPE.sub(" ", stdout)
    refused = shotgun(stdout, returned, expected)
    if refused is not None:
        return verdict | {"score": 0.0, "reason": refused}
    found = holds_evidence(evidence, stdout)
    if found is None:
        reason = "the evidence judge needs the case's evidence_text or a literal answer of 3 characters or more"
        return verdict | {"score": 0.0, "reason": reason}
    texts = f"{len(evidence)} evidence text{'s' if len(evidence) != 1 else ''}"
    reason = f"evidence {'found' if found else 'not found'} in {returned} bytes returned (of {texts})"
    return verdict | {"score": 1.0 if found else 0.0, "reason": reason}
