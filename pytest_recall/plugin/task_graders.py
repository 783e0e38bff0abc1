"""Trap-task graders: each task's ``grader.py`` runs once, over every verdict of its cases.

Controller only: entries arrive as user properties with the reports, and the
grader's output lands in the same JSON report, under ``task_grader``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.cases import TASK_GRADER
from pytest_recall.plugin.xdist_handoff import received_entry
from pytest_recall.reporting import ENTRY_PROPERTY
from pytest_recall.sessions import TaskScriptError, run_task_script

REPORT_KEY = "task_grader"


class TaskGraders:
    """Controller only: gathers trap-task entries as reports arrive, and runs each task's grader.py once.

    It hooks into the report through ``pytest_recall_modify_report``, so the
    grader's output lands in the same JSON document, under ``task_grader``.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.entries: dict[str, dict[str, dict[str, Any]]] = {}
        self.outputs: dict[str, Any] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, _ in report.user_properties:
            if name == ENTRY_PROPERTY:
                break
        else:
            # pytest keeps every report to the end: a fresh list per report would cost memory per case.
            return
        kept: list[tuple[str, object]] = []
        for name, value in report.user_properties:
            if name == ENTRY_PROPERTY and (entry := received_entry(value)) is not None:
                # Setup, call and teardown reports carry the same entry; the last one stands.
                # In one process those reports share the very entry, so it is read, never changed.
                kept_entry = {key: value for key, value in entry.items() if key != "task"}
                self.entries.setdefault(str(entry["task"]), {})[report.nodeid] = kept_entry
            else:
                kept.append((name, value))
        report.user_properties = kept

    def pytest_recall_modify_report(self, report: dict[str, Any], config: pytest.Config) -> None:
        for task, by_node in sorted(self.entries.items()):
            grader = Path(task) / TASK_GRADER
            if not grader.is_file():
                continue
            manifest = [by_node[nodeid] for nodeid in sorted(by_node)]
            try:
                output = run_task_script(grader, manifest)
            except TaskScriptError as exc:
                output = {"error": str(exc)}
            self.outputs[self._label(Path(task))] = output
        if self.outputs:
            report[REPORT_KEY] = dict(self.outputs)

    def _label(self, task: Path) -> str:
        rootpath = self.config.rootpath
        return task.relative_to(rootpath).as_posix() if task.is_relative_to(rootpath) else str(task)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        for label, output in self.outputs.items():
            # The scalars say the verdict; the whole output is in the JSON report.
            shown = output.items() if isinstance(output, dict) else [("output", output)]
            text = "  ".join(
                f"{key} {json.dumps(value)}" for key, value in shown if not isinstance(value, (dict, list))
            )
            terminalreporter.write_line(f"  {label}/{TASK_GRADER}: {text[:200]}")
