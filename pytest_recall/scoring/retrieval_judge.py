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
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pytest_recall.cases.answer_forms import KIND_MONEY
from pytest_recall.scoring.judge import MONEY_PATTERN, normalise_money
from pytest_recall.scoring.memory_use import evidence_of, holds_evidence

# How a case's last answer is judged (``--recall-answer-judge``): the answer judge, or this one.
AnswerJudgeName = Literal["answer", "contains", "evidence"]
_SPACE = re.compile(r"\s+")
# What a search returns is often JSON, where a line break inside a string is the two characters \n:
# read as a break, so an amount at the start of a line is still an amount.
_JSON_ESCAPE = re.compile(r"\\[nrt]")


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
    found = holds_evidence(evidence, _JSON_ESCAPE.sub(" ", stdout))
    if found is None:
        reason = "the evidence judge needs the case's evidence_text or a literal answer of 3 characters or more"
        return verdict | {"score": 0.0, "reason": reason}
    texts = f"{len(evidence)} evidence text{'s' if len(evidence) != 1 else ''}"
    reason = f"evidence {'found' if found else 'not found'} in {returned} bytes returned (of {texts})"
    return verdict | {"score": 1.0 if found else 0.0, "reason": reason}
