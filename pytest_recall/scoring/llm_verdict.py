"""When the judge command's verdict is a case's score: a ``free`` case, or a free-form one by the user's choice.

:func:`~pytest_recall.scoring.evidence.case_verdict` calls :func:`settle`
last, on a verdict :func:`~pytest_recall.scoring.verdict.decide` reached by
reading the answer (not one a changed case file or a task's own judge gave). Where the judge command decides
(``LlmJudgement.decides``), its score replaces the built-in one, which stays
in the verdict's details (``deterministic_score``) so the two can still be
compared. A judge error then leaves the case without a score: an error, as a
trap task's failed judge is, since the agent is not to blame; it is never a 0
that would read as forgetting. Anywhere else the built-in verdict stands and
the judge's word only goes beside it in the record.
"""

from __future__ import annotations

from types import MappingProxyType

from pytest_recall.cases import LlmJudgement
from pytest_recall.scoring.passing import scored_a_pass
from pytest_recall.scoring.verdict import Verdict

JUDGE_ERROR_PREFIX = "judge error: "
# A step that failed is the agent's failure, whatever any judge would say of what it printed.
_AGENT_FAILED = frozenset({"agent_failed", "timed_out", "rate_limited"})


def settle(verdict: Verdict, judgement: LlmJudgement | None) -> Verdict:
    """The verdict whose score is the judge command's, when it decides; else ``verdict`` as it is."""
    if judgement is None or not judgement.decides or verdict.error or verdict.outcome in _AGENT_FAILED:
        return verdict
    details = MappingProxyType(
        {**verdict.details, "deterministic_score": verdict.score, "deterministic_reason": verdict.reason}
    )
    if judgement.score is None:
        error = f"{JUDGE_ERROR_PREFIX}{judgement.error}"
        return Verdict(None, error, details, error=error, control=verdict.control, outcome="error")
    said = "yes" if scored_a_pass(judgement.score) else "no"
    reason = f"the judge command said {said}" + (f": {judgement.reason}" if judgement.reason else "")
    if scored_a_pass(judgement.score):
        outcome = "correct"
    elif judgement.score > 0:
        outcome = "partial"
    else:
        outcome = "unknown" if verdict.outcome == "unknown" else "wrong"
    return Verdict(judgement.score, reason, details, control=verdict.control, outcome=outcome)
