"""Trap-task directories: memory tasks in the layout the seed task ships, run as they are.

A trap task keeps each case's prompts in ``inputs/<id>/`` (``step1.txt``,
``step2.txt``, ...) and its answer in ``expected/<id>/answer.json``. It may
ship its own ``judge.py``, run once per case, and ``grader.py``, run once per
run. Both read ``TRAPTASK_MANIFEST``, an environment variable that holds
JSON: for the judge an object naming the run's stdout file, a meta file with
its exit code and the case's expected directory; for the grader the list of
every case's verdict, duration and cost.

A task that ships a judge is scored by it, so its users get the verdicts they
already trust; the grader's output sits in the report beside ours. Neither
script ever runs while an agent can see the manifest: the agent's environment
drops the variable, and the files it names exist only while the judge runs.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from pytest_recall.cases.model import ANSWER_FILE, Case, CaseError, load_case_dir
from pytest_recall.scoring.judge import step_failure
from pytest_recall.sessions.case_flow import remove_tree

INPUTS_DIR = "inputs"
EXPECTED_DIR = "expected"
TASK_JUDGE = "judge.py"
TASK_GRADER = "grader.py"
MANIFEST_VAR = "TRAPTASK_MANIFEST"
# Keys of ``Case.extra`` for a trap-task case.
TASK_KEY = "trap_task"
EXPECTED_KEY = "expected_dir"
TASK_JUDGE_KEY = "task_judge"
JUDGE_DIGEST_KEY = "task_judge_sha256"
# The user property that carries a case's grader entry from the process that ran it to the controller.
ENTRY_PROPERTY = "recall_task_entry"
REPORT_KEY = "task_grader"
SCRIPT_TIMEOUT_S = 120.0


class TaskScriptError(Exception):
    """A task's judge.py or grader.py that failed; the message is one line."""


def is_trap_task_dir(path: Path) -> bool:
    return (path / INPUTS_DIR).is_dir() and (path / EXPECTED_DIR).is_dir()


def task_case_ids(task: Path) -> list[str]:
    """Every case the task names on either side, so a case missing its other half is reported, not dropped."""
    names: set[str] = set()
    for side in (INPUTS_DIR, EXPECTED_DIR):
        names.update(
            entry.name for entry in (task / side).iterdir() if entry.is_dir() and not entry.name.startswith(".")
        )
    return sorted(names)


def load_task_case(task: Path, folder_name: str, *, source: str, known_kinds: frozenset[str] | None) -> Case:
    """One case of a trap task; a task with its own judge may use answer kinds we do not know."""
    __tracebackhide__ = True
    inputs = task / INPUTS_DIR / folder_name
    expected = task / EXPECTED_DIR / folder_name
    if not inputs.is_dir():
        raise CaseError(f"{source}: {INPUTS_DIR}/{folder_name}/ is missing; add its step files or remove {expected}")
    judge = task / TASK_JUDGE
    has_judge = judge.is_file()
    case = load_case_dir(
        inputs,
        suite=task.name,
        source=source,
        known_kinds=None if has_judge else known_kinds,
        answer_dir=expected,
    )
    extra = {TASK_KEY: str(task), EXPECTED_KEY: str(expected)}
    if has_judge:
        extra[TASK_JUDGE_KEY] = str(judge)
        extra[JUDGE_DIGEST_KEY] = _digest(judge)
    return dataclasses.replace(case, extra=MappingProxyType(extra))


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def _changed_on_disk(case: Case) -> list[str]:
    """What the task judge would read that is no longer what was collected: an agent may have rewritten it."""
    changed = []
    judge = Path(case.extra[TASK_JUDGE_KEY])
    if _digest(judge) != case.extra.get(JUDGE_DIGEST_KEY):
        changed.append(TASK_JUDGE)
    answer = Path(case.extra[EXPECTED_KEY]) / ANSWER_FILE
    try:
        same = json.loads(answer.read_text(encoding="utf-8")) == dict(case.expected)
    except (OSError, ValueError):
        same = False
    if not same:
        changed.append(f"{EXPECTED_DIR}/{answer.parent.name}/{ANSWER_FILE}")
    return changed


def task_judge_verdict(
    case: Case, outcomes: Sequence[tuple[int | None, int | None, bool]], stdout: str
) -> dict[str, Any]:
    """The task's own judge.py on the last step's stdout and exit code.

    Timeouts, kills and failed earlier steps are decided first, as for every
    case: the task judge only ever sees one final stdout and exit code. A
    judge that fails scores nothing (``score`` None) rather than zero, since
    the agent is not to blame.
    """
    spoiled = step_failure(outcomes, stdout, case.expected)
    if spoiled is not None:
        return spoiled
    changed = _changed_on_disk(case)
    if changed:
        # Scored 0, as a rewritten case folder is: an agent must not escape its score by editing the judge.
        reason = f"case files changed on disk during the run: {', '.join(changed)}"
        return {"score": 0.0, "reason": reason, "category": case.category}
    exit_code = outcomes[-1][0] if outcomes else None
    room = Path(tempfile.mkdtemp(prefix="recall-task-judge-"))
    try:
        stdout_file = room / "stdout.txt"
        meta_file = room / "meta.json"
        stdout_file.write_text(stdout, encoding="utf-8")
        meta_file.write_text(json.dumps({"exit_code": exit_code}), encoding="utf-8")
        manifest = {
            "run": {"stdout": str(stdout_file), "meta": str(meta_file)},
            "expected_dir": case.extra[EXPECTED_KEY],
        }
        verdict = run_task_script(Path(case.extra[TASK_JUDGE_KEY]), manifest)
    except TaskScriptError as exc:
        return {"score": None, "reason": f"task judge failed: {exc}", "category": case.category}
    finally:
        remove_tree(room)
    if not isinstance(verdict, dict) or not _is_score(verdict.get("score")):
        return {
            "score": None,
            "reason": f"task judge failed: {TASK_JUDGE} printed no JSON object with a numeric 'score'",
            "category": case.category,
        }
    return verdict


def _is_score(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def run_task_script(script: Path, manifest: Any, *, timeout_s: float = SCRIPT_TIMEOUT_S) -> Any:
    """Run ``python <script>`` in the task directory with the manifest; return the JSON it prints last."""
    env = dict(os.environ)
    env[MANIFEST_VAR] = json.dumps(manifest, separators=(",", ":"), ensure_ascii=False)
    try:
        done = subprocess.run(
            [sys.executable, script.name],
            cwd=script.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise TaskScriptError(f"{script.name} ran longer than {timeout_s:g}s") from None
    except OSError as exc:
        if exc.errno == errno.E2BIG:
            size = len(env[MANIFEST_VAR].encode())
            raise TaskScriptError(
                f"{script.name}: the {MANIFEST_VAR} manifest ({size} bytes) is too large for one environment "
                "variable; run fewer cases at once"
            ) from None
        raise TaskScriptError(f"{script.name} could not start: {exc.strerror or exc}") from None
    if done.returncode != 0:
        last = [line for line in done.stderr.splitlines() if line.strip()]
        why = last[-1].strip() if last else "no message on stderr"
        raise TaskScriptError(f"{script.name} exited {done.returncode}: {why}")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    for text in (lines[-1] if lines else "", done.stdout):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            continue
    raise TaskScriptError(f"{script.name} printed no JSON on stdout")


def task_properties(
    case: Case, record: Mapping[str, Any], verdict: Mapping[str, Any] | None
) -> list[tuple[str, object]]:
    """The grader's entry for one run of a trap-task case, as a user property; none for other cases.

    Control runs are left out, as they are from our own verdict.
    """
    task = case.extra.get(TASK_KEY)
    if task is None or record.get("control"):
        return []
    entry = {
        "task": task,
        "id": case.case_id,
        "metrics": dict(verdict) if verdict is not None else None,
        "duration": record.get("duration_s"),
        "cost": {"cost_usd": record.get("cost_usd")},
    }
    return [(ENTRY_PROPERTY, json.dumps(entry, ensure_ascii=False))]


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
        kept: list[tuple[str, object]] = []
        for name, value in report.user_properties:
            if name == ENTRY_PROPERTY and isinstance(value, str):
                entry = json.loads(value)
                # Setup, call and teardown reports carry the same entry; the last one stands.
                self.entries.setdefault(str(entry.pop("task")), {})[report.nodeid] = entry
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
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for label, output in self.outputs.items():
            # The scalars say the verdict; the whole output is in the JSON report.
            shown = output.items() if isinstance(output, dict) else [("output", output)]
            text = "  ".join(
                f"{key} {json.dumps(value)}" for key, value in shown if not isinstance(value, (dict, list))
            )
            terminalreporter.write_line(f"  {label}/{TASK_GRADER}: {text[:200]}")
