"""Runs case items in this process, several at once when asked.

pytest calls items one at a time. With ``--recall-concurrency=N`` the
executor starts the next N cases as soon as the first is set up, all on one
event loop, and hands each item its result when pytest reaches it. Reports
still come out in collection order.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import pytest

from pytest_recall.cases.model import Case
from pytest_recall.cases.runs import CaseRun
from pytest_recall.plugin.options import DEFAULT_RETRY_DELAY_S, Settings
from pytest_recall.plugin.runlog import ResumeIndex
from pytest_recall.plugin.sandbox_setup import session_sandbox
from pytest_recall.scoring.evidence import case_verdict
from pytest_recall.scoring.verdict import TaskJudgeFailure, Verdict
from pytest_recall.sessions.case_flow import (
    RunSettings,
    agent_environment,
    case_flow,
    effective_case,
    open_shared_scope,
)
from pytest_recall.sessions.pool import CasePool, Flow, Pause
from pytest_recall.sessions.rooms import remove_tree
from pytest_recall.sessions.task_scripts import TaskScriptError, run_task_judge

EXECUTOR_KEY = pytest.StashKey["CaseExecutor"]()


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
        run_settings: RunSettings,
        *,
        command: str,
        concurrency: int,
        resume: ResumeIndex | None = None,
        run_mode: Mapping[str, Any] | None = None,
        shared_scope: bool = False,
        retries: int = 0,
        retry_delay_s: float = DEFAULT_RETRY_DELAY_S,
        full_prompts: bool = False,
    ) -> None:
        self.config = config
        self.retries = retries
        self.retry_delay_s = retry_delay_s
        # --recall-transcripts=all: records carry each prompt whole, not by reference.
        self.full_prompts = full_prompts
        if shared_scope:
            run_settings = replace(run_settings, shared_scope=open_shared_scope(run_settings))
        self.run_settings = run_settings
        self.command = command
        self.run_mode = dict(run_mode or {})
        self.concurrency = concurrency
        self.resume = resume
        self.pool = CasePool()
        self._queue: list[RunnableItem] = []
        self._position: dict[str, int] = {}
        self._started: set[str] = set()

    def plan(self, items: Sequence[Any]) -> None:
        """The items this process will run, in order, for the look-ahead."""
        # Resumed cases never run, so they must not take a look-ahead slot either.
        self._queue = [item for item in items if hasattr(item, "case") and self.stored(item) is None]
        self._position = {item.nodeid: index for index, item in enumerate(self._queue)}

    def stored(self, item: RunnableItem) -> dict[str, Any] | None:
        """``--recall-resume``: the record an earlier run scored for this very case and command."""
        if self.resume is None:
            return None
        return self.resume.take(item.nodeid, self.effective_case(item.case).content_hash, self.command, self.run_mode)

    def effective_case(self, case: Case) -> Case:
        return effective_case(case, self.run_settings)

    def judge(self, stdout: str, expected: Mapping[str, Any]) -> dict[str, Any]:
        verdict: dict[str, Any] = self.config.hook.pytest_recall_judge(
            stdout=stdout, expected=expected, config=self.config
        )
        return verdict

    def _submit(self, item: RunnableItem) -> None:
        self._started.add(item.nodeid)
        case = self.effective_case(item.case)

        def attempt() -> Flow:
            return case_flow(case, self.run_settings, self.judge, control=item.control, epoch=item.epoch)

        self.pool.submit(item.nodeid, retrying(attempt, self.retries, self.retry_delay_s))

    def run(self, item: RunnableItem) -> CaseRun:
        if item.nodeid not in self.pool:
            # Not in flight: its first run, or a rerun (pytest-rerunfailures) after the first was taken.
            self._submit(item)
        # Each item runs once: what tracked it goes as it starts, so a long run holds nothing per finished case.
        start = self._position.pop(item.nodeid, None)
        if start is not None and self.concurrency > 1:
            for ahead in self._queue[start + 1 : start + self.concurrency]:
                if ahead.nodeid not in self._started:
                    self._submit(ahead)
        self._started.discard(item.nodeid)
        return self.pool.wait(item.nodeid)

    def verdict(self, run: CaseRun, case_folder: Path | None, collected_digests: Mapping[str, str] | None) -> Verdict:
        """The bridge to :func:`case_verdict`: this run's judge hook and the trap-task judge's runner."""
        return case_verdict(
            run,
            answer_judge=self.judge,
            task_judge_runner=task_judge_output,
            case_folder=case_folder,
            collected_digests=collected_digests,
        )

    def finished(self, record: Mapping[str, Any]) -> None:
        """Called once per case record; the place for per-case side effects."""
        self.config.hook.pytest_recall_case_finished(record=dict(record), config=self.config)

    def close(self) -> None:
        self.pool.close()
        if self.run_settings.shared_scope is not None:
            remove_tree(self.run_settings.shared_scope)


def task_judge_output(case: Case, stdout: str, exit_code: int | None) -> Any:
    """A trap task's own judge run as a script; a judge that fails is a :class:`TaskJudgeFailure`."""
    try:
        return run_task_judge(case, stdout, exit_code)
    except TaskScriptError as exc:
        return TaskJudgeFailure(str(exc))


def agent_failed(run: CaseRun) -> bool:
    """The run ended as the agent's failure, not as an answer: it could not start, a step exited
    non-zero, died by a signal or timed out. Those are what a retry is for (rate limits, overload)."""
    return run.error is not None or any(step.result.failed for step in run.steps)


def retrying(attempt: Callable[[], Flow], retries: int, delay_s: float) -> Flow:
    """Run a case; after an agent failure run it again from step 1, up to ``retries`` more times.

    Each attempt is a new :func:`case_flow`, so a fresh scope and HOME. Between
    attempts the case yields a :class:`Pause` of ``delay_s``, doubling each
    time: the pool keeps every other case in flight running meanwhile.
    """
    number = 1
    while True:
        run = yield from attempt()
        if number > retries or not agent_failed(run):
            return replace(run, attempts=number) if number > 1 else run
        yield Pause(time.monotonic() + delay_s * 2 ** (number - 1))
        number += 1


def run_settings_for(config: pytest.Config, settings: Settings, case_folders: Iterable[Path]) -> RunSettings:
    """How this run starts each agent session; cases and the preflight both run with exactly this."""
    return default_run_settings(
        settings.argv,
        timeout_s=settings.timeout_s,
        grace_s=settings.grace_s,
        max_output_bytes=settings.max_output_bytes,
        home_mode=settings.home_mode,
        home_copy=settings.home_copy,
        env=settings.env,
        prompt_mode=settings.prompt_mode,
        workdir_mode=settings.workdir_mode,
        session=settings.session,
        live=settings.live,
        ok_exit_codes=settings.ok_exit_codes,
        wrap_argv=session_sandbox(config, settings, case_folders),
    )


def default_run_settings(argv: tuple[str, ...], **overrides: Any) -> RunSettings:
    env = agent_environment(os.environ)
    return RunSettings(argv=argv, base_env=env, **overrides)
