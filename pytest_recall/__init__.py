"""pytest-recall: does your agent remember across sessions?

The public names below load on first use (PEP 562): every agent session of
the bundled reference agents imports a module of this package, and loading
the case model, the grader and the judge up front cost each of them about
75 ms of CPU, more than the rest of the agent's start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_recall.cases.model import Case, CaseError, Step, load_case_dir, make_case
    from pytest_recall.scoring.grader import aggregate
    from pytest_recall.scoring.judge import judge_answer, score_case

__version__ = "0.1.0"

_PUBLIC = {
    "Case": "pytest_recall.cases.model",
    "CaseError": "pytest_recall.cases.model",
    "Step": "pytest_recall.cases.model",
    "load_case_dir": "pytest_recall.cases.model",
    "make_case": "pytest_recall.cases.model",
    "aggregate": "pytest_recall.scoring.grader",
    "judge_answer": "pytest_recall.scoring.judge",
    "score_case": "pytest_recall.scoring.judge",
}

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


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_recall' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
