"""Hooks a project can implement in its conftest.py or a plugin of its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest


@pytest.hookspec(firstresult=True)
def pytest_recall_judge(stdout: str, expected: Mapping[str, Any], config: pytest.Config) -> dict[str, Any] | None:
    """Judge the last step's stdout against a case's ``answer.json``.

    Return a dict with at least ``score`` (0.0 to 1.0) and ``reason``, or
    None to leave the case to the next judge. The built-in judge runs last
    and handles the ``money``, ``voucher`` and ``evidence_json`` kinds, so a
    project only needs to answer for the kinds it adds.
    """


def pytest_recall_answer_kinds(config: pytest.Config) -> list[str]:  # type: ignore[empty-body]
    """Name the extra ``answer_kind`` values this project judges itself.

    Cases are checked at collection: an ``answer_kind`` no judge declared is
    a collection error rather than a silent zero at the end of a long run.
    """


def pytest_recall_case_finished(record: dict[str, Any], config: pytest.Config) -> None:
    """Called in the process that ran a case, as soon as its record exists.

    ``record`` is the case's report record (see the README). The run log
    uses this hook to make finished, paid-for work durable at once. A case
    skipped by ``--recall-resume`` calls it too, with its stored record.
    """


def pytest_recall_modify_report(report: dict[str, Any], config: pytest.Config) -> None:
    """Called on the controller once the run report is built, before it is written or summarised.

    ``report`` is the report's JSON document. Add keys to it in place: they are
    written after the report's own, which are built once and not yours to
    change (a change to one is ignored). The trap-task grader puts its output
    under ``task_grader`` this way.
    """
