"""pytest-recall: does your agent remember across sessions?"""

from __future__ import annotations

from pytest_recall.cases.model import Case, CaseError, Step, load_case_dir, make_case
from pytest_recall.scoring.grader import aggregate
from pytest_recall.scoring.judge import judge_answer, score_case

__version__ = "0.1.0"

__all__ = [
    "Case",
    "CaseError",
    "Step",
    "__version__",
    "aggregate",
    "judge_answer",
    "load_case_dir",
    "make_case",
    "score_case",
]
