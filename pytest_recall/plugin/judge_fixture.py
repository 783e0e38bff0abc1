"""The ``judge`` fixture's object: the plugin's judge, for a project's own tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pytest_recall.reporting import verdict_report
from pytest_recall.scoring import scored_a_pass


class RecallJudge:
    """The ``judge`` fixture: the plugin's judge, for a project's own tests.

    Calling it asserts: a verdict below 1.0 fails the test with the same
    readable report a failed case shows. ``score`` only returns the verdict.
    """

    def __init__(self, score: Any) -> None:
        self._score = score

    def score(self, stdout: str, expected: Mapping[str, Any]) -> dict[str, Any]:
        verdict: dict[str, Any] = self._score(stdout, expected)
        return verdict

    def __call__(self, stdout: str, expected: Mapping[str, Any]) -> dict[str, Any]:
        __tracebackhide__ = True
        verdict = self.score(stdout, expected)
        if not scored_a_pass(verdict.get("score")):
            step = {"step": 1, "exit_code": 0, "duration_s": 0.0, "stdout": stdout, "stderr": ""}
            pytest.fail(
                verdict_report(verdict, expected, [step], title=str(expected.get("id", "answer"))), pytrace=False
            )
        return verdict
