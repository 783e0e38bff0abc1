"""``recall-codex [EXTRA ARGS...] PROMPT``: ``codex exec`` unattended, answer and tokens read from its JSON events.

``codex exec`` exits 1 outside a trusted git repository unless told
``--skip-git-repo-check``, and its default read-only sandbox blocks the memory
write to ``~/.codex/AGENTS.md``. Its own sandbox cannot nest inside bwrap, so
the adapter turns it off; run under ``--recall-sandbox=bwrap`` for isolation.

``recall-codex --live [EXTRA ARGS...]`` starts the interactive TUI instead,
for ``--recall-session=continue`` (the ``codex`` live preset), with approvals
and the sandbox off as above. ``--no-daemon`` keeps it from installing and
starting a shared app-server in HOME that outlives the session, and
``--no-alt-screen`` keeps the conversation in the terminal's scrollback, where
the harness reads answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_recall.agents.adapters.common import (
    NOT_FOUND,
    Adapter,
    MalformedOutput,
    Outcome,
    chatter,
    exec_cli,
    find_cli,
    finish,
    live_args,
    mcp_config,
    split_args,
    stream_reader,
)

ADAPTER = Adapter(
    script="recall-codex",
    cli="codex",
    bin_variable="RECALL_CODEX_BIN",
    package="npm @openai/codex",
    tested="0.169.0",
    memory="~/.codex/AGENTS.md (or $CODEX_HOME/AGENTS.md)",
    home_copy=".codex/auth.json,.codex/config.toml",
    sandbox_bind="the npm prefix that holds node_modules/@openai (the native binary is in codex-linux-*)",
    mcp_refusal="",  # it passes the run's MCP servers on
    driven="print mode; live through its TUI (recall-codex --live, --recall-live-preset=codex)",
)
UNATTENDED = ["exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
LIVE = ["--no-daemon", "--no-alt-screen", "--dangerously-bypass-approvals-and-sandbox"]
# Codex never gives up on a model it cannot reach ("Reconnecting... waiting for network"), so the
# step would run into the harness's timeout; after this many such events in a row it is a failure.
MAX_RECONNECTS = 3
RECONNECTING = "Reconnecting..."
# What Codex says on stderr when a required MCP server did not start.
MCP_START_FAILED = "required MCP servers failed to initialize"


def command(cli: str, extra: Sequence[str], prompt: str, mcp: Sequence[str] = ()) -> list[str]:
    return [cli, *UNATTENDED, *mcp, *extra, "--", prompt]


def live_command(cli: str, extra: Sequence[str], mcp: Sequence[str] = ()) -> list[str]:
    return [cli, *LIVE, *mcp, *extra]


# How long a configured MCP server may take to start (Codex's own default is 10 s), unless MCP_TIMEOUT
# (milliseconds, as Claude Code reads it) says otherwise.
MCP_START_TIMEOUT_S = 120
# mcpServers keys and the names Codex's mcp_servers tables give them.
_CODEX_KEYS = {
    "command": "command",
    "args": "args",
    "env": "env",
    "cwd": "cwd",
    "url": "url",
    "headers": "http_headers",
}


def mcp_args(env: Mapping[str, str]) -> list[str]:
    """One ``-c mcp_servers.NAME={...}`` per server of the step: the tables config.toml would hold.

    Given on the command line, they leave the case's config.toml as it was
    copied (it is memory under HOME, and may be the user's own). Each server
    is ``required``, so one that fails to start fails the step, saying so,
    instead of leaving the model without its tools.
    """
    config = mcp_config(env)
    if config is None:
        return []
    args = []
    for name, entry in config[1].items():
        table = {codex: entry[key] for key, codex in _CODEX_KEYS.items() if key in entry}
        table |= {"required": True, "startup_timeout_sec": start_timeout_s(env)}
        args += ["-c", f"mcp_servers.{name}={toml_value(table)}"]
    return args


def start_timeout_s(env: Mapping[str, str]) -> float:
    try:
        return max(1.0, float(env["MCP_TIMEOUT"]) / 1000)
    except (KeyError, ValueError):
        return MCP_START_TIMEOUT_S


def toml_value(value: Any) -> str:
    """``value`` as a TOML inline value; a JSON string is a valid TOML basic string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {value!r}")


@stream_reader
def read_events(stdout: str) -> Outcome:
    """The last agent message is the answer; usage adds up over turns; a turn that never completes fails.

    ``error`` events can be transient (a reconnect that then succeeds), so they only explain a failure.
    """
    answer = ""
    tokens_in = tokens_out = 0
    errors: list[str] = []
    completed = failed = False
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except RecursionError:
            raise MalformedOutput("a line of JSON nested too deep to read") from None
        except ValueError:
            chatter(line)
            continue
        kind = event.get("type") if isinstance(event, dict) else None
        item = event.get("item") or {} if isinstance(event, dict) else {}
        if kind == "item.completed" and item.get("type") == "agent_message":
            answer = str(item.get("text") or "")
            continue
        chatter(line)
        if kind == "turn.completed":
            completed = True
            usage = event.get("usage") or {}
            tokens_in += int(usage.get("input_tokens") or 0)
            tokens_out += int(usage.get("output_tokens") or 0)
        elif kind == "turn.failed":
            failed = True
            error = event.get("error") or {}
            errors.append(str(error.get("message") if isinstance(error, dict) else error))
        elif kind == "error":
            errors.append(str(event.get("message")))
    ok = completed and not failed
    failure = "" if ok else (errors[-1] if errors else "codex finished no turn")
    return Outcome(answer, ok=ok, tokens_in=tokens_in, tokens_out=tokens_out, failure=failure)


def run_codex(argv: Sequence[str]) -> tuple[str, int, str]:
    """``(stdout, exit status, why it was stopped)``, read line by line to notice a model that never answers.

    Its stderr passes through as it comes; a line there about required MCP
    servers that failed to start is why the step failed, and says so.
    """
    lines: list[str] = []
    reconnects = 0
    try:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace"
        )
    except OSError as exc:
        print(f"could not start {argv[0]}: {exc}", file=sys.stderr)
        raise SystemExit(NOT_FOUND) from None
    mcp_failures: list[str] = []
    relay = threading.Thread(target=_relay_stderr, args=(process, mcp_failures), daemon=True)
    relay.start()
    with process:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            message = _error_message(line)
            reconnects = reconnects + 1 if message.startswith(RECONNECTING) else 0
            if reconnects >= MAX_RECONNECTS:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                return "".join(lines), 1, f"codex cannot reach its model: {message}"
    relay.join(timeout=10)
    failed_servers = f"codex: {mcp_failures[-1]}" if mcp_failures and process.returncode else ""
    return "".join(lines), process.returncode, failed_servers


def _relay_stderr(process: subprocess.Popen[str], mcp_failures: list[str]) -> None:
    assert process.stderr is not None
    for line in process.stderr:
        sys.stderr.write(line)
        sys.stderr.flush()
        found = line.find(MCP_START_FAILED)
        if found >= 0:
            mcp_failures.append(line[found:].strip())


def _error_message(line: str) -> str:
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):  # the line is read again by read_events, which says what is wrong
        return ""
    return str(event.get("message") or "") if isinstance(event, dict) and event.get("type") == "error" else ""


def main(argv: Sequence[str] | None = None) -> int:
    live_extra = live_args(argv)
    if live_extra is not None:
        exec_cli(live_command(find_cli(ADAPTER), live_extra, mcp_args(os.environ)), os.environ)
    extra, prompt = split_args(sys.argv[1:] if argv is None else argv)
    stdout, returncode, stopped = run_codex(command(find_cli(ADAPTER), extra, prompt, mcp_args(os.environ)))
    outcome = read_events(stdout)
    if stopped:
        outcome = Outcome(outcome.answer, ok=False, tokens_in=outcome.tokens_in, failure=stopped)
    return finish(outcome, returncode)
