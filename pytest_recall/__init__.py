"""pytest-recall: does your agent remember across sessions?

The public names below load on first use (PEP 562): every agent session of
the bundled reference agents imports a module of this package, and loading
the case model, the grader and the judge up front cost each of them about
75 ms of CPU, more than the rest of the agent's start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_recall.front_doors import loaded_on_first_use

if TYPE_CHECKING:
    from pytest_recall.cases import Case, CaseError, Step, load_case_dir, make_case
    from pytest_recall.scoring import aggregate, judge_answer, score_case

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


if not TYPE_CHECKING:
    __getattr__ = loaded_on_first_use(
        __name__,
        {
            "cases": ("Case", "CaseError", "Step", "load_case_dir", "make_case"),
            "scoring": ("aggregate", "judge_answer", "score_case"),
        },
    )
