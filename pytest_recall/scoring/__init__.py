"""Scoring: the judges, the one verdict function, the grader and the statistics. Pure functions: no pytest, no I/O.

The names below are the package's public API: what the pytest glue (``pytest_recall.plugin``)
uses, imported from here and not from the modules.
"""

from __future__ import annotations

from pytest_recall.scoring.evidence import case_verdict
from pytest_recall.scoring.grader import DEFAULT_THRESHOLD
from pytest_recall.scoring.judge import judge_answer
from pytest_recall.scoring.judge_scope import FreeFormJudge
from pytest_recall.scoring.passing import scored_a_pass
from pytest_recall.scoring.retrieval_judge import AnswerJudgeName, score_contains, score_evidence
from pytest_recall.scoring.sequential import (
    DRAW_SEED,
    LiftState,
    LiftTest,
    ScoreGate,
    draw_key,
    lift_sign,
    score_interval,
)
from pytest_recall.scoring.verdict import AnswerScorer, TaskJudgeFailure, Verdict

__all__ = [
    "DEFAULT_THRESHOLD",
    "DRAW_SEED",
    "AnswerJudgeName",
    "AnswerScorer",
    "FreeFormJudge",
    "LiftState",
    "LiftTest",
    "ScoreGate",
    "TaskJudgeFailure",
    "Verdict",
    "case_verdict",
    "draw_key",
    "judge_answer",
    "lift_sign",
    "score_contains",
    "score_evidence",
    "score_interval",
    "scored_a_pass",
]
