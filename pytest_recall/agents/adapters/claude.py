"""``recall-claude [EXTRA ARGS...] PROMPT``: Claude Code in print mode, unattended.

``claude -p`` cannot write memory without a permission flag, and
``--dangerously-skip-permissions`` is refused as root unless ``IS_SANDBOX=1``
is set, so the adapter sets it for root. The JSON output mode carries the
answer and ``total_cost_usd`` apart, so stdout holds the answer alone.

``recall-claude --live [EXTRA ARGS...]`` starts the interactive TUI instead,
for ``--recall-session=continue`` (the ``claude`` live preset). With a fresh
HOME the TUI would stop at first-run screens no one answers: onboarding (whose
connectivity check ignores ``ANTHROPIC_BASE_URL`` and exits 1, "Unable to
connect to Anthropic services"), then "Do you want to use this API key?" for
``ANTHROPIC_API_KEY``, the trust dialog for the working directory and the
bypass-permissions warning, each with the refusing answer selected. So the
launcher records in ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json``)
that onboarding is done, that this key (its last 20 characters, as Claude Code
stores it) is approved, that the current directory is trusted and that bypass
mode was accepted, merged into whatever the file already holds.

That is for the case's own HOME (``--recall-home=case``, the default). Under
the harness with ``--recall-home=user`` the file is the user's real one, and
each session would leave bypass mode accepted, the key approved and one more
temporary folder trusted in it: the launcher refuses, in one line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_recall.agents.adapters import result_message
from pytest_recall.agents.adapters.common import (
    Adapter,
    Outcome,
    exec_cli,
    find_cli,
    finish,
    json_events,
    live_args,
    mcp_config,
    merge_json_file,
    run_cli,
    split_args,
    stream_reader,
)

ADAPTER = Adapter(
    script="recall-claude",
    cli="claude",
    bin_variable="RECALL_CLAUDE_BIN",
    package="npm @anthropic-ai/claude-code",
    tested="2.1.332",
    memory="~/.claude/CLAUDE.md; auto-memory in ~/.claude/projects/<cwd-slug>/memory/",
    home_copy=".claude.json,.claude/.credentials.json",
    sandbox_bind="the npm prefix that holds node_modules/@anthropic-ai (the native binary is in claude-code-linux-*)",
    mcp_refusal="",  # it passes the run's MCP servers on
    driven="print mode; live through its TUI (recall-claude --live, --recall-live-preset=claude)",
)
# Nothing but the model API: no telemetry, no update checks, no error reporting.
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def command(cli: str, extra: Sequence[str], prompt: str, mcp: Sequence[str] = ()) -> list[str]:
    # With MCP servers, the stream's first message says whether each one connected; the result is the last.
    output = ["--output-format", "stream-json", "--verbose"] if mcp else ["--output-format", "json"]
    return [cli, "-p", *output, "--dangerously-skip-permissions", *mcp, *extra, "--", prompt]


def mcp_args(env: Mapping[str, str]) -> list[str]:
    """``--mcp-config FILE --strict-mcp-config`` for the step's servers: those and no others."""
    config = mcp_config(env)
    return [] if config is None else ["--mcp-config", config[0], "--strict-mcp-config"]


# How long a configured MCP server may take to start, unless MCP_TIMEOUT says otherwise.
MCP_START_TIMEOUT_MS = 120_000
# How many trailing characters of an API key Claude Code keeps in customApiKeyResponses.
KEY_SUFFIX_CHARS = 20


def live_command(cli: str, extra: Sequence[str], mcp: Sequence[str] = ()) -> list[str]:
    return [cli, "--dangerously-skip-permissions", *mcp, *extra]


def config_path(env: Mapping[str, str]) -> Path:
    """Where Claude Code keeps its global state: ``.claude.json`` in ``$CLAUDE_CONFIG_DIR`` or HOME."""
    return Path(env.get("CLAUDE_CONFIG_DIR") or Path.home()) / ".claude.json"


def live_state(config: dict[str, Any], cwd: str, api_key: str | None) -> dict[str, Any]:
    """``config`` with every first-run screen answered for ``cwd`` and ``api_key``; nothing else changed."""
    projects = dict(config.get("projects") or {})
    projects[cwd] = {**(projects.get(cwd) or {}), "hasTrustDialogAccepted": True}
    seeded = {**config, "hasCompletedOnboarding": True, "bypassPermissionsModeAccepted": True, "projects": projects}
    if api_key and api_key.strip():
        responses = dict(config.get("customApiKeyResponses") or {})
        approved = list(responses.get("approved") or [])
        suffix = api_key.strip()[-KEY_SUFFIX_CHARS:]
        rejected = [key for key in responses.get("rejected") or [] if key != suffix]
        responses |= {"approved": approved if suffix in approved else [*approved, suffix], "rejected": rejected}
        seeded["customApiKeyResponses"] = responses
    return seeded


def live(extra: Sequence[str]) -> int:
    """Seed the first-run state, then become the TUI on the harness's terminal."""
    env = environment()
    cwd = os.getcwd()
    refusal = users_own_config(env)
    if refusal is not None:
        print(refusal, file=sys.stderr, flush=True)
        return USAGE_ERROR
    merge_json_file(config_path(env), lambda config: live_state(config, cwd, env.get("ANTHROPIC_API_KEY")))
    exec_cli(live_command(find_cli(ADAPTER), extra, mcp_args(env)), env)


USAGE_ERROR = 2


def users_own_config(env: Mapping[str, str]) -> str | None:
    """Why seeding would write into the user's real settings (a harness session with ``--recall-home=user``)."""
    scope = env.get("RECALL_SCOPE_DIR")
    if not scope or env.get("CLAUDE_CONFIG_DIR"):
        return None  # not under the harness, or the user chose where the settings live
    case_home = Path(scope).parent / "home"
    if Path(env.get("HOME") or Path.home()).resolve() == case_home.resolve():
        return None
    return (
        f"recall-claude --live: {config_path(env)} is the user's own (--recall-home=user): seeding it would accept "
        "bypass mode, approve the API key and trust a temporary folder in your real settings; run with "
        "--recall-home=case (the default) or set CLAUDE_CONFIG_DIR to a copy"
    )


def environment() -> dict[str, str]:
    env = {**QUIET_ENV, **os.environ}
    if mcp_config(env) is not None:
        # A server that imports a large Python tree can take longer than Claude Code's default to start.
        env.setdefault("MCP_TIMEOUT", str(MCP_START_TIMEOUT_MS))
    if os.geteuid() == 0:
        # Claude Code accepts exactly "1" here; other truthy spellings still refuse the flag as root.
        env["IS_SANDBOX"] = "1"
    return env


@stream_reader
def read_result(stdout: str) -> Outcome:
    """The ``result`` message of ``--output-format json``; anything before it is chatter.

    With MCP servers (``stream-json``), the ``init`` message lists each one's
    status: one that did not connect fails the step, saying which.
    """
    events = list(json_events(stdout))
    outcome = result_message.result_of(events, "claude")
    unavailable = [
        f"{server.get('name')} ({server.get('status')})"
        for event in events
        if event.get("type") == "system" and event.get("subtype") == "init"
        for server in event.get("mcp_servers") or []
        if isinstance(server, dict) and server.get("status") != "connected"
    ]
    if unavailable:
        # The model would go on without the server's tools, and a memory score of 0 would blame the memory.
        failure = f"claude could not use MCP server(s) {', '.join(unavailable)}; check the --recall-mcp configuration"
        return Outcome(outcome.answer, ok=False, failure=failure)
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    live_extra = live_args(argv)
    if live_extra is not None:
        return live(live_extra)
    extra, prompt = split_args(sys.argv[1:] if argv is None else argv)
    env = environment()
    done = run_cli(command(find_cli(ADAPTER), extra, prompt, mcp_args(env)), env)
    return finish(read_result(done.stdout), done.returncode)
