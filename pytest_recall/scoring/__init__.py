"""Scoring: the judges, the one verdict function, the grader and the statistics. Pure functions: no pytest, no I/O.

The names below are the package's public API: what the pytest glue (``pytest_recall.plugin``)
uses, imported from here and not from the modules.
"""

from __future__ import annotations

from pytest_recall.scoring.abstain import false_abstention_rate, says_not_given
from pytest_recall.scoring.by_workspace import by_workspace
from pytest_recall.scoring.case_summary import CaseSummary
from pytest_recall.scoring.evidence import case_verdict
from pytest_recall.scoring.evidence_judge import ANSWER_KIND, render_feedback, score_evidence_json
from pytest_recall.scoring.figures import control_figures, memory_section, run_figures
from pytest_recall.scoring.grader import DEFAULT_THRESHOLD, aggregate
from pytest_recall.scoring.help_harm import help_and_harm
from pytest_recall.scoring.judge import feedback_text, judge_answer, score_case
from pytest_recall.scoring.judge_agreement import agreement_report, judged_twice_from
from pytest_recall.scoring.judge_panel import PanelCase, format_panel, majority_reason, panel_table, sample_majority
from pytest_recall.scoring.judge_reply import JudgeReply, read_judge_reply
from pytest_recall.scoring.judge_scope import (
    FREE_FORM_KINDS,
    FreeFormJudge,
    answer_to_judge,
    judge_cache_key,
    judge_request,
    judged_by_llm,
    kept_request,
    llm_decides,
)
from pytest_recall.scoring.llm_verdict import JUDGE_ERROR_PREFIX
from pytest_recall.scoring.memory_use import MemoryUse, case_memory_use, evidence_of
from pytest_recall.scoring.passing import scored_a_pass
from pytest_recall.scoring.repeat_plan import RepeatPlan, plan_repeats
from pytest_recall.scoring.retrieval_judge import AnswerJudgeName, score_contains, score_evidence
from pytest_recall.scoring.sequential import (
    DRAW_SEED,
    LiftState,
    LiftTest,
    ScoreGate,
    case_draw_key,
    draw_key,
    lift_sign,
    score_interval,
)
from pytest_recall.scoring.stats import (
    BOOTSTRAP_SEED,
    CaseFold,
    PairedTest,
    fold_cases,
    is_binary_single_epoch,
    pair_folds,
    paired_by_category,
    summarize,
)
from pytest_recall.scoring.verdict import AnswerScorer, TaskJudgeFailure, Verdict, task_judge_problem

__all__ = [
    "ANSWER_KIND",
    "BOOTSTRAP_SEED",
    "DEFAULT_THRESHOLD",
    "DRAW_SEED",
    "FREE_FORM_KINDS",
    "JUDGE_ERROR_PREFIX",
    "AnswerJudgeName",
    "AnswerScorer",
    "CaseFold",
    "CaseSummary",
    "FreeFormJudge",
    "JudgeReply",
    "LiftState",
    "LiftTest",
    "MemoryUse",
    "PairedTest",
    "PanelCase",
    "RepeatPlan",
    "ScoreGate",
    "TaskJudgeFailure",
    "Verdict",
    "aggregate",
    "agreement_report",
    "answer_to_judge",
    "by_workspace",
    "case_draw_key",
    "case_memory_use",
    "case_verdict",
    "control_figures",
    "draw_key",
    "evidence_of",
    "false_abstention_rate",
    "feedback_text",
    "fold_cases",
    "format_panel",
    "help_and_harm",
    "is_binary_single_epoch",
    "judge_answer",
    "judge_cache_key",
    "judge_request",
    "judged_by_llm",
    "judged_twice_from",
    "kept_request",
    "lift_sign",
    "llm_decides",
    "majority_reason",
    "memory_section",
    "pair_folds",
    "paired_by_category",
    "panel_table",
    "plan_repeats",
    "read_judge_reply",
    "render_feedback",
    "run_figures",
    "sample_majority",
    "says_not_given",
    "score_case",
    "score_contains",
    "score_evidence",
    "score_evidence_json",
    "score_interval",
    "scored_a_pass",
    "summarize",
    "task_judge_problem",
]
