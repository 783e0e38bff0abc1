"""Running one case: its directories, its environment and its steps, in order.

The isolation rules live here, and they hold by construction:

- every step gets a new, empty working directory with a random name, made
  only after the previous step's process has exited and its directory is
  gone;
- prompts travel in argv, never through a file, and captured output stays
  in the harness's memory, so nothing of an earlier step exists on disk
  where a later step could walk to it;
- the case's memory scope (``RECALL_SCOPE_DIR``) is the one thing steps
  share, and it is removed when the case ends.

A case is written as a generator that yields the session it wants next and
receives its result. That lets :class:`CasePool` keep many cases in flight
on one event loop, while a serial run is simply a pool of one.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_recall.cases.model import Case, Step
from pytest_recall.cases.runs import CaseRun, SessionResult, StepRun
from pytest_recall.sessions.capture import DEFAULT_MAX_OUTPUT_BYTES
from pytest_recall.sessions.session import MAX_TURN_LINE_BYTES, SessionSpec
from pytest_recall.sessions.spawn import AgentStartError
from pytest_recall.sessions.workspace import WorkspaceKeeper, uses_workspace
from pytest_recall.terminal_text import clean_terminal_text, decode

SCOPE_VAR = "RECALL_SCOPE_DIR"
COST_VAR = "RECALL_COST_FILE"
STEP_VAR = "RECALL_STEP"
# The trap-task manifests name the expected answers; an agent must never see them.
SCRUBBED_VARS = frozenset({"TRAP_MANIFEST", "TRAPTASK_MANIFEST"})
XDG_DIRS = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
    "XDG_CACHE_HOME": ".cache",
}
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_GRACE_S = 3.0

Judge = Callable[[str, Mapping[str, Any]], dict[str, Any]]
Wrapper = Callable[[list[str], "SessionRooms"], list[str]]


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Everything about how to run agents that is the same for every case."""

    argv: tuple[str, ...]
    base_env: Mapping[str, str]
    timeout_s: float = DEFAULT_TIMEOUT_S
    grace_s: float = DEFAULT_GRACE_S
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    home_mode: str = "user"
    home_copy: tuple[str, ...] = ()
    real_home: str | None = None
    wrap_argv: Wrapper | None = None
    # Run-wide live-session options: ``session`` forces every case into that mode;
    # the readiness options apply to cases whose case.toml sets no readiness of its own.
    session: str | None = None
    ready_pattern: str | None = None
    ready_idle_s: float | None = None
    # ``--recall-scope=suite``: the one scope every (non-control) case of the run shares; see open_shared_scope.
    shared_scope: Path | None = None


@dataclass(frozen=True, slots=True)
class SessionRooms:
    """The directories one session may touch; a sandbox binds exactly these."""

    workdir: Path
    scope: Path
    home: Path | None
    harness: Path


def agent_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The user's environment without pytest's own variables and the trap manifests."""
    return {k: v for k, v in environ.items() if not k.startswith("PYTEST_") and k not in SCRUBBED_VARS}


def _private_dir(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(path, stat.S_IRWXU)
    return path


def remove_tree(path: Path) -> None:
    """Remove a directory an agent may have made hard to remove (read-only dirs)."""

    def make_writable_and_retry(function: Callable[..., Any], target: str, _exc: object) -> None:
        try:
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            os.chmod(target, stat.S_IRWXU)
        except OSError:
            pass
        function(target)

    try:
        # Many steps leave their directory empty: one rmdir then, instead of rmtree's walk
        # (an open, a stat, a directory listing and a close for every directory).
        os.rmdir(path)
        return
    except FileNotFoundError:
        return
    except OSError:
        pass  # not empty, not a plain directory, or not removable as it is: the full walk below
    if not (path.exists() or path.is_symlink()):
        return
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=make_writable_and_retry)
    else:  # pragma: no cover - Python < 3.12
        shutil.rmtree(path, onerror=make_writable_and_retry)


def _prepare_home(settings: RunSettings, scope: Path) -> Path | None:
    """``--recall-home=case``: HOME inside the scope, seeded with the files the user names."""
    if settings.home_mode != "case":
        return None
    home = scope / "home"
    home.mkdir()
    if settings.real_home:
        real = Path(settings.real_home)
        for name in settings.home_copy:
            source = real / name
            target = home / name
            if source.is_dir():
                shutil.copytree(source, target, symlinks=True)
            elif source.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
    return home


def open_shared_scope(settings: RunSettings) -> Path:
    """The scope (and HOME, with ``--recall-home=case``) all cases of a run share; the caller removes it."""
    scope = _private_dir("recall-scope-")
    _prepare_home(settings, scope)
    return scope


def _shared_home(settings: RunSettings, scope: Path) -> Path | None:
    return scope / "home" if settings.home_mode == "case" else None


def _read_cost(cost_file: Path) -> float | None:
    """An agent's own report of what a step cost; unreadable reports count as none."""
    try:
        data = json.loads(cost_file.read_text(encoding="utf-8"))
        cost = data.get("cost_usd") if isinstance(data, dict) else None
        return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    except (OSError, ValueError):
        return None
    finally:
        cost_file.unlink(missing_ok=True)


def feedback_prompt(step: Step, previous_stdout: str, judge: Judge) -> str:
    """A step that opens with feedback on the agent's previous answer, judged for real."""
    if step.feedback is None:
        return step.prompt
    from pytest_recall.scoring.judge import feedback_text

    verdict = judge(previous_stdout, step.feedback)
    return feedback_text(verdict, step.feedback) + step.prompt


def case_flow(
    case: Case, settings: RunSettings, judge: Judge, *, control: bool = False, epoch: int = 1
) -> Generator[SessionSpec, SessionResult, CaseRun]:
    """Run a case step by step; yields each session it needs and returns the whole run."""
    started = time.monotonic()
    # The control asks the last question cold: no earlier step, no feedback.
    steps = (replace(case.steps[-1], feedback=None),) if control else case.steps
    harness = _private_dir("recall-case-")
    shared = None if control else settings.shared_scope
    scope = shared or _private_dir("recall-scope-")
    runs: list[StepRun] = []
    # A live session's turns share one workdir: the workspace is copied in once and pictured once.
    last_step = steps[0].number if case.session == "continue" else steps[-1].number
    keeper = WorkspaceKeeper(case, harness, last_step=last_step) if uses_workspace(case) else None
    try:
        home = _shared_home(settings, shared) if shared else _prepare_home(settings, scope)
        env = dict(settings.base_env)
        env[SCOPE_VAR] = str(scope)
        env[COST_VAR] = str(harness / "cost.json")
        if home is not None:
            env["HOME"] = str(home)
            env.update({var: str(home / sub) for var, sub in XDG_DIRS.items()})
        # A mode forced for the whole run is already in ``case`` (see CaseExecutor.effective_case).
        if case.session == "continue":
            overlong = _overlong_turn_line(steps)
            if overlong is not None:
                return CaseRun(case, (), error=overlong, control=control, epoch=epoch)
            workdir = Path(tempfile.mkdtemp(prefix="recall-step-"))
            rooms = SessionRooms(workdir=workdir, scope=scope, home=home, harness=harness)
            try:
                if keeper is not None:
                    keeper.enter(steps[0].number, workdir)
                result = yield _live_spec(case, steps, settings, env, rooms, judge)
                if keeper is not None:
                    keeper.leave(steps[0].number, workdir)
            finally:
                remove_tree(workdir)
            runs.extend(_split_live_turns(steps, result, _read_cost(harness / "cost.json")))
            live_duration: float | None = result.duration_s
        else:
            live_duration = None
            for step in steps:
                prompt = feedback_prompt(step, runs[-1].stdout if runs else "", judge)
                workdir = Path(tempfile.mkdtemp(prefix="recall-step-"))
                rooms = SessionRooms(workdir=workdir, scope=scope, home=home, harness=harness)
                env[STEP_VAR] = str(step.number)
                argv = [*settings.argv, prompt]
                if settings.wrap_argv is not None:
                    argv = settings.wrap_argv(argv, rooms)
                try:
                    if keeper is not None:
                        keeper.enter(step.number, workdir)
                    result = yield SessionSpec(
                        argv=tuple(argv),
                        cwd=workdir,
                        env=dict(env),
                        timeout_s=case.timeout_s or settings.timeout_s,
                        grace_s=settings.grace_s,
                        max_output_bytes=settings.max_output_bytes,
                    )
                    if keeper is not None:
                        keeper.leave(step.number, workdir)
                finally:
                    remove_tree(workdir)
                runs.append(_step_run(step.number, prompt, result, _read_cost(harness / "cost.json")))
                if result.timed_out:
                    break
    except AgentStartError as exc:
        return CaseRun(
            case, tuple(runs), error=str(exc), control=control, epoch=epoch, duration_s=time.monotonic() - started
        )
    finally:
        if shared is None:
            remove_tree(scope)
        remove_tree(harness)
    duration = live_duration if live_duration is not None else sum(r.result.duration_s for r in runs)
    snapshot = keeper.snapshot if keeper is not None else None
    return CaseRun(case, tuple(runs), control=control, epoch=epoch, duration_s=duration, workspace_snapshot=snapshot)


def _step_run(number: int, prompt: str, result: SessionResult, cost: float | None) -> StepRun:
    return StepRun(
        number=number,
        prompt=prompt,
        result=result,
        stdout=clean_terminal_text(decode(result.stdout)),
        stderr=decode(result.stderr),
        cost_usd=cost,
    )


def _live_spec(
    case: Case,
    steps: tuple[Step, ...],
    settings: RunSettings,
    env: dict[str, str],
    rooms: SessionRooms,
    judge: Judge,
) -> SessionSpec:
    """One live process for every turn, each turn composed when the agent is ready for it.

    The timeout covers the whole session: the per-step timeout times the turns.
    A case.toml that sets a readiness (pattern or idle) keeps it; otherwise the
    run-wide one applies.
    """
    argv = list(settings.argv)
    if settings.wrap_argv is not None:
        argv = settings.wrap_argv(argv, rooms)

    def compose_turn(index: int, previous_answer: str) -> str:
        return feedback_prompt(steps[index], clean_terminal_text(previous_answer), judge)

    if case.ready_pattern is not None or case.ready_idle_s is not None:
        ready_pattern, ready_idle_s = case.ready_pattern, case.ready_idle_s
    else:
        ready_pattern, ready_idle_s = settings.ready_pattern, settings.ready_idle_s
    return SessionSpec(
        argv=tuple(argv),
        cwd=rooms.workdir,
        env=dict(env),
        timeout_s=(case.timeout_s or settings.timeout_s) * len(steps),
        grace_s=settings.grace_s,
        max_output_bytes=settings.max_output_bytes,
        turns=tuple(step.prompt for step in steps),
        compose_turn=compose_turn,
        ready_pattern=ready_pattern,
        ready_idle_s=ready_idle_s,
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


def _split_live_turns(steps: tuple[Step, ...], result: SessionResult, cost: float | None) -> list[StepRun]:
    """Each turn of a live session as a step of its own, so each step has its own answer.

    A turn the agent finished answering before the last ends well; the last
    step, the turn the session ended in and any turn never sent carry the
    session's exit, signal and timeout, so the judge says where it went wrong.
    A turn never sent has no answer. The session's stderr and cost go to the last step.
    """
    last = len(steps) - 1
    runs = []
    for index, step in enumerate(steps):
        turn = result.turns[index] if index < len(result.turns) else None
        answered = turn is not None and turn.finished and index < last
        answer = turn.answer if turn is not None else b""
        part = SessionResult(
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
        )
        prompt = turn.prompt if turn is not None else step.prompt
        runs.append(_step_run(step.number, prompt, part, cost if index == last else None))
    return runs
