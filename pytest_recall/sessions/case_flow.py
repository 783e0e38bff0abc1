"""Running one case: its steps, in order, each a fresh session in rooms of its own.

The isolation rules hold by construction (see :mod:`pytest_recall.sessions.rooms`
for the directories):

- every step gets an empty working directory, made only after the previous
  step's process has exited and its directory is gone;
- prompts travel in argv, on stdin, or in a file that exists only while its
  step runs; captured output stays in the harness's memory, so nothing of an
  earlier step exists on disk where a later step could walk to it;
- the case's memory scope (``RECALL_SCOPE_DIR``), with its HOME, is the one
  thing steps share, and it is removed when the case ends;
- a case stops at its first step that failed or timed out: the later sessions
  could not recall what an unfinished one never stored, and they cost money.

A case is written as a generator that yields the session it wants next and
receives its result. That lets :class:`~pytest_recall.sessions.pool.CasePool`
keep many cases in flight on one event loop, while a serial run is simply a
pool of one.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TypeVar

from pytest_recall.cases import Case, CaseRun, MemoryCalls, SessionResult, Step, StepRun, laid_over
from pytest_recall.scoring import AnswerScorer
from pytest_recall.sessions.cost_file import StepCost, read_cost
from pytest_recall.sessions.live_turns import MAX_TURN_LINE_BYTES
from pytest_recall.sessions.lost_memory import Leftovers, lost_memory_hint, workdir_leftovers
from pytest_recall.sessions.memory_listing import (
    ListingLimits,
    MemoryListing,
    holds_nothing,
    list_memory,
    list_small_memory,
    on_listing_threads,
)
from pytest_recall.sessions.memory_tap import calls_by_turn, read_memory_calls
from pytest_recall.sessions.pool import Pause
from pytest_recall.sessions.render import render_terminal
from pytest_recall.sessions.rooms import (
    COST_FILE_NAME,
    MCP_CONFIG_VAR,
    PROMPT_FILE_NAME,
    CaseArea,
    SessionRooms,
    prepare_memory,
    private_dir,
)
from pytest_recall.sessions.session import SessionSpec
from pytest_recall.sessions.settings import DEFAULT_TIMEOUT_S, SessionSettings
from pytest_recall.sessions.spawn import AgentStartError, CommandUnusable
from pytest_recall.sessions.workspace import DiskFilledByAgent, WorkspaceKeeper, uses_workspace
from pytest_recall.terminal_text import clean_terminal_text, decode

# The trap-task manifests name the expected answers; an agent must never see them.
SCRUBBED_VARS = frozenset({"TRAP_MANIFEST", "TRAPTASK_MANIFEST"})
# Linux's MAX_ARG_STRLEN: one argv string, its terminating NUL included.
MAX_ARGUMENT_BYTES = 32 * 4096
ARGV_FEEDBACK_MARGIN = 4096

T = TypeVar("T")
# Work on a case's memory for the listing threads: given the area and the event that cuts it short, it returns
# the agent's fault or None.
MemoryWork = Callable[[CaseArea, threading.Event], "str | None"]


def agent_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The user's environment without pytest's own variables and the trap manifests."""
    return {k: v for k, v in environ.items() if not k.startswith("PYTEST_") and k not in SCRUBBED_VARS}


def open_shared_scope(settings: SessionSettings) -> Path:
    """The memory (scope, and HOME with ``--recall-home=case``) all cases of a run share; the caller removes it."""
    root = private_dir("memory")
    prepare_memory(root, settings.isolation)
    return root


@dataclass(frozen=True, slots=True)
class MemoryHooks:
    """What a case group does to a run's memory: ``seed`` it before the first step, and ``keep`` it once step
    ``keep_after`` has ended well. Both run on the listing threads (they copy what the agent left) and return
    what they refused of it, the agent's fault, or None."""

    seed: MemoryWork | None = None
    keep_after: int | None = None
    keep: MemoryWork | None = None
    # Told the steps that ran, up to ``keep_after``, before ``keep``: what the ingest wrote, for the other questions.
    ingested: Callable[[Sequence[StepRun]], None] | None = None


def feedback_prompt(step: Step, previous_stdout: str, judge: AnswerScorer) -> str:
    """A step that opens with feedback on the agent's previous answer, judged for real."""
    if step.feedback is None:
        return step.prompt
    from pytest_recall.scoring import feedback_text

    verdict = judge(previous_stdout, step.feedback)
    return feedback_text(verdict, step.feedback) + step.prompt


def argv_prompt_problem(case: Case) -> str | None:
    """Why a step's prompt cannot travel as one argument (Linux caps one at 128 KiB), or None.

    Said at collection, so no session runs (and costs) first. Feedback that
    opens a step adds a few hundred bytes, which the margin covers.
    """
    for step in case.steps:
        size = len(step.prompt.encode("utf-8"))
        if size + ARGV_FEEDBACK_MARGIN >= MAX_ARGUMENT_BYTES:
            return (
                f"step{step.number}.txt is {size:,} bytes, more than one command-line argument can hold "
                f"({MAX_ARGUMENT_BYTES:,} bytes on Linux); run with --recall-prompt=stdin or --recall-prompt=file"
            )
    return None


def effective_case(case: Case, settings: SessionSettings) -> Case:
    """The case as this run runs it: every setting from one place, in one order of precedence.

    The command line, then the ini file (both arrive as ``settings``, a
    preset's values among them), then the suite.toml or case.toml the case
    came from, then the built-in default. Readiness is one rule
    (:func:`~pytest_recall.cases.live_protocol.layer_protocol`), so a
    run-wide pattern or idle period replaces the case's pair as a whole. What
    changes what is measured (the session mode, say) is then in the content
    hash that resume compares.
    """
    run_wide = settings.live
    return replace(
        case,
        timeout_s=settings.limits.timeout_s or case.timeout_s or DEFAULT_TIMEOUT_S,
        session=run_wide.session or case.session,
        live=laid_over(case.live, run_wide.protocol),
        ok_exit_codes=run_wide.ok_exit_codes or case.ok_exit_codes,
        mcp_servers=settings.isolation.mcp_servers or case.mcp_servers,
    )


# How often a case waiting for its memory listing looks again; other cases' sessions are served meanwhile.
LISTING_POLL_S = 0.01
LISTING_INLINE_WAIT_S = 0.005


def case_flow(
    case: Case,
    settings: SessionSettings,
    judge: AnswerScorer,
    *,
    control: bool = False,
    epoch: int = 1,
    memory_hooks: MemoryHooks | None = None,
) -> Generator[SessionSpec | Pause, SessionResult | None, CaseRun]:
    """Run a case step by step; yields each session it needs and returns the whole run.

    ``memory_hooks`` let a case group seed the case's memory before its first
    step and keep a copy of it after a step (see ``sessions/case_groups.py``).
    """
    started = time.monotonic()
    # The control asks the last question cold: no earlier step, no feedback.
    steps = (replace(case.steps[-1], feedback=None),) if control else case.steps
    area = CaseArea(settings.isolation, shared_memory=None if control else settings.shared_scope)
    runs: list[StepRun] = []
    # A live session's turns share one workdir: the workspace is copied in once and pictured once.
    last_step = steps[0].number if case.session == "continue" else steps[-1].number
    keeper = WorkspaceKeeper(case, area.root, last_step=last_step) if uses_workspace(case) else None
    live_duration, hint = None, None
    try:
        if memory_hooks is not None and memory_hooks.seed is not None:
            yield from _memory_work(memory_hooks.seed, area)
        if area.faults:
            pass  # the memory it was to start from could not be copied: no step runs
        # A mode forced for the whole run is already in ``case`` (see CaseExecutor.effective_case).
        elif case.session == "continue":
            overlong = _overlong_turn_line(steps) if case.live.typed else None
            if overlong is not None:
                return CaseRun(case, (), error=overlong, control=control, epoch=epoch)
            rooms = area.open_step()
            spec = _live_spec(case, steps, settings, area, rooms, judge)
            # One session holds every turn: the tap's calls go to the turn sent before each (memory_tap.py).
            result, cost, calls = yield from _session_in_rooms(spec, steps[0].number, rooms, area, keeper)
            runs.extend(_split_live_turns(steps, result, cost, calls))
            live_duration = result.duration_s
        else:
            hint = yield from _fresh_steps(case, steps, settings, judge, area, keeper, memory_hooks, runs)
    except AgentStartError as exc:
        area.close()
        return _unstarted(CaseRun(case, tuple(runs), control=control, epoch=epoch), exc, time.monotonic() - started)
    finally:
        # The area goes whatever happened; a second close after the one below finds nothing.
        area.close()
    duration = live_duration if live_duration is not None else sum(r.result.duration_s for r in runs)
    return CaseRun(
        case,
        tuple(runs),
        control=control,
        epoch=epoch,
        duration_s=duration,
        workspace_snapshot=keeper.snapshot if keeper is not None else None,
        agent_fault="; ".join(area.faults) or None,
        memory_hint=hint,
    )


def _unstarted(run: CaseRun, exc: AgentStartError, duration_s: float) -> CaseRun:
    """A case whose session could not start: the harness's error, unless the agent's own doing ended it."""
    if run.steps and isinstance(exc, CommandUnusable):
        # It ran for an earlier step; the agent ran since, and may remove or break its own program (default
        # mode): a case it ends that way is its failure, scored, not an error that leaves the score.
        fault = f"its command no longer starts after step {run.steps[-1].number}: {exc}"
        return replace(run, duration_s=duration_s, agent_fault=fault)
    if run.steps and isinstance(exc, DiskFilledByAgent):
        # Its own files left no room for the next step's workspace: scored, as any agent failure.
        return replace(run, duration_s=duration_s, agent_fault=str(exc))
    return replace(run, duration_s=duration_s, error=str(exc))


def _fresh_steps(
    case: Case,
    steps: tuple[Step, ...],
    settings: SessionSettings,
    judge: AnswerScorer,
    area: CaseArea,
    keeper: WorkspaceKeeper | None,
    memory_hooks: MemoryHooks | None,
    runs: list[StepRun],
) -> Generator[SessionSpec | Pause, SessionResult | None, str | None]:
    """Each step a fresh session, appended to ``runs`` as it ends; a failed step or an agent fault ends the case.

    Returns the lost-memory hint, from what the steps before the last left in their working folders (a
    workspace's folder holds the task's own files, so it is not looked at).
    """
    leftovers: list[Leftovers] = []
    for index, step in enumerate(steps):
        prompt = feedback_prompt(step, runs[-1].stdout if runs else "", judge)
        rooms = area.open_step()
        spec = _step_spec(case, step, prompt, settings, area, rooms)
        peek = leftovers if keeper is None and index < len(steps) - 1 else None
        result, cost, calls = yield from _session_in_rooms(spec, step.number, rooms, area, keeper, peek)
        last = index == len(steps) - 1 or bool(area.faults)
        memory = None if last else (yield from _memory_listing(area))
        runs.append(_step_run(step.number, prompt, result, cost, memory, calls))
        if result.failed or area.faults:
            return None
        if memory_hooks is not None and memory_hooks.keep is not None and step.number == memory_hooks.keep_after:
            if memory_hooks.ingested is not None:
                memory_hooks.ingested(runs)
            yield from _memory_work(memory_hooks.keep, area)
            if area.faults:
                return None
    return lost_memory_hint(runs, leftovers, settings.isolation)


def _off_loop(work: Callable[[threading.Event], T]) -> Generator[Pause, SessionResult | None, T]:
    """``work`` on the listing threads while this case pauses and every other one runs; it is told to stop
    when this case is closed first (an interrupted run)."""
    future, cancel = on_listing_threads(work)
    try:
        # Work on a small memory is often done in a moment: waited for here, with no round through the event loop.
        concurrent.futures.wait([future], timeout=LISTING_INLINE_WAIT_S)
        while not future.done():
            yield Pause(time.monotonic() + LISTING_POLL_S)
    finally:
        cancel.set()
    return future.result()


def _memory_work(work: MemoryWork, area: CaseArea) -> Generator[Pause, SessionResult | None, None]:
    """A case group's copy of a memory: what it refused is the agent's fault, a copy it could not write the
    harness's error."""
    try:
        fault = yield from _off_loop(partial(work, area))
    except OSError as exc:
        raise AgentStartError(f"the case group's copy of the memory could not be written: {exc}") from None
    if fault is not None:
        area.faults.append(fault)


def _memory_listing(area: CaseArea) -> Generator[Pause, SessionResult | None, MemoryListing]:
    """The memory listing: made at once when the memory is small, else on a thread of its own while this case
    pauses and every other one runs."""
    roots = area.memory_roots()
    if holds_nothing(roots):
        return MemoryListing()
    listing = list_small_memory(roots)
    if listing is None:
        listing = yield from _off_loop(partial(list_memory, roots, ListingLimits()))
    if listing.fault is not None:
        area.faults.append(listing.fault)
    return listing


def _session_in_rooms(
    spec: SessionSpec,
    step_number: int,
    rooms: SessionRooms,
    area: CaseArea,
    keeper: WorkspaceKeeper | None,
    leftovers: list[Leftovers] | None = None,
) -> Generator[SessionSpec, SessionResult | None, tuple[SessionResult, StepCost, MemoryCalls | None]]:
    """One session in its rooms, fresh or live: the workspace copied in, the session run, the
    workspace pictured (or, given ``leftovers``, what it left in its workdir noted there), the
    cost file read, and the rooms closed whatever happened. What the agent left there that the
    harness refuses to handle is kept in ``area.faults``."""
    try:
        if keeper is not None:
            keeper.enter(step_number, rooms.workdir)
        result = yield spec
        assert result is not None
        kept = keeper.leave(step_number, rooms.workdir) if keeper is not None else None
        if leftovers is not None and (left := workdir_leftovers(step_number, rooms.workdir)) is not None:
            leftovers.append(left)
        cost, fault = read_cost(rooms.harness / COST_FILE_NAME)
        area.faults.extend(found for found in (kept, fault) if found is not None)
        return result, cost, read_memory_calls(rooms.harness, tapped=MCP_CONFIG_VAR in spec.env)
    finally:
        area.close_step(rooms)


def _step_spec(
    case: Case, step: Step, prompt: str, settings: SessionSettings, area: CaseArea, rooms: SessionRooms
) -> SessionSpec:
    """One step's session: its argv, its rooms and environment, and its prompt, delivered as asked."""
    prompt_file = None
    stdin = None
    argv = list(settings.command.argv)
    if settings.command.prompt == "argv":
        argv.append(prompt)
    elif settings.command.prompt == "stdin":
        stdin = prompt.encode("utf-8")
    else:
        prompt_file = rooms.harness / PROMPT_FILE_NAME
        fd = os.open(prompt_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(prompt)
    env = area.environment(
        settings.base_env,
        rooms,
        step=step.number,
        last_step=case.steps[-1].number,
        case_id=case.case_id,
        overrides=settings.isolation.env,
        prompt_file=prompt_file,
        mcp_servers=case.mcp_servers,
    )
    if settings.wrap_argv is not None:
        argv = settings.wrap_argv(argv, rooms)
    return SessionSpec(
        argv=tuple(argv),
        cwd=rooms.workdir,
        env=env,
        timeout_s=case.timeout_s or DEFAULT_TIMEOUT_S,
        grace_s=settings.limits.grace_s,
        max_output_bytes=settings.limits.max_output_bytes,
        stdin=stdin,
        ok_exit_codes=case.ok_exit_codes,
    )


def _step_run(
    number: int,
    prompt: str,
    result: SessionResult,
    cost: StepCost,
    memory: MemoryListing | None = None,
    memory_calls: MemoryCalls | None = None,
) -> StepRun:
    listing, files, size = (memory.files, memory.count, memory.total) if memory is not None else (None, 0, 0)
    return StepRun(
        number=number,
        prompt=prompt,
        result=result,
        stdout=render_terminal(decode(result.stdout)),
        # stderr is shown on the user's terminal (failure text, summary): it must not act on that terminal.
        stderr=clean_terminal_text(decode(result.stderr)),
        cost_usd=cost.cost_usd,
        tokens_in=cost.tokens_in,
        tokens_out=cost.tokens_out,
        memory=listing,
        memory_files=files,
        memory_bytes=size,
        memory_calls=memory_calls,
    )


def _live_spec(
    case: Case,
    steps: tuple[Step, ...],
    settings: SessionSettings,
    area: CaseArea,
    rooms: SessionRooms,
    judge: AnswerScorer,
) -> SessionSpec:
    """One live process for every turn, each turn composed when the agent is ready for it.

    The timeout covers the whole session: the per-step timeout times the
    turns. How turns are typed and read is the case's effective protocol.
    """
    env = area.environment(
        settings.base_env,
        rooms,
        step=steps[0].number,
        last_step=case.steps[-1].number,
        case_id=case.case_id,
        overrides=settings.isolation.env,
        prompt_file=None,
        mcp_servers=case.mcp_servers,
    )
    argv = list(settings.command.argv)
    if settings.wrap_argv is not None:
        argv = settings.wrap_argv(argv, rooms)

    def compose_turn(index: int, previous_answer: str) -> str:
        return feedback_prompt(steps[index], clean_terminal_text(previous_answer), judge)

    return SessionSpec(
        argv=tuple(argv),
        cwd=rooms.workdir,
        env=dict(env),
        timeout_s=(case.timeout_s or DEFAULT_TIMEOUT_S) * len(steps),
        grace_s=settings.limits.grace_s,
        max_output_bytes=settings.limits.max_output_bytes,
        turns=tuple(step.prompt for step in steps),
        compose_turn=compose_turn,
        protocol=case.live,
        ok_exit_codes=case.ok_exit_codes,
    )


def _overlong_turn_line(steps: tuple[Step, ...]) -> str | None:
    """Why a case cannot go through a terminal's line mode intact, or None when it can."""
    for step in steps:
        longest = max((len(line.encode("utf-8")) for line in step.prompt.splitlines()), default=0)
        if longest > MAX_TURN_LINE_BYTES:
            return (
                f"step{step.number} has a line of {longest} bytes, but a live session's terminal keeps at most "
                f'{MAX_TURN_LINE_BYTES} bytes of a line; break the line or run the case with session = "fresh"'
            )
    return None


def _split_live_turns(
    steps: tuple[Step, ...], result: SessionResult, cost: StepCost, calls: MemoryCalls | None = None
) -> list[StepRun]:
    """Each turn of a live session as a step of its own, so each step has its own answer.

    A turn the agent finished answering before the last ends well; the last
    step, the turn the session ended in and any turn never sent carry the
    session's exit, signal and timeout, so the judge says where it went wrong.
    What the agent showed before a turn it never got is that turn's answer:
    an exit at start-up is reported with what the agent printed. A session
    that failed ends the case at the turn it failed in, as a failed fresh
    step does. The session's stderr, cost and raw terminal output go to the
    last step; its memory calls (``calls``, from the tap) to the turn each was
    made in.
    """
    if result.failed:
        ended = next((i for i, turn in enumerate(result.turns) if not turn.finished), len(result.turns))
        steps = steps[: ended + 1]
    last = len(steps) - 1
    sent_at = [result.turns[i].sent_at if i < len(result.turns) else None for i in range(len(steps))]
    per_turn = calls_by_turn(calls, sent_at) if calls is not None else [None] * len(steps)
    runs = []
    for index, step in enumerate(steps):
        turn = result.turns[index] if index < len(result.turns) else None
        answered = turn is not None and turn.finished and index < last
        answer = turn.answer if turn is not None else b""
        part = replace(
            result,
            exit_code=None if answered else result.exit_code,
            signal=None if answered else result.signal,
            timed_out=False if answered else result.timed_out,
            duration_s=turn.duration_s if turn is not None else 0.0,
            stdout=answer,
            stderr=result.stderr if index == last else b"",
            stdout_bytes=len(answer),
            stderr_bytes=result.stderr_bytes if index == last else 0,
            truncated=result.truncated if index == last else False,
            killed_leftovers=result.killed_leftovers if index == last else 0,
            turns=(),
        )
        prompt = turn.prompt if turn is not None and turn.sent else step.prompt
        run = _step_run(step.number, prompt, part, cost if index == last else StepCost(), None, per_turn[index])
        if index == last:
            run = replace(run, terminal=decode(result.stdout))
        runs.append(run)
    return runs
