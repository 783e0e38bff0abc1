"""One request as the fake model reads it, and one reply: the plain values every part of the model shares.

Kept apart from the decisions, so the ledger-and-audit brain, the coder and
the wire formats each import them without importing one another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

Mode = Literal["plain", "memory", "native", "lenient", "gullible", "fickle"]
# "lenient", "gullible" and "fickle" are plain for agents; as a judge (recall-judge) "lenient" accepts any answer that
# does not decline, "gullible" any answer that holds the gold's text or claims to be correct, and "fickle" is strict
# but turns a seeded coin per asking (fake_judge.fickle).
MODES: tuple[Mode, ...] = ("plain", "memory", "native", "lenient", "gullible", "fickle")
Api = Literal["anthropic", "responses", "chat", "gemini"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model made in the current turn, and what came back (empty while none has)."""

    name: str  # as the model named it: ``mcp__<server>__<tool>`` for an MCP tool of either CLI
    arguments: str  # JSON text
    result: str


@dataclass(frozen=True, slots=True)
class Request:
    """One request reduced to what the model reads.

    ``context`` is every text the CLI sent (system, earlier turns, tool
    results), but never the arguments of earlier tool calls, which would
    otherwise echo a note that was never stored. ``prompt`` is the newest
    user text; ``after_tool`` says a tool's result came back in this turn
    (since the assistant's last reply). ``tool_results`` are the texts of
    every tool result so far, oldest first: how far a session's plan has
    come. ``side_schema`` is the JSON schema of a structured reply the CLI
    asked for itself (Codex's thread title), never a person's turn.
    ``calls`` are the tool calls made since the assistant's last reply, with
    their results: how far this turn's plan has come.
    """

    api: Api
    context: str
    prompt: str
    after_tool: bool
    tools: frozenset[str]
    tool_results: tuple[str, ...] = ()
    side_schema: dict[str, Any] | None = None
    calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class Reply:
    """Text to say, or one tool call to make (then ``text`` is empty)."""

    text: str
    tool: str | None = None
    tool_input: str = ""  # the tool's arguments, as a JSON object in text
    # What the request was, for the log: "learn" (a step that teaches), "stored" (the answer after the
    # memory write), "recall" (a later step's question), "ready" (a preflight), "side" (anything else).
    kind: str = "side"


def shell_call(tools: frozenset[str], command: str) -> Reply | None:
    """A call of whichever shell tool the CLI offers, in that tool's own argument shape."""
    if "Bash" in tools:
        return Reply("", "Bash", json.dumps({"command": command, "description": "Save a note to memory"}))
    if "exec_command" in tools:
        return Reply("", "exec_command", json.dumps({"cmd": command}))
    if "shell_command" in tools:
        return Reply("", "shell_command", json.dumps({"command": command}))
    if "shell" in tools:
        return Reply("", "shell", json.dumps({"command": ["bash", "-lc", command]}))
    if "run_shell_command" in tools:  # Gemini CLI, Qwen Code
        return Reply("", "run_shell_command", json.dumps({"command": command, "description": "Save a note to memory"}))
    if "bash" in tools:  # OpenCode
        return Reply("", "bash", json.dumps({"command": command, "description": "Save a note to memory"}))
    if "run_commands" in tools:  # Cline
        return Reply("", "run_commands", json.dumps({"commands": [command]}))
    if "exec" in tools:  # OpenClaw
        return Reply("", "exec", json.dumps({"command": command, "title": "Save a note to memory"}))
    return None
