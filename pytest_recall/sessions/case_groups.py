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
item asks its question with an empty memory and never waits.

The copies are made on the listing threads, faithfully and within the
listing's bounds, or refused (:mod:`~pytest_recall.sessions.memory_copy`).
An ingest that fails through the agent (a step failed or timed out, or it
left a memory that cannot be copied: a FIFO, a link out of it, more data than
the bound) fails its case with the reason, and every waiting case scores 0
with it, never an error that would take it out of the score. With
``--recall-retries`` they wait for the ingest's last attempt. A harness error
(the agent could not start) gives them an error naming the case it failed in;
``--recall-resume`` then runs them again, ingest included.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_recall.cases import Case, CaseRun, SessionResult, StepRun
from pytest_recall.scoring import AnswerScorer
from pytest_recall.sessions.case_flow import MemoryHooks, case_flow
from pytest_recall.sessions.memory_copy import copy_memory
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
    # The failure is the agent's (a step failed, a memory that cannot be copied): the waiting cases score 0 for it.
    agents_doing: bool = False
    # The memory writes the ingest's steps made, as the tap saw them: every question of the group was taught by them.
    writes: int = 0


class GroupIngests:
    """One per process: each group's ingest state, and the memory copies it left, removed at :meth:`close`."""

    def __init__(self) -> None:
        self._ingests: dict[GroupKey, _Ingest] = {}
        self._store: Path | None = None

    def claim(self, key: GroupKey, owner: str) -> _Ingest | None:
        """The ingest for ``owner`` to run, or None when another case runs (or ran) it.

        An owner whose ingest failed, or is still pending after an attempt that
        is to be retried (``--recall-retries``), claims it again: the same
        ingest, so the cases waiting for it wait on for the retry.
        """
        held = self._ingests.get(key)
        if held is not None and (held.owner != owner or (held.done and held.failure is None)):
            return None
        if self._store is None:
            self._store = private_dir("groups")
        digest = hashlib.sha256(f"{key[0]}\0{key[1]}".encode()).hexdigest()[:16]
        memory = self._store / digest
        remove_tree(memory)
        ingest = self._ingests[key] = _Ingest(owner, memory) if held is None else held
        ingest.done, ingest.failure, ingest.agents_doing = False, None, False
        return ingest

    def get(self, key: GroupKey) -> _Ingest:
        return self._ingests[key]

    def close(self) -> None:
        if self._store is not None:
            remove_tree(self._store)
            self._store = None


def _memory_pairs(area: CaseArea, memory: Path) -> list[tuple[Path, Path]]:
    """Each folder of an area's memory beside its place in a kept copy: scope, and HOME with a HOME per case."""
    pairs = [(area.scope, memory / "scope")]
    if area.home is not None:
        pairs.append((area.home, memory / "home"))
    return pairs


def _seed_from(memory: Path) -> MemoryHooks:
    def seed(area: CaseArea, cancel: threading.Event) -> str | None:
        pairs = [(kept, own) for own, kept in _memory_pairs(area, memory)]
        for _kept, own in pairs:
            remove_tree(own)
        fault = copy_memory(pairs, cancel=cancel)
        # Only an agent can have changed the kept copy since the ingest (default mode leaves it in reach).
        return None if fault is None else f"the group's kept memory changed after its ingest: {fault}"

    return MemoryHooks(seed=seed)


def _keep_after(step_number: int, ingest: _Ingest) -> MemoryHooks:
    def keep(area: CaseArea, cancel: threading.Event) -> str | None:
        os.mkdir(ingest.memory, 0o700)
        fault = copy_memory(_memory_pairs(area, ingest.memory), cancel=cancel)
        if fault is not None:
            remove_tree(ingest.memory)
            fault = f"the memory its ingest left cannot be copied for the group's questions: {fault}"
            ingest.failure, ingest.agents_doing = fault, True
        # Set on the listing thread, ``done`` last: a waiting case that sees it done sees why it failed too.
        ingest.done = True
        return fault

    def ingested(steps: Sequence[StepRun]) -> None:
        ingest.writes = sum(step.memory_calls.writes for step in steps if step.memory_calls is not None)

    return MemoryHooks(keep_after=step_number, keep=keep, ingested=ingested)


def _ingest_failed(ingest: _Ingest, run: CaseRun | None) -> None:
    """The owner's last attempt stopped before the memory was kept: the waiting cases must hear why.

    A step that failed or timed out, or what the agent left, is the agent's
    doing: they score 0 for it. A harness error (the agent could not start,
    a crash) leaves them an error, which ``--recall-resume`` runs again.
    """
    failed = next((step for step in run.steps if step.result.failed), None) if run is not None else None
    if run is not None and run.error is None and failed is not None:
        result = failed.result
        how = f"exited {result.exit_code}" if result.signal is None else f"was killed by signal {result.signal}"
        ingest.failure = f"step {failed.number} {'timed out' if result.timed_out else how}"
        ingest.agents_doing = True
    elif run is not None and run.error is None and run.agent_fault:
        ingest.failure, ingest.agents_doing = run.agent_fault, True
    else:
        ingest.failure = "a step of the ingest failed, timed out or never ran"
    ingest.done = True


def _retried(run: CaseRun, last_attempt: bool) -> bool:
    """Whether ``--recall-retries`` runs the owner again: the rule of ``plugin/executor.py:retrying``."""
    return not last_attempt and (run.error is not None or any(step.result.failed for step in run.steps))


def grouped_case_flow(
    case: Case,
    settings: SessionSettings,
    judge: AnswerScorer,
    ingests: GroupIngests,
    *,
    owner: str,
    control: bool = False,
    epoch: int = 1,
    last_attempt: bool = True,
) -> Generator[SessionSpec | Pause, SessionResult, CaseRun]:
    """A case's run, sharing its group's ingest when it has a group; any other case runs as it always has.

    ``last_attempt`` is False when a failed run would be run again (``--recall-retries``): an ingest that
    fails then stays pending, and the group's cases wait for the retry.
    """
    # A live session's turns are one process: no memory can be kept between its ingest and its question.
    if case.group is None or control or settings.shared_scope is not None or case.session == "continue":
        return (yield from case_flow(case, settings, judge, control=control, epoch=epoch))
    key = (case.group, epoch)
    ingest = ingests.claim(key, owner)
    if ingest is not None:
        hooks = _keep_after(case.steps[case.ingest_steps - 1].number, ingest)
        run: CaseRun | None = None
        try:
            run = yield from case_flow(case, settings, judge, epoch=epoch, memory_hooks=hooks)
        finally:
            if not ingest.done and (run is None or not _retried(run, last_attempt)):
                _ingest_failed(ingest, run)
        return run
    shared = ingests.get(key)
    while not shared.done:
        yield Pause(time.monotonic() + POLL_S)
    if shared.failure is not None:
        reason = f"the ingest of group {case.group} failed in {shared.owner}: {shared.failure}"
        if shared.agents_doing:
            return CaseRun(case, (), epoch=epoch, agent_fault=reason)
        return CaseRun(case, (), error=reason, epoch=epoch)
    own = replace(case, steps=case.steps[case.ingest_steps :])
    run = yield from case_flow(own, settings, judge, epoch=epoch, memory_hooks=_seed_from(shared.memory))
    # The record keeps the whole case, so resume recognises it; its steps are the ones this run started.
    return replace(run, case=case, ingest_writes=shared.writes)
