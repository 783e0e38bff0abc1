"""``recall-cline [EXTRA ARGS...] PROMPT``: the Cline CLI's one-shot run, answer and usage read from its NDJSON.

``cline --json`` runs one turn and exits, printing one event a
line and last a ``run_result`` with the answer (``text``), why the run
ended (``finishReason``) and its ``usage``. Its tools are approved by default
(``--auto-approve`` defaults to true). Not ``--yolo``: that mode does not end
a turn on the model's answer, only on its ``submit_and_exit`` tool, and asks
again forever when the model answers in text.

The prompt goes on stdin: as an argument, one without white space is refused
("unquoted prompt") or, when it names a subcommand (``history``), runs that
instead. ``--json`` still wants an argument (despite its error message, piped
stdin alone is refused), so it gets a blank one, which passes the quoting
check; Cline joins the piped text after it and trims the whole, so the model
gets the prompt without the white space at its ends. A prompt that starts
with ``/team`` is rewritten into a request for a team of agents either way.

Outside yolo mode the CLI starts a background "hub" daemon for later runs,
which would outlive the step: ``CLINE_SESSION_BACKEND_MODE=local`` keeps the
session in the CLI's own process. The provider (an OpenAI-compatible base URL
and key) is what ``cline auth`` wrote to ``providers.json`` in its data
folder; no account is needed. Cline's memory is its rules: every Markdown
file in the global rules folder ``~/Documents/Cline/Rules`` (shared with
Cline's editor extensions) is loaded into every session's system prompt.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_recall.agents.adapters.common import (
    MCP_CONFIG_VAR,
    Adapter,
    Outcome,
    chatter,
    json_events,
    json_number,
    mcp_config,
    stream_reader,
)
from pytest_recall.agents.adapters.print_run import ModelAt, PrintRun, Reader, StepPlan

ADAPTER = Adapter(
    script="recall-cline",
    cli="cline",
    bin_variable="RECALL_CLINE_BIN",
    package="npm cline",
    tested="3.0.65",
    memory="~/Documents/Cline/Rules/*.md, its global rules, loaded into every session",
    home_copy=".cline/data/settings/providers.json",
    sandbox_bind="the npm prefix that holds node_modules/cline (the native binary is in @cline/cli-linux-*)",
    mcp_refusal="",  # it passes the run's MCP servers on, in a settings file of the step's own
)
UNATTENDED = ["--json"]
# Where Cline reads its MCP servers from instead of <data folder>/settings/cline_mcp_settings.json.
MCP_SETTINGS_VAR = "CLINE_MCP_SETTINGS_PATH"
# The session in the CLI's own process: no hub daemon left running after the step.
LOCAL_ENV = {"CLINE_SESSION_BACKEND_MODE": "local"}


# The argument --json requires; the prompt itself comes on stdin, after it.
BLANK_PROMPT = " "


@stream_reader
def read_events(stdout: str) -> Outcome:
    """The ``run_result`` event holds the answer and the usage; a run without one did not finish."""
    result: dict[str, object] = {}
    errors: list[str] = []
    for event in json_events(stdout):
        kind = event.get("type")
        if kind == "run_result":
            result = event
        elif kind == "error":
            errors.append(str(event.get("message") or event))
        chatter(json.dumps(event))
    usage = result.get("aggregateUsage") or result.get("usage") or {}
    usage = usage if isinstance(usage, dict) else {}
    reason = result.get("finishReason")
    ok = reason == "completed" and not errors
    if not result:
        failure = "cline: no run_result event"
    else:
        failure = f"cline: {errors[-1] if errors else f'the run ended: {reason}'}"
    return Outcome(
        str(result.get("text") or ""),
        ok=ok,
        # Cline says 0 for a model it has no prices for: unknown, not free.
        cost_usd=json_number(usage.get("totalCost")) or None,
        tokens_in=int(json_number(usage.get("inputTokens"))),
        tokens_out=int(json_number(usage.get("outputTokens"))),
        failure="" if ok else failure,
    )


# The AI SDK Cline is built on prints a warning with its stack trace on stderr at every request (a deprecated
# provider option of its own making): a user reading a failed step's transcript wants what went wrong.
_SDK_WARNING = re.compile(r"^\w*Warning: AI SDK Warning")
_STACK_FRAME = re.compile(r"^\s+at \S")


def quiet_stderr(stderr: str) -> str:
    """Cline's stderr for the transcript: each AI SDK warning once, with how often it came, without its stack
    trace; every other line as it was."""
    kept: list[str] = []
    counts: dict[str, int] = {}
    in_warning = False
    for line in stderr.splitlines():
        if _SDK_WARNING.match(line):
            in_warning = True
            if line not in counts:
                kept.append(line)
            counts[line] = counts.get(line, 0) + 1
        elif not (in_warning and (_STACK_FRAME.match(line) or not line.strip())):
            in_warning = False
            kept.append(line)
    return "\n".join(
        f"{line} (x{counts[line]}, stack traces left out)" if counts.get(line, 0) > 1 else line for line in kept
    )


def model_base_url(env: Mapping[str, str]) -> str | None:
    """The ``baseUrl`` of the provider Cline last used, from its ``providers.json``, if it names one."""
    cline_dir = env.get("CLINE_DIR") or os.path.join(env.get("HOME", "~"), ".cline")
    data_dir = env.get("CLINE_DATA_DIR") or os.path.join(cline_dir, "data")
    try:
        document = json.loads(Path(data_dir, "settings", "providers.json").read_text(encoding="utf-8"))
        url = document["providers"][document["lastUsedProvider"]]["settings"]["baseUrl"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return url if isinstance(url, str) else None


def cline_servers(servers: Mapping[str, Any]) -> dict[str, Any]:
    """The run's MCP servers in the shape of Cline's ``cline_mcp_settings.json``: each one a ``transport``."""
    shaped: dict[str, Any] = {}
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise SystemExit(f"recall-cline: MCP server {name!r} is not an object in {MCP_CONFIG_VAR}")
        if "url" in entry:
            kind = "sse" if entry.get("type") == "sse" else "streamableHttp"
            kept: tuple[str, ...] = ("url", "headers")
        else:
            kind, kept = "stdio", ("command", "args", "env", "cwd")
        shaped[name] = {"transport": {"type": kind, **{key: entry[key] for key in kept if key in entry}}}
    return {"mcpServers": shaped}


# The most of a tap's log read for the servers that listed their tools: it is written where the agent may write.
TAP_LOG_READ_BYTES = 8 * 1024 * 1024


def tapped_servers(servers: Mapping[str, Any]) -> dict[str, Path]:
    """Each server the harness runs behind its recording tap (``recall-mcp-tap --log FILE``), and that log."""
    found: dict[str, Path] = {}
    for name, entry in servers.items():
        args = entry.get("args") if isinstance(entry, dict) else None
        if isinstance(args, list) and "--log" in args[:-1]:
            found[name] = Path(str(args[args.index("--log") + 1]))
    return found


def servers_that_listed_tools(log: Path) -> set[str]:
    """The servers whose ``tools/list`` answer the tap saw; a line it did not write as it writes is passed over."""
    try:
        with log.open("rb") as handle:
            data = handle.read(TAP_LOG_READ_BYTES)
    except OSError:
        return set()
    listed: set[str] = set()
    for line in data.splitlines():
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict) and event.get("event") == "tools" and isinstance(event.get("server"), str):
            listed.add(event["server"])
    return listed


def read_checking_servers(servers: Mapping[str, Any]) -> Reader:
    """``read_events``, failing a run in which a tapped server never listed its tools: Cline says nothing of a
    server it cannot start and goes on without it, so its own memory would be scored as the server's."""
    logs = tapped_servers(servers)

    def read(stdout: str) -> Outcome:
        outcome = read_events(stdout)
        silent = sorted(name for name, log in logs.items() if name not in servers_that_listed_tools(log))
        if not outcome.ok or not silent:
            return outcome
        named = ", ".join(repr(name) for name in silent)
        failure = (
            f"cline: MCP server {named} listed no tools (it did not start or answer, and Cline goes on without "
            "it); check the --recall-mcp configuration"
        )
        return Outcome(outcome.answer, ok=False, failure=failure)

    return read


@contextmanager
def print_step(cli: str, extra: Sequence[str], prompt: str, env: dict[str, str]) -> Iterator[StepPlan]:
    """The prompt on stdin after ``-- " "``; the run's MCP servers, if it has any, in a settings file of the
    step's own that ``CLINE_MCP_SETTINGS_PATH`` names, in place of the user's (as Claude Code's strict config)."""
    command = [cli, *UNATTENDED, *extra, "--", BLANK_PROMPT]
    found = mcp_config(env)
    if found is None:
        yield command, prompt, read_events
        return
    with tempfile.TemporaryDirectory(prefix="recall-cline-") as folder:
        settings = Path(folder) / "cline_mcp_settings.json"
        settings.write_text(json.dumps(cline_servers(found[1])), encoding="utf-8")
        env[MCP_SETTINGS_VAR] = str(settings)
        yield command, prompt, read_checking_servers(found[1])


ROW = PrintRun(
    ADAPTER,
    None,
    step=print_step,
    env_over=LOCAL_ENV,
    model=ModelAt("providers.json's baseUrl", lambda _extra, env: model_base_url(env)),
    stderr_filter=quiet_stderr,
)
main = ROW.main
