"""Running a judge command (``--recall-judge-cmd``) once, outside any agent's sandbox and memory.

The command reads one JSON object on stdin and prints its verdict. It runs
with the harness's own environment, minus every ``RECALL_*`` variable of an
agent session, in a folder of its own, and never sees an agent's scope or
HOME; how its processes are contained and its output bounded is
:mod:`pytest_recall.sessions.judge_process`. A timeout, too much output, a
non-zero exit or an unreadable verdict is a judge error, retried like an
agent's failure and then counted apart from the agent's.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_recall.scoring import JudgeReply, read_judge_reply
from pytest_recall.sessions.case_flow import agent_environment
from pytest_recall.sessions.cost_file import StepCost, read_cost
from pytest_recall.sessions.judge_process import JudgeStopped, run_judge_process
from pytest_recall.sessions.run_folders import folder_prefix

DEFAULT_JUDGE_TIMEOUT_S = 120.0
# ``NAME=CMD`` names a judge when NAME is one word; anything else is a command, named by its position.
_NAMED = re.compile(r"^([A-Za-z][\w.-]*)=(.*)$", re.S)


@dataclass(frozen=True, slots=True)
class Judge:
    """One of several judge commands: the name its verdicts go by, the command as given, and its words."""

    name: str
    text: str
    argv: tuple[str, ...]


def parse_judges(texts: Sequence[str], flag: str) -> list[Judge]:
    """Judge commands as given (``NAME=CMD``, or a bare command named ``judge1``, ``judge2``, ... by position);
    ValueError, in one line, for a command with no words or two judges of one name."""
    judges = []
    for position, text in enumerate(texts, start=1):
        named = _NAMED.match(text)
        name, command = (named.group(1), named.group(2)) if named else (f"judge{position}", text)
        try:
            argv = tuple(shlex.split(command))
        except ValueError as exc:
            raise ValueError(f"{flag} {text!r} cannot be split like a shell command line: {exc}") from None
        if not argv:
            raise ValueError(f"{flag} {text!r} names no command; give one, e.g. {flag}='strict=recall-judge'")
        judges.append(Judge(name, command, argv))
    names = [judge.name for judge in judges]
    if len(set(names)) != len(names):
        raise ValueError(f"two judges share a name ({', '.join(names)}); name each one: {flag}=NAME=CMD")
    return judges


@dataclass(frozen=True, slots=True)
class JudgeCall:
    """One judged answer: the verdict (or why there is none), what it cost, and how many tries it took."""

    reply: JudgeReply
    attempts: int
    duration_s: float
    cost_usd: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    prompt_sha256: str | None = None


# What an agent session is told about itself; a judge is told none of it, whatever the harness inherited.
SESSION_VARIABLES = frozenset(
    {"RECALL_SCOPE_DIR", "RECALL_COST_FILE", "RECALL_PROMPT_FILE", "RECALL_SESSION_TOKEN", "RECALL_STEP"}
)


def judge_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The user's environment (``RECALL_LLM_BIN`` and API keys included) without any agent session's variables."""
    return {name: value for name, value in agent_environment(environ).items() if name not in SESSION_VARIABLES}


def run_judge_command(
    argv: Sequence[str],
    request: Mapping[str, Any],
    *,
    timeout_s: float = DEFAULT_JUDGE_TIMEOUT_S,
    retries: int = 0,
    retry_delay_s: float = 0.0,
    stop: threading.Event | None = None,
) -> JudgeCall:
    """The judge's verdict on one answer, tried again after a judge error up to ``retries`` times.

    ``stop``, once set, ends the judge in flight and any wait before a retry: raises :class:`JudgeStopped`.
    """
    started = time.monotonic()
    attempt = 1
    while True:
        reply, cost = _once(argv, request, timeout_s, stop)
        if reply.error is None or attempt > retries:
            return JudgeCall(
                reply,
                attempt,
                time.monotonic() - started,
                cost.cost_usd,
                cost.tokens_in,
                cost.tokens_out,
                cost.prompt_sha256,
            )
        delay = retry_delay_s * 2 ** (attempt - 1)
        if stop is not None and stop.wait(delay):
            raise JudgeStopped("the run is ending")
        if stop is None:
            time.sleep(delay)
        attempt += 1


def _once(
    argv: Sequence[str], request: Mapping[str, Any], timeout_s: float, stop: threading.Event | None
) -> tuple[JudgeReply, StepCost]:
    no_cost = StepCost()
    with tempfile.TemporaryDirectory(prefix=folder_prefix("judge")) as room:
        cost_file = Path(room) / "cost.json"
        env = {**judge_environment(os.environ), "RECALL_COST_FILE": str(cost_file)}
        payload = json.dumps(dict(request), ensure_ascii=False).encode("utf-8")
        try:
            done = run_judge_process(argv, payload, cwd=room, env=env, timeout_s=timeout_s, stop=stop)
        except OSError as exc:
            return JudgeReply(None, error=f"the judge could not start: {shlex.join(argv)}: {exc.strerror}"), no_cost
        if done.problem is not None:
            return JudgeReply(None, error=f"the judge {done.problem}"), no_cost
        cost, _not_a_plain_file = read_cost(cost_file)  # the judge's cost file: what it is not, it reports no cost
        if done.exit_code != 0:
            return JudgeReply(None, error=f"the judge exited {done.exit_code}{stderr_cause(done.stderr)}"), cost
        return read_judge_reply(done.stdout.decode("utf-8", "replace")), cost


def stderr_cause(stderr: bytes) -> str:
    """The last two lines a failed judge wrote on stderr: a wrapper's own last line (``llm printed no JSON
    response``) hides the cause its CLI wrote just above it (``Error: 'Unknown model: gpt-nope'``)."""
    lines = [line.strip() for line in stderr[-600:].decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return ": it wrote nothing on stderr"
    return ": " + " | ".join(lines[-2:])
