"""How the fake model remembers through an MCP memory server, when the CLI offers one's tools.

In ``memory`` mode, a request that lists a tool that writes (``create_entities``
of the reference knowledge-graph server, ``write_note`` of basic-memory) and a
tool that searches (``search_nodes``, ``search_notes``, ...) makes the model use
the server instead of the CLI's own memory files:

- a step that teaches stores its note with the write tool, one entity or note
  named by what it is about, then says what it learnt;
- a later question is searched for with words from the question, and answered
  only from what the search tools returned in this turn, else ``UNKNOWN``.

So the server's own storage and retrieval decide the score. Claude Code may
offer MCP tools deferred, by name only, behind its ``ToolSearch`` tool: the
model first loads the one it needs (``select:<name>``), as a real model must.
A ``plain`` model never comes here. Decisions are pure, like the rest of the
model: the request's own tool calls say how far the turn's plan has come.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pytest_recall.testing.exchange import Mode, Reply, Request, ToolCall

# Tools that store, and how the note goes into each; the first one offered is used.
WRITE_TOOLS: dict[str, Callable[[str, str], dict[str, Any]]] = {
    "create_entities": lambda subject, note: {
        "entities": [{"name": subject, "entityType": "recall note", "observations": [note]}]
    },
    "write_note": lambda subject, note: {"title": subject, "content": note, "directory": "recall"},
}
# Tools that find, and how a query goes into each; the first one offered is used.
SEARCH_TOOLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "search_nodes": lambda query: {"query": query},
    "search_notes": lambda query: {"query": query},
    "open_nodes": lambda query: {"names": [query]},
    "read_note": lambda query: {"identifier": query},
    "read_graph": lambda query: {},
}
# Tools that open what a search found, when the search names notes without their text (basic-memory).
READ_TOOLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "read_note": lambda found: {"identifier": found},
    "open_nodes": lambda found: {"names": [found]},
}
TOOL_SEARCH = "ToolSearch"
# How a search result names a note it found without its text.
_PERMALINK = re.compile(r"permalink: ([\w./-]+)")
# An MCP tool as Claude Code and Codex name it to the model; Cline leaves out the ``mcp__``.
_MCP_TOOL = re.compile(r"\bmcp__[A-Za-z0-9_.-]+?__[A-Za-z0-9_-]+")


def short_name(tool: str) -> str:
    """``create_entities`` of ``mcp__memory__create_entities`` (Claude Code, Codex) or ``memory__create_entities``
    (Cline): a CLI's own tools have no double underscore in their names."""
    return tool.rpartition("__")[2] if "__" in tool.strip("_") else tool


def subject_of(key: str) -> str:
    """What a note is named by in the server: the memory key in words (``closing balance``)."""
    return re.sub(r"[\s_:]+", " ", key).strip()


def offered(request: Request) -> tuple[dict[str, str], set[str]]:
    """``({short name: tool}, callable tools)``: the MCP tools the CLI offers, loaded or deferred."""
    named = {name for name in request.tools if short_name(name) != name}
    deferred = set(_MCP_TOOL.findall(request.context)) if TOOL_SEARCH in request.tools else set()
    tools = {short_name(name): name for name in sorted(deferred | named)}
    return tools, named


def pick(tools: dict[str, str], table: dict[str, Any]) -> str | None:
    return next((tools[name] for name in table if name in tools), None)


def mcp_reply(
    request: Request,
    mode: Mode,
    lesson: tuple[str, str, str] | None,
    question: tuple[str, Callable[[str], str], Callable[[str], bool]] | None,
) -> Reply | None:
    """The reply when MCP memory tools decide it, else None.

    ``lesson`` is ``(memory key, note, spoken answer)`` for a step that teaches;
    ``question`` is ``(memory key, answer from text, whether text holds a
    note)`` for a later question.
    """
    if mode != "memory" or (lesson is None and question is None):
        return None
    tools, callable_now = offered(request)
    write, search = pick(tools, WRITE_TOOLS), pick(tools, SEARCH_TOOLS)
    if write is None or search is None:
        return None
    if lesson is not None:
        key, note, spoken = lesson
        if _answered(request.calls, write):
            return Reply(spoken, kind="stored")
        arguments = WRITE_TOOLS[short_name(write)](subject_of(key), note)
        return _call(write, arguments, callable_now, request.calls, kind="learn")
    assert question is not None
    key, answer_from, holds_note = question
    searched = [call for call in request.calls if call.name in tools.values() and short_name(call.name) in SEARCH_TOOLS]
    found = "\n".join(call.result for call in searched)
    if not any(call.result for call in searched):
        arguments = SEARCH_TOOLS[short_name(search)](subject_of(key))
        return _call(search, arguments, callable_now, request.calls, kind="search")
    hit = _PERMALINK.search(found)
    read = pick(tools, READ_TOOLS)
    if not holds_note(found) and hit and read and not _answered(request.calls, read):
        return _call(read, READ_TOOLS[short_name(read)](hit[1]), callable_now, request.calls, kind="search")
    return Reply(answer_from(found), kind="recall")


def _answered(calls: tuple[ToolCall, ...], tool: str) -> bool:
    return any(call.name == tool and call.result for call in calls)


def _call(
    tool: str, arguments: dict[str, Any], callable_now: set[str], calls: tuple[ToolCall, ...], kind: str
) -> Reply:
    """Call ``tool``, or first load it through ``ToolSearch`` when it is only offered by name."""
    loaded = any(call.name == TOOL_SEARCH and tool in call.arguments and call.result for call in calls)
    if tool not in callable_now and not loaded:
        return Reply("", TOOL_SEARCH, json.dumps({"query": f"select:{tool}"}), kind="load")
    return Reply("", tool, json.dumps(arguments), kind=kind)
