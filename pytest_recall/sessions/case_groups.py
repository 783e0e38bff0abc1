"""Running a case group: the group's ingest once per epoch, then each case's question on a copy of its memory.

The first case of a group to start (in run order: collection order, less
what ``--recall-resume`` already holds) runs the ingest steps and its own
question as one case, and keeps a copy of its memory (scope, and HOME with
``--recall-home=case``) as the ingest left it. Every other case of the group
waits for that copy, parked on the pool like a retry's back-off, then runs
only its own steps in a fresh area seeded with a copy of it. So questions
never see each other's sessions, whatever order or concurrency they run in,
and the sessions a run starts are the ingest's once plus one per question.

The ingest runs once per epoch: epochs are independent samples. A control
item asks its question with an empty memory and never waits. A group whose
ingest failed gives its waiting cases an error naming the case it failed in;
``--recall-resume`` then runs them again, ingest included.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Generator
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_recall.cases.model import Case
from pytest_recall.cases.runs import CaseRun, SessionResult
from pytest_recall.sessions.case_flow import Judge, MemoryHooks, case_flow
from pytest_recall.sessions.pool import Pause
from pytest_recall.sessions.rooms import CaseArea, private_dir, remove_tree
from pytest_recall.sessions.session import SessionSpec
from pytest_recall.sessions.settings import SessionSettings

# How often a waiting case looks whether its group's ingest is done; sessions take far longer.
POLL_S = 0.05
GroupKey = tuple[str, int]


@dataclass
class _Ingest:
    owner: str
    memory: Path
    done: bool = False
    failure: str | None = None


class GroupIngests:
    """One per process: each group's ingest state, and the memory copies it left, removed at :meth:`close`."""

    def __init__(self) -> None:
        self._ingests: dict[GroupKey, _Ingest] = {}
        self._store: Path | None = None

    def claim(self, key: GroupKey, owner: str) -> _Ingest | None:
        """The ingest for ``owner`` to run, or None when another case runs (or ran) it.

        An owner whose ingest failed claims it again: that is a retry (``--recall-retries``).
        """
        held = self._ingests.get(key)
        if held is not None and not (held.owner == owner and held.failure is not None):
            return None
        if self._store is None:
            self._store = private_dir("groups")
        digest = hashlib.sha256(f"{key[0]}\0{key[1]}".encode()).hexdigest()[:16]
        memory = self._store / digest
        remove_tree(memory)
        ingest = _Ingest(owner, memory)
        self._ingests[key] = ingest
        return ingest

    def get(self, key: GroupKey) -> _Ingest:
        return self._ingests[key]

    def close(self) -> None:
        if self._store is not None:
            remove_tree(self._store)
            self._store = None


def _copy_memory(source_scope: Path, source_home: Path | None, dest: Path) -> None:
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    shutil.copytree(source_scope, dest / "scope", symlinks=True)
    if source_home is not None:
        shutil.copytree(source_home, dest / "home", symlinks=True)


def _seed_from(memory: Path) -> MemoryHooks:
    def seed(area: CaseArea) -> None:
        remove_tree(area.scope)
        shutil.copytree(memory / "scope", area.scope, symlinks=True)
        if area.home is not None and (memory / "home").is_dir():
            remove_tree(area.home)
            shutil.copytree(memory / "home", area.home, symlinks=True)

    return MemoryHooks(seed=seed)


def _keep_after(step_number: int, ingest: _Ingest) -> MemoryHooks:
    def after_step(number: int, area: CaseArea) -> None:
        if number == step_number:
            _copy_memory(area.scope, area.home, ingest.memory)
            ingest.done = True

    return MemoryHooks(after_step=after_step)


def grouped_case_flow(
    case: Case,
    settings: SessionSettings,
    judge: Judge,
    ingests: GroupIngests,
    *,
    owner: str,
    control: bool = False,
    epoch: int = 1,
) -> Generator[SessionSpec | Pause, SessionResult, CaseRun]:
    """A case's run, sharing its group's ingest when it has a group; any other case runs as it always has."""
    if case.group is None or control or settings.shared_scope is not None:
        return (yield from case_flow(case, settings, judge, control=control, epoch=epoch))
    key = (case.group, epoch)
    ingest = ingests.claim(key, owner)
    if ingest is not None:
        hooks = _keep_after(case.steps[case.ingest_steps - 1].number, ingest)
        try:
            run = yield from case_flow(case, settings, judge, epoch=epoch, memory_hooks=hooks)
        finally:
            if not ingest.done:
                # Whatever stopped it (an agent failure, a harness error), the waiting cases must hear of it.
                ingest.failure = "a step of the ingest failed, timed out or never ran"
                ingest.done = True
        return run
    shared = ingests.get(key)
    while not shared.done:
        yield Pause(time.monotonic() + POLL_S)
    if shared.failure is not None:
        reason = f"the ingest of group {case.group} failed in {shared.owner}: {shared.failure}"
        return CaseRun(case, (), error=reason, epoch=epoch)
    own = replace(case, steps=case.steps[case.ingest_steps :])
    run = yield from case_flow(own, settings, judge, epoch=epoch, memory_hooks=_seed_from(shared.memory))
    # The record keeps the whole case, so resume recognises it; its steps are the ones this run started.
    return replace(run, case=case)
