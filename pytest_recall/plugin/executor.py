"""Runs case items in this process, several at once when asked.

pytest calls items one at a time. With ``--recall-concurrency=N`` the
executor starts the next N cases as soon as the first is set up, all on one
event loop, and hands each item its result when pytest reaches it. Reports
still come out in collection order.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import pytest

from pytest_recall.cases import Case, CaseError, CaseRun
from pytest_recall.plugin.config import RunConfig, ScaleOut
from pytest_recall.plugin.runlog import ResumeIndex, case_key
from pytest_recall.plugin.sandbox_setup import session_sandbox
from pytest_recall.plugin.stop import StopSignal
from pytest_recall.reporting import CaseRecord
from pytest_recall.scoring import TaskJudgeFailure, Verdict, case_verdict, task_judge_problem
from pytest_recall.sessions import (
    CASE_PAUSE_TIMEOUTS,
    DEFAULT_TIMEOUT_S,
    CasePool,
    Flow,
    GroupIngests,
    HostPause,
    LlmJudging,
    Pause,
    SessionSettings,
    SharedVerdicts,
    TaskScriptError,
    agent_environment,
    effective_case,
    grouped_case_flow,
    judged_flow,
    open_shared_scope,
    rate_limit_wait,
    release_run,
    remove_tree,
    run_id,
    run_task_judge,
    stop_quickener,
)

EXECUTOR_KEY = pytest.StashKey["CaseExecutor"]()
BUDGET_REASON = "recall: not started: --recall-max-cost"


class RunnableItem(Protocol):
    """What the executor needs of an item; kept narrow so it never touches pytest internals."""

    @property
    def nodeid(self) -> str: ...

    @property
    def case(self) -> Case: ...

    @property
    def epoch(self) -> int: ...

    @property
    def control(self) -> bool: ...


class CaseExecutor:
    """One per process; it owns the pool of running cases."""

    def __init__(
        self,
        config: pytest.Config,
        run_config: RunConfig,
        sessions: SessionSettings,
        *,
        concurrency: int,
        resume: ResumeIndex | None = None,
        shared_verdicts: SharedVerdicts | None = None,
    ) -> None:
        self.config = config
        self.spread = run_config.scale_out
        # --recall-max-cost: no case starts once this process's reported spend reaches it.
        self.max_cost_usd = run_config.scale_out.max_cost_usd
        self.spent_usd = 0.0
        # This process's folders are named for it from here on; a killed run's are removed now, before any case.
        run_id()
        # --recall-transcripts=all: records carry each prompt whole, not by reference.
        self.full_prompts = run_config.outputs.transcripts == "all"
        if run_config.isolation.scope == "suite":
            sessions = replace(sessions, shared_scope=open_shared_scope(sessions))
        self.sessions = sessions
        self.command = run_config.command.text or ""
        self.run_mode = run_config.run_mode()
        # Under xdist, what this worker was dealt decides how far it may look ahead; see hooks._planned_here.
        self.concurrency = concurrency
        self.resume = resume
        self.pool = CasePool()
        self.ingests = GroupIngests()
        self.judging = (
            LlmJudging(
                run_config.llm_judge,
                retries=run_config.scale_out.retries,
                retry_delay_s=run_config.scale_out.retry_delay_s,
                workers=concurrency,
                shared=shared_verdicts,
            )
            if run_config.llm_judge.on
            else None
        )
        self._queue: list[RunnableItem] = []
        self._position: dict[str, int] = {}
        self._started: set[str] = set()
        # Cases ahead that an earlier run scored, until pytest reaches them.
        self._resumed: set[str] = set()
        self.in_flight = 0
        # --recall-stop=decided: set once planned; says when the score gate is decided and no case may start.
        self.stop: StopSignal | None = None
        # The run's rate-limit pause on this host, set once planned; None runs without one.
        self.host_pause: HostPause | None = None

    def plan(self, items: Sequence[Any]) -> None:
        """The items this process will run, in order, for the look-ahead.

        Which of them an earlier run already scored (``--recall-resume``) is
        found as the look-ahead reaches them: a case is read again to know its
        content hash, and planning reads none.
        """
        self._queue = list(items)
        self._position = {item.nodeid: index for index, item in enumerate(self._queue)}

    def stored(self, item: RunnableItem) -> CaseRecord | None:
        """``--recall-resume``: the record an earlier run scored for this very case and command.

        Asked by the item pytest is at, which leaves the look-ahead's books either way.
        """
        if self.resume is None:
            return None
        self._resumed.discard(item.nodeid)
        record = self._stored(item)
        if record is not None:
            self._position.pop(item.nodeid, None)
            # Stored under another rootdir, it stands in this run's report under this run's node id.
            record = replace(record, nodeid=item.nodeid)
        return record

    def _stored(self, item: RunnableItem) -> CaseRecord | None:
        assert self.resume is not None
        case = self.effective_case(item.case)
        key = case_key(case.suite, case.case_id, item.nodeid)
        return self.resume.take(key, case.content_hash, self.command, self.run_mode)

    def _starts_ahead(self, item: RunnableItem) -> bool:
        """Whether a case ahead is to start now: not in flight, within budget, and not resumed
        (found once, then remembered until pytest reaches it, so it is read again only once)."""
        if item.nodeid in self._started or item.nodeid in self._resumed or self._stop_reason() is not None:
            return False
        if self.resume is not None and self._stored(item) is not None:
            self._resumed.add(item.nodeid)
            return False
        return True

    def effective_case(self, case: Case) -> Case:
        return effective_case(case, self.sessions)

    def judge(self, stdout: str, expected: Mapping[str, Any]) -> dict[str, Any]:
        verdict: dict[str, Any] = self.config.hook.pytest_recall_judge(
            stdout=stdout, expected=expected, config=self.config
        )
        return verdict

    def _submit(self, item: RunnableItem) -> None:
        # Read (or generated) again here, as its first session is about to start: collection kept no text.
        case = self.effective_case(item.case)
        self._started.add(item.nodeid)

        attempts = itertools.count(1)
        pause = self.host_pause

        def attempt() -> Flow:
            flow = grouped_case_flow(
                case,
                self.sessions,
                self.judge,
                self.ingests,
                owner=item.nodeid,
                control=item.control,
                epoch=item.epoch,
                last_attempt=next(attempts) > self.spread.retries,
            )
            return flow if pause is None else pause.paced(flow)

        timeout_s = self.sessions.limits.timeout_s or case.timeout_s or DEFAULT_TIMEOUT_S
        flow = retrying(attempt, self.spread, pause, pause_budget_s=CASE_PAUSE_TIMEOUTS * timeout_s)
        # No judge command: the flow as it is, with no extra generator frame on every step's yield.
        self.pool.submit(item.nodeid, flow if self.judging is None else judged_flow(flow, self.judging))

    def budget_spent(self) -> str | None:
        """Why no more case may start (--recall-max-cost reached), or None."""
        if self.max_cost_usd is None or self.spent_usd < self.max_cost_usd:
            return None
        return f"{BUDGET_REASON} ${self.max_cost_usd:g} reached (${self.spent_usd:.4f} reported spent in this process)"

    def run(self, item: RunnableItem) -> CaseRun:
        if item.nodeid not in self.pool:
            # Not in flight: its first run, or a rerun (pytest-rerunfailures) after the first was taken.
            self._submit(item)
        # Each item runs once: what tracked it goes as it starts, so a long run holds nothing per finished case.
        start = self._position.pop(item.nodeid, None)
        if start is not None and self.concurrency > 1:
            for ahead in self._queue[start + 1 : start + self.concurrency]:
                # A case that no longer reads is the failure of its own item, not of this one.
                with contextlib.suppress(CaseError):
                    if self._starts_ahead(ahead):
                        self._submit(ahead)
        self._started.discard(item.nodeid)
        run = self.pool.wait(item.nodeid)
        # This case and those still in flight: how many ran at once as it ended, for the progress line.
        self.in_flight = len(self.pool) + 1
        self.spent_usd += sum(step.cost_usd for step in run.steps if step.cost_usd is not None)
        self.spent_usd += run.earlier_cost_usd or 0.0
        return run

    def _stop_reason(self) -> str | None:
        """Why no more case may start: the budget is spent or the score gate is decided; else None."""
        return self.budget_spent() or (self.stop.reason() if self.stop is not None else None)

    def stops(self, item: RunnableItem) -> str | None:
        """Why ``item`` must not start (see ``_stop_reason``) when it is not already in flight; else None."""
        return None if item.nodeid in self.pool else self._stop_reason()

    def verdict(self, run: CaseRun, case_folder: Path | None, collected_digests: Mapping[str, str] | None) -> Verdict:
        """The bridge to :func:`case_verdict`: this run's judge hook and the trap-task judge's runner."""
        return case_verdict(
            run,
            answer_judge=self.judge,
            task_judge_runner=task_judge_output,
            case_folder=case_folder,
            collected_digests=collected_digests,
        )

    def finished(self, record: CaseRecord) -> None:
        """Called once per case record; the place for per-case side effects.

        The public hook gets the record's JSON, as the report and the README describe it.
        """
        self.config.hook.pytest_recall_case_finished(record=record.as_json(), config=self.config)

    def close(self) -> None:
        self.pool.close()
        self.ingests.close()
        if self.judging is not None:
            self.judging.close()
        if self.sessions.shared_scope is not None:
            remove_tree(self.sessions.shared_scope)
        release_run()
        stop_quickener()


def task_judge_output(case: Case, stdout: str, exit_code: int | None) -> Any:
    """A trap task's own judge run as a script; a judge that fails is a :class:`TaskJudgeFailure`, the agent's
    doing when the same judge gives a verdict on the case's expected answer (printed, exit code 0)."""
    output, problem = _task_judge_run(case, stdout, exit_code)
    if problem is None:
        return output
    reference = case.expected.get("answer")
    text = reference if isinstance(reference, str) else json.dumps(reference)
    _, on_reference = _task_judge_run(case, text + "\n", 0)
    return TaskJudgeFailure(problem, agents_doing=on_reference is None)


def _task_judge_run(case: Case, stdout: str, exit_code: int | None) -> tuple[Any, str | None]:
    """What the task's judge printed, and why that is no verdict (None when it is one)."""
    try:
        output = run_task_judge(case, stdout, exit_code)
    except TaskScriptError as exc:
        return None, str(exc)
    return output, task_judge_problem(output)


def agent_failed(run: CaseRun) -> bool:
    """The run ended as the agent's failure, not as an answer: it could not start, a step exited
    non-zero, died by a signal or timed out. Those are what a retry is for (rate limits, overload)."""
    return run.error is not None or any(step.result.failed for step in run.steps)


def retrying(
    attempt: Callable[[], Flow],
    spread: ScaleOut,
    pause: HostPause | None = None,
    *,
    pause_budget_s: float = CASE_PAUSE_TIMEOUTS * DEFAULT_TIMEOUT_S,
) -> Flow:
    """Run a case; after an agent failure run it again from step 1, up to ``spread.retries`` more times.

    Each attempt is a new :func:`case_flow`, so a fresh scope and HOME. Between
    attempts the case yields a :class:`Pause` of ``spread.retry_delay_s``,
    doubling each time: the pool keeps every other case in flight running
    meanwhile. A run the model refused for a rate limit is no agent failure:
    it pauses every session start on the host (``pause``) and runs again,
    outside ``retries``, until ``spread.rate_limit_attempts`` runs were
    refused; the last refused run is then the case's (``rate_limited``), as
    another ordinary retry would only meet the same limit. That refusal
    pauses the host too: the next case would meet the limit as well. Nor
    does a case wait for its refusals past ``pause_budget_s`` in all (tied to
    its timeout by the caller), or past the run's pause budget: a claim made
    at every attempt would otherwise hold it for attempts times the cap.
    """
    number = refusals = 1
    earlier: list[float] = []
    paused = 0.0
    while True:
        run = yield from attempt()
        wait = rate_limit_wait(run)
        refused = pause is not None and wait is not None
        until = (
            pause.extend(wait, refusals, pause_budget_s - paused) if pause is not None and wait is not None else None
        )
        if until is not None and refusals < spread.rate_limit_attempts:
            earlier += [step.cost_usd for step in run.steps if step.cost_usd is not None]
            held = max(0.0, until - time.time())
            paused += held
            yield Pause(time.monotonic() + held)
            refusals += 1
            continue
        if refused or number > spread.retries or not agent_failed(run):
            spent = sum(earlier) if earlier else None
            runs = number + refusals - 1
            return replace(run, attempts=runs, earlier_cost_usd=spent) if runs > 1 else run
        earlier += [step.cost_usd for step in run.steps if step.cost_usd is not None]
        yield Pause(time.monotonic() + spread.retry_delay_s * 2 ** (number - 1))
        number += 1


def session_settings(config: pytest.Config, run_config: RunConfig, case_folders: Iterable[Path]) -> SessionSettings:
    """How this run starts each agent session; cases and the preflight both run with exactly this."""
    return run_config.sessions(agent_environment(os.environ), session_sandbox(config, run_config, case_folders))
