"""``--recall-preflight``: run the agent once on a trivial prompt before any case, and stop a run that cannot work.

A missing login, an unknown model or an unreachable API makes every case
score 0, and each of those zeros costs a session or two; the report then
reads as forgetting. One session first, with the run's full settings,
turns that into one clear block and exit status 4.

The preflight is a one-step case run through the very :func:`case_flow` and
:class:`CasePool` the executor uses, so sandbox, HOME, copies, environment
and prompt delivery can never differ from a real step's. It runs once, on the
controller, before xdist starts its workers.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

import pytest

from pytest_recall.cases import Case, CaseRun, Step
from pytest_recall.plugin.config import RunConfig
from pytest_recall.plugin.executor import session_settings
from pytest_recall.plugin.xdist_handoff import is_worker
from pytest_recall.sessions import CasePool, SessionSettings, case_flow, effective_case

PREFLIGHT_PROMPT = "Reply with the single word READY."
PREFLIGHT_KEY = "recall-preflight"
STDERR_TAIL_LINES = 15
HINT = (
    "usual causes: a login or config the agent reads from HOME was not copied into the case HOME "
    "(--recall-home-copy=SRC[:DEST]); the model or its API is unreachable or misnamed (check the URL, key, "
    "model name and network); under --recall-sandbox=bwrap, a path the agent needs is not bound "
    "(--recall-sandbox-bind=PATH)"
)


def preflight_case(settings: SessionSettings) -> Case:
    """The one-step case the preflight runs, in the run's session mode."""
    return Case(
        case_id=PREFLIGHT_KEY,
        suite=PREFLIGHT_KEY,
        steps=(Step(number=1, prompt=PREFLIGHT_PROMPT),),
        expected={"answer": "READY", "answer_kind": "money"},
        source="--recall-preflight",
        session=settings.live.session or "fresh",
    )


def run_preflight(settings: SessionSettings) -> CaseRun:
    """Run the preflight case to its end in a pool of its own; its scope and HOME are removed after."""
    pool = CasePool()
    try:
        pool.submit(PREFLIGHT_KEY, case_flow(effective_case(preflight_case(settings), settings), settings, _no_judge))
        return pool.wait(PREFLIGHT_KEY)
    finally:
        pool.close()


def failure(run: CaseRun) -> str | None:
    """Why the preflight run shows the agent cannot answer, or None when it answered."""
    if run.error is not None:
        return f"could not start: {run.error}"
    if not run.steps:
        return "no session ran"
    result = run.steps[-1].result
    if result.start_error is not None:
        return f"could not start: {result.start_error}"
    if result.timed_out:
        return "timed out: no exit within --recall-timeout"
    if result.signal is not None:
        return f"killed by signal {result.signal}"
    if result.failed:
        return f"exit status {result.exit_code}"
    if not run.steps[-1].stdout.strip():
        return "exit status 0, but it printed nothing on stdout"
    return None


def preflight(config: pytest.Config, run_config: RunConfig) -> str | None:
    """With ``--recall-preflight``, on the controller: a header line, or a usage error that stops the run.

    Nothing runs for ``--collect-only``, without an agent command, or inside an xdist worker.
    """
    __tracebackhide__ = True
    if not run_config.preflight or not run_config.command.argv or is_worker(config):
        return None
    if config.getoption("collectonly"):
        return None
    return check_agent_answers(session_settings(config, run_config, ()), sandboxed=run_config.sandbox.on)


def check_agent_answers(settings: SessionSettings, *, sandboxed: bool) -> str:
    """Stop the run with one block unless the agent answers the preflight prompt; else a header line."""
    __tracebackhide__ = True
    run = run_preflight(settings)
    why = failure(run)
    if why is None:
        return f"preflight: the agent answered in {run.duration_s:.1f} s"
    raise pytest.UsageError(failure_block(settings, run, why, sandboxed=sandboxed))


def failure_block(settings: SessionSettings, run: CaseRun, why: str, *, sandboxed: bool) -> str:
    where = " (inside the bwrap sandbox)" if sandboxed else ""
    lines = [
        "--recall-preflight: the agent failed on a trivial prompt, so no case was run (none was charged).",
        f"  command{where}: {shlex.join([*settings.command.argv, PREFLIGHT_PROMPT])}",
        f"  result: {why}",
    ]
    if run.steps:
        stderr = run.steps[-1].stderr.strip().splitlines()[-STDERR_TAIL_LINES:]
        lines.append("  stderr (last lines):" if stderr else "  stderr: (empty)")
        lines.extend(f"    {line}" for line in stderr)
        stdout = run.steps[-1].stdout.strip().splitlines()[-3:]
        if stdout:
            lines.append("  stdout (last lines):")
            lines.extend(f"    {line}" for line in stdout)
    lines.append(f"  hint: {HINT}")
    return "\n".join(lines)


def _no_judge(stdout: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    return {}  # a one-step case has no feedback to judge
