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
import hashlib
import json
import os
import stat
from pathlib import Path
from types import MappingProxyType

from pytest_recall.cases.model import ANSWER_FILE, Case, CaseError, load_case_dir

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


# More than any judge or answer file holds; a file the agent grew past it reads as changed.
MAX_CHECKED_BYTES = 16 * 1024 * 1024


def _digest(path: Path) -> str:
    data = _regular_bytes(path)
    return "unreadable" if data is None else hashlib.sha256(data).hexdigest()


def _regular_bytes(path: Path) -> bytes | None:
    """A regular file's bytes, or None: what an agent put in its place (a FIFO, whose open would block the
    run; a link to ``/dev/zero``, whose read would never end; a file past the bound) reads as no file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= MAX_CHECKED_BYTES and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= MAX_CHECKED_BYTES else None
    except OSError:
        return None
    finally:
        os.close(fd)


def changed_on_disk(case: Case) -> list[str]:
    """What the task judge would read that is no longer what was collected: an agent may have rewritten it."""
    changed = []
    judge = Path(case.extra[TASK_JUDGE_KEY])
    if _digest(judge) != case.extra.get(JUDGE_DIGEST_KEY):
        changed.append(TASK_JUDGE)
    answer = Path(case.extra[EXPECTED_KEY]) / ANSWER_FILE
    data = _regular_bytes(answer)
    try:
        same = data is not None and json.loads(data.decode("utf-8")) == dict(case.expected)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser: rewritten either way
        same = False
    if not same:
        changed.append(f"{EXPECTED_DIR}/{answer.parent.name}/{ANSWER_FILE}")
    return changed
