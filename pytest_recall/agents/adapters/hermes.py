"""``recall-hermes [EXTRA ARGS...] PROMPT``: Hermes Agent's one-shot mode, unattended.

``hermes --oneshot=PROMPT`` (``-z``) runs one turn and prints only the final answer; it
approves its own tools (one-shot sets its YOLO mode) and silences its logs.
It says nothing on stdout about a failed model call beyond a sentence in place
of the answer, and exits 0 all the same ("API call failed after 3 retries"),
so the adapter asks for ``--usage-file`` (a JSON report written even when the
run fails, in a folder of its own that is removed after) and takes a run that
is ``failed`` or not ``completed`` as the CLI's failure, never as an answer.
The same file gives the token counts.

Hermes Agent's memory is its ``memory`` tool: entries in
``~/.hermes/memories/MEMORY.md`` (and what it learns of the user in
``USER.md``), given to every later session in its system prompt; its past
sessions are also in ``~/.hermes/state.db``, searched by its
``session_search`` tool. ``HERMES_HOME`` moves the whole folder. Its model is
``model`` in ``~/.hermes/config.yaml``: ``provider: custom`` with a
``base_url`` reaches any OpenAI-compatible endpoint.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_recall.agents.adapters.common import Adapter, Outcome, json_number, stream_reader
from pytest_recall.agents.adapters.print_run import ModelAt, PrintRun, StepPlan
from pytest_recall.agents.call_log import CallLog

ADAPTER = Adapter(
    script="recall-hermes",
    cli="hermes",
    bin_variable="RECALL_HERMES_BIN",
    package="PyPI hermes-agent (Python >= 3.11)",
    tested="0.19.0",
    memory="~/.hermes/memories/MEMORY.md and USER.md (its memory tool; or under $HERMES_HOME), in every session",
    home_copy=".hermes/config.yaml,.hermes/.env,.hermes/auth.json",
    sandbox_bind="the root of Hermes Agent's virtual environment",
)
# Hermes Agent's memory as the report counts it: its memory tool writes (what it holds goes into every later
# session's system prompt, with no call), session_search reads its past sessions.
MEMORY_READS = ("session_search",)
MEMORY_WRITES = ("memory",)
# The top-level ``model:`` block of config.yaml and, inside it, its ``base_url``.
_MODEL_BLOCK = re.compile(r"^model:[ \t]*\n((?:[ \t]+.*\n?|[ \t]*\n)*)", re.MULTILINE)
_BASE_URL = re.compile(r"^[ \t]+base_url:[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)


def hermes_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HERMES_HOME") or Path(env.get("HOME", "~"), ".hermes")).expanduser()


def model_base_url(env: Mapping[str, str]) -> str | None:
    """The ``base_url`` of ``model`` in config.yaml, written as a plain block; else None (the CLI reports).

    Only the block form that ``hermes model`` writes is read: the package does
    not depend on a YAML parser, and a URL it does not find is left to the CLI.
    """
    try:
        text = (hermes_home(env) / "config.yaml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    block = _MODEL_BLOCK.search(text)
    found = _BASE_URL.search(block.group(1)) if block else None
    return found.group(1) if found else None


def command(cli: str, extra: Sequence[str], prompt: str, usage_file: Path) -> list[str]:
    # One argument, so a prompt that starts with "-" is never read as a flag.
    return [cli, *extra, "--usage-file", str(usage_file), f"--oneshot={prompt}"]


@contextmanager
def oneshot_step(cli: str, extra: Sequence[str], prompt: str, env: Mapping[str, str]) -> Iterator[StepPlan]:
    """The usage report in a folder of the step's own, read with the answer and removed after; then the
    session's memory calls, from Hermes Agent's own record of it, into the step's memory log."""
    with tempfile.TemporaryDirectory(prefix="recall-hermes-") as folder:
        usage_file = Path(folder) / "usage.json"
        yield command(cli, extra, prompt, usage_file), None, lambda stdout: read_usage(stdout, usage_file)
        session = session_of(usage_file)
    if session is not None:
        log = CallLog.from_environment("hermes", reads=MEMORY_READS, writes=MEMORY_WRITES)
        for call in memory_calls(hermes_home(env) / "state.db", session):
            log.call(call.tool, call.arguments, call.result, latency_ms=call.latency_ms, is_error=call.failed)


def session_of(usage_file: Path) -> str | None:
    """The session id the usage report names, if it names one."""
    try:
        usage = json.loads(usage_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    session = usage.get("session_id") if isinstance(usage, dict) else None
    return session if isinstance(session, str) and session else None


@dataclass(frozen=True)
class ToolCall:
    """One call of a memory tool in a Hermes session, as its ``state.db`` keeps it."""

    tool: str
    arguments: str
    result: str
    failed: bool
    latency_ms: float  # from the model's asking (its message's time) to the tool's answer (the result's)


def memory_calls(database: Path, session: str) -> list[ToolCall]:
    """Each call of a memory tool in ``session``, from Hermes Agent's ``state.db`` opened read-only; none when
    it cannot be read (the counts are evidence beside the score, never a reason to fail the step)."""
    try:
        with closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True, timeout=5)) as db:
            rows = db.execute(
                "SELECT role, content, tool_calls, tool_call_id, tool_name, timestamp FROM messages "
                "WHERE session_id = ? ORDER BY id",
                (session,),
            ).fetchall()
    except sqlite3.Error:
        return []
    asked: dict[str, tuple[str, float]] = {}  # call id -> (arguments, when the model asked)
    for role, _content, tool_calls, _call_id, _name, when in rows:
        if role == "assistant" and tool_calls:
            for call in _json_list(tool_calls):
                function = call.get("function")
                arguments = function.get("arguments") if isinstance(function, dict) else None
                asked[str(call.get("id"))] = (str(arguments or ""), _seconds(when))
    found = []
    for role, content, _calls, call_id, name, when in rows:
        if role == "tool" and name in (*MEMORY_READS, *MEMORY_WRITES):
            arguments, asked_at = asked.get(str(call_id), ("", _seconds(when)))
            result = str(content or "")
            latency_ms = max(0.0, (_seconds(when) - asked_at) * 1000)
            found.append(ToolCall(str(name), arguments, result, _failed(result), round(latency_ms, 3)))
    return found


def _seconds(value: object) -> float:
    """A message's time as Hermes Agent keeps it (seconds since the epoch), or 0 when it is no finite number."""
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def _json_list(text: str) -> list[dict[str, Any]]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return []
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _failed(result: str) -> bool:
    """Whether a memory tool's JSON answer says it did not succeed (an add over the limit, say)."""
    try:
        answer = json.loads(result)
    except (ValueError, RecursionError):
        return False
    return isinstance(answer, dict) and answer.get("success") is False


@stream_reader
def read_usage(stdout: str, usage_file: Path) -> Outcome:
    """The answer on stdout, judged by the usage report: a run that failed there printed an error, not an answer."""
    try:
        usage = json.loads(usage_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        usage = None
    if not isinstance(usage, dict):
        return Outcome(stdout, ok=False, failure="hermes wrote no usage report; its run did not finish")
    answer = stdout.rstrip("\n")
    if usage.get("failed") or not usage.get("completed"):
        said = answer.strip().splitlines()[-1] if answer.strip() else "no answer"
        return Outcome(answer, ok=False, failure=f"hermes: the run failed: {said}")
    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    return Outcome(
        answer,
        ok=True,
        tokens_in=None if tokens_in is None else int(json_number(tokens_in)),
        tokens_out=None if tokens_out is None else int(json_number(tokens_out)),
    )


ROW = PrintRun(
    ADAPTER,
    None,
    step=oneshot_step,
    model=ModelAt("model.base_url in config.yaml", lambda _extra, env: model_base_url(env)),
)
main = ROW.main
