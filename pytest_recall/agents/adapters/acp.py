"""``recall-acp [--permission=POLICY] -- AGENT [ARGS...] PROMPT``: any agent that speaks ACP, one prompt a step.

The Agent Client Protocol is JSON-RPC on the agent's stdio, so one client
covers every agent that speaks it, with no output format to parse per CLI:
``initialize``; ``session/new`` in the step's working folder, with the
step's MCP servers (``--recall-mcp``) handed over in ``mcpServers``; the
prompt as one ``session/prompt``; the agent's message chunks joined are the
answer. Its tool calls go to the step's transcript (stderr), one line each;
its token counts (the prompt response's ``usage``) and dollars (the last
``usage_update`` cost in USD) go to ``$RECALL_COST_FILE``.

Permission requests are answered by ``--permission``: ``allow-once`` (the
default) lets the agent use the tools the model asks for, as the print
adapters do with their CLIs' skip-approval flags, without leaving an
"always allow" rule in the agent's settings that a later step would inherit;
``allow-always`` picks that rule where the agent offers it; ``reject``
refuses every request, to measure an agent that may not use its tools.

The client does not advertise ``fs`` or ``terminal``: the agent reads and
writes with its own tools, as it does when run by itself, so what is
measured is the agent's own memory and the harness's sandbox governs it; a
client that served files would be a second, different file system.

An agent that exits, writes anything but JSON-RPC on stdout, answers with an
error, stops its turn for any reason but ``end_turn``, or ends it with no
message is a failed step with that reason, never an empty answer.

``recall-acp --live -- AGENT [ARGS...]`` is the same client for
``--recall-session=continue``: one session, each turn the terminal brings is
one ``session/prompt`` in it, its answer printed, then ``recall-acp> `` for
the next (``--recall-ready-pattern='recall-acp> $'``). The terminal is then
the answer's channel, so the agent's own stderr goes to a file, shown when
the session fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_recall.agents.adapters.acp_rpc import METHOD_NOT_FOUND, AcpFailure, Json, Peer, Refusal, start_agent
from pytest_recall.agents.adapters.common import LIVE_FLAG, NOT_FOUND, Adapter, Outcome, chatter, finish, mcp_config
from pytest_recall.agents.notebook import turns
from pytest_recall.cases import bounded_number

ADAPTER = Adapter(
    script="recall-acp",
    cli="the command after --",
    bin_variable="",
    package="any agent that speaks the Agent Client Protocol",
    tested=(
        "gemini --acp --skip-trust (Gemini CLI 0.61.0), qwen --acp (Qwen Code 0.24.4), opencode acp (OpenCode 1.18.33),"
        " claude-agent-acp (Claude Code's bridge 0.101.0), codex-acp (Codex's bridge 0.16.0)"
    ),
    memory="the agent's own; the step's MCP servers (--recall-mcp) reach it in session/new",
    home_copy="what the agent itself needs (its print adapter's row; a bridge's settings: docs/agents.md)",
    sandbox_bind="the agent's install folder",
    mcp_refusal="",  # it passes the run's MCP servers on
    driven="ACP: JSON-RPC on the agent's stdio, one session/prompt a step; live: recall-acp --live, one session",
)
PROTOCOL_VERSION = 1
# The most a reported figure (tokens, dollars) may be; more is no session's (the harness bounds it again).
MAX_FIGURE = 1e15
POLICIES = {
    # policy: the option kinds it picks, best first; none offered means the request is cancelled
    "allow-once": ("allow_once", "allow_always"),
    "allow-always": ("allow_always", "allow_once"),
    "reject": ("reject_once", "reject_always"),
}
DEFAULT_POLICY = "allow-once"
# What a live session shows when it is ready for the next turn.
LIVE_PROMPT = "recall-acp> "
# How much of a live agent's own stderr a failed session shows.
LOG_SHOWN_BYTES = 4000
USAGE = f"usage: recall-acp [--live] [--permission={'|'.join(POLICIES)}] -- AGENT [ARGS...] [PROMPT]"


@dataclass
class Turn:
    """What the agent said during one prompt turn of one session."""

    session_id: str = ""
    chunks: list[str] = field(default_factory=list)
    last_message_id: object = None
    cost_usd: float | None = None
    tool_calls: int = 0

    def answer(self) -> str:
        return "".join(self.chunks).strip()


class Client:
    """The client side of the conversation: what recall-acp says when the agent asks or tells."""

    def __init__(self, policy: str) -> None:
        self.policy = policy
        self.turn = Turn()

    def answer(self, method: str, params: Json) -> Json:
        if method == "session/request_permission":
            return self._permission(params)
        # fs/* and terminal/* were not advertised; an agent that asks anyway is told so, and goes on.
        raise Refusal(METHOD_NOT_FOUND, f"recall-acp does not serve {method}")

    def _permission(self, params: Json) -> Json:
        offered = params.get("options", [])
        if not isinstance(offered, list):
            raise AcpFailure(f"the agent asked for permission with options that are no list ({type(offered).__name__})")
        options = [option for option in offered if isinstance(option, dict)]
        title = _tool_title(params.get("toolCall"))
        for kind in POLICIES[self.policy]:
            chosen = next((option for option in options if option.get("kind") == kind), None)
            if chosen is not None:
                _say(f"permission for {title}: {kind} (--permission={self.policy})")
                return {"outcome": {"outcome": "selected", "optionId": chosen.get("optionId")}}
        _say(f"permission for {title}: cancelled, no option fits --permission={self.policy}")
        return {"outcome": {"outcome": "cancelled"}}

    def hear(self, method: str, params: Json) -> None:
        if method != "session/update" or params.get("sessionId") != self.turn.session_id:
            return
        update = params.get("update")
        if isinstance(update, dict):
            self._update(update)

    def _update(self, update: Json) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            content = update.get("content")
            if isinstance(content, dict) and content.get("type") == "text":
                message_id = update.get("messageId")
                if self.turn.chunks and message_id != self.turn.last_message_id:
                    self.turn.chunks.append("\n")
                self.turn.last_message_id = message_id
                self.turn.chunks.append(str(content.get("text") or ""))
        elif kind == "tool_call":
            self.turn.tool_calls += 1
            _say(f"tool call {update.get('toolCallId')}: {_tool_title(update)} ({update.get('status') or 'pending'})")
        elif kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
            _say(f"tool call {update.get('toolCallId')}: {update.get('status')}")
        elif kind == "usage_update":
            cost = update.get("cost")
            if isinstance(cost, dict) and cost.get("currency") == "USD":
                self.turn.cost_usd = _figure(cost.get("amount") or 0, "usage_update cost amount")


def _tool_title(tool_call: object) -> str:
    if not isinstance(tool_call, dict):
        return "a tool"
    title = tool_call.get("title") or tool_call.get("toolCallId") or "a tool"
    return f"{title!s} [{tool_call.get('kind') or 'other'}]"


def _say(line: str) -> None:
    print(f"recall-acp: {line}", file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str]) -> tuple[str, bool, list[str], str | None]:
    """``(policy, live, agent command, prompt)``; the harness puts the prompt last, and gives none when live."""
    args = list(argv)
    if "--" not in args:
        raise SystemExit(USAGE)
    split = args.index("--")
    options, command = args[:split], args[split + 1 :]
    policy, live = DEFAULT_POLICY, False
    for option in options:
        name, _, value = option.partition("=")
        if option == LIVE_FLAG:
            live = True
        elif name != "--permission" or value not in POLICIES:
            raise SystemExit(f"recall-acp: unknown option {option!r}; {USAGE}")
        else:
            policy = value
    if len(command) < (1 if live else 2):
        raise SystemExit(USAGE)
    return (policy, True, command, None) if live else (policy, False, command[:-1], command[-1])


def acp_servers(servers: Mapping[str, Any]) -> list[Json]:
    """The ``mcpServers`` of an MCP configuration file as ACP's ``session/new`` takes them: a list, env as pairs."""
    listed: list[Json] = []
    for name, entry in servers.items():
        if "url" in entry:
            headers = [{"name": key, "value": str(value)} for key, value in (entry.get("headers") or {}).items()]
            kind = "sse" if entry.get("type") == "sse" else "http"
            listed.append({"type": kind, "name": name, "url": entry["url"], "headers": headers})
            continue
        if entry.get("cwd"):
            raise SystemExit(f"recall-acp: MCP server {name!r} sets cwd, which ACP cannot pass; drop it")
        command = shutil.which(entry["command"]) or entry["command"]  # ACP asks for an absolute path
        env = [{"name": key, "value": str(value)} for key, value in (entry.get("env") or {}).items()]
        listed.append({"name": name, "command": command, "args": list(entry.get("args") or []), "env": env})
    return listed


def open_session(peer: Peer, client: Client, servers: list[Json]) -> None:
    """initialize, then session/new in the working folder with the MCP servers; AcpFailure when either fails."""
    hello = peer.call(
        "initialize",
        {
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
            "clientInfo": {"name": "recall-acp", "title": "pytest-recall", "version": "1"},
        },
    )
    if hello.get("protocolVersion") != PROTOCOL_VERSION:
        raise AcpFailure(f"the agent speaks ACP version {hello.get('protocolVersion')}; recall-acp speaks 1")
    session = peer.call("session/new", {"cwd": os.getcwd(), "mcpServers": servers})
    client.turn.session_id = str(session.get("sessionId") or "")
    if not client.turn.session_id:
        raise AcpFailure("the agent answered session/new without a sessionId")


def prompt_turn(peer: Peer, client: Client, prompt: str) -> Outcome:
    """One ``session/prompt`` in the client's session: the answer and its figures, or AcpFailure."""
    turn = client.turn
    done = peer.call("session/prompt", {"sessionId": turn.session_id, "prompt": [{"type": "text", "text": prompt}]})
    stop = done.get("stopReason")
    if stop != "end_turn":
        raise AcpFailure(f"the agent stopped its turn with {stop!r}, not 'end_turn'")
    if not turn.answer():
        raise AcpFailure("the agent ended its turn without a message")
    usage = done.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Outcome(
        turn.answer(),
        ok=True,
        cost_usd=turn.cost_usd,
        tokens_in=_count(usage, "inputTokens"),
        tokens_out=_count(usage, "outputTokens"),
    )


def _count(usage: Json, key: str) -> int | None:
    value = usage.get(key)
    return None if value is None else int(_figure(value, f"usage {key}"))


def _figure(value: object, name: str) -> float:
    """A figure the agent reported: a finite number from 0 up; anything else is the turn's failure, in one line."""
    number = bounded_number(value, MAX_FIGURE)
    if number is None:
        shown = type(value).__name__
        if isinstance(value, float) or (isinstance(value, int) and value < 10**40):
            shown = repr(value)
        elif isinstance(value, int):
            shown = f"a {len(str(value))}-digit integer"
        raise AcpFailure(f"the agent reported {name} as {shown}, which is no figure")
    return number


def _stopped(number: int, frame: object) -> None:
    raise AcpFailure(f"stopped by {signal.Signals(number).name}")


def main(argv: Sequence[str] | None = None) -> int:
    policy, live, command, prompt = parse_args(sys.argv[1:] if argv is None else argv)
    config = mcp_config(os.environ)
    servers = acp_servers(config[1]) if config else []
    # Live, the terminal is the answer's channel: the agent's own stderr goes to a file, shown on failure.
    with tempfile.TemporaryFile() if live else contextlib.nullcontext() as agent_log:
        try:
            process = start_agent(command, stderr=agent_log)
        except OSError as exc:
            print(f"recall-acp: could not start {command[0]}: {exc.strerror}", file=sys.stderr)
            return NOT_FOUND
        client = Client(policy)
        outcome = run_session(Peer(process, client.answer, client.hear), client, servers, prompt)
        if agent_log is not None and outcome is not None:
            agent_log.seek(0)
            chatter(agent_log.read()[-LOG_SHOWN_BYTES:].decode("utf-8", "replace"))
    return 0 if outcome is None else finish(outcome, 0)


def run_session(peer: Peer, client: Client, servers: list[Json], prompt: str | None) -> Outcome | None:
    """The session, closed however it ends: one prompt's outcome, or None after a live session that went well."""
    # A harness that stops the step (its timeout, Ctrl-C) ends the agent's process group through peer.close().
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stopped)
    try:
        open_session(peer, client, servers)
        if prompt is None:
            answer_turns(peer, client)
            return None
        return prompt_turn(peer, client, prompt)
    except AcpFailure as failure:
        return Outcome(client.turn.answer(), ok=False, failure=f"recall-acp: {failure}")
    except RecursionError:
        # A message nested just under the parser's depth, which printing it in a line of the transcript passed.
        return Outcome(client.turn.answer(), ok=False, failure="recall-acp: the agent sent a message nested too deep")
    finally:
        peer.close()


def answer_turns(peer: Peer, client: Client) -> None:
    """Live: each turn the terminal brings is one session/prompt in the one session, its answer shown after it.

    ``LIVE_PROMPT`` marks when the next turn may come (``--recall-ready-pattern``); end of input ends the session.
    """
    print(LIVE_PROMPT, end="", flush=True)
    for text in turns():
        client.turn = Turn(session_id=client.turn.session_id)
        print(prompt_turn(peer, client, text).answer, flush=True)
        print(LIVE_PROMPT, end="", flush=True)
