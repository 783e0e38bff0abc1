"""Every stdio MCP server of a step started behind the tap (:mod:`pytest_recall.sessions.mcp_tap`).

The harness writes each step's MCP configuration itself, so it can put the
relay in front of every server it names, for whichever CLI reads the file,
and learn from the relay's log whether the memory was listed, written and
read. The relay runs as the server would have: started by the CLI, with the
server's environment and folder, in the session's cgroup and sandbox. It is
started by this interpreter with ``-I -S`` (no site, no user paths): it needs
only the standard library, so it starts in milliseconds and no environment
variable of the agent's can change what runs as the relay.

A server reached by URL is left as it is and said to be untapped: nothing of
the harness stands between the CLI and an HTTP server, so its calls are
unknown, and a case with one is never reported as leaving its memory unused.
Refusing it would have cost users of hosted memories (reached only by URL)
their scores, evidence judge included, for a figure the tap cannot give them.

Before the step, the harness writes two kinds of line of its own at the head
of the log: a server's ``recall`` key (which tools read and which write),
stripped from the entry the CLI sees, and each untapped server.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_recall.cases import RECALL_KEY, MemoryCall, MemoryCalls, bounded_number
from pytest_recall.sessions import mcp_tap
from pytest_recall.sessions.agent_file import read_agent_file

# The relay's log in the step's harness folder, beside the cost file.
TAP_LOG_FILE = "mcp-tap.jsonl"
# Where an agent whose memory is no tapped server (a library in its own process, recall-provider) logs its memory
# calls itself, one event a line in the relay's shape; the harness reads it after the step as it reads the relay's.
MEMORY_LOG_VAR = "RECALL_MEMORY_LOG"
MEMORY_LOG_FILE = "memory-calls.jsonl"
_RELAY = Path(mcp_tap.__file__).resolve()


def behind_tap(servers: Mapping[str, Any], log: Path) -> dict[str, Any]:
    """``servers`` (filled in) with each stdio server's command run through the relay, logging to ``log``, and
    pytest-recall's own ``recall`` key stripped (CLIs reject keys they do not know); what the tap needs of that
    key, and which servers it cannot see, go at the head of the log."""
    tapped: dict[str, Any] = {}
    notes: list[dict[str, Any]] = []
    for name, given in servers.items():
        if not isinstance(given, Mapping):
            tapped[name] = given
            continue
        entry = {key: value for key, value in given.items() if key != RECALL_KEY}
        kinds = given.get(RECALL_KEY)
        if isinstance(kinds, Mapping) and kinds:
            notes.append({"event": "kinds", "server": name, **kinds})
        if not isinstance(entry.get("command"), str):
            notes.append({"event": "untapped", "server": name})
            tapped[name] = entry
            continue
        relay = [*("-I", "-S", str(_RELAY)), "--log", str(log), "--server", name, "--", entry["command"]]
        tapped[name] = {**entry, "command": sys.executable, "args": [*relay, *entry.get("args", [])]}
    if notes:
        with log.open("a", encoding="utf-8") as handle:
            handle.writelines(json.dumps(note) + "\n" for note in notes)
    return tapped


# The most of the tap's log read after a step: a call keeps at most the tap's TEXT_KEPT characters of text.
MAX_TAP_LOG_BYTES = 8 * 1024 * 1024
# A call's figures (bytes, milliseconds): no call moves or lasts more than this (a petabyte, 31 years in ms).
MAX_TAP_FIGURE = 1e15
_FIGURES = ("argument_bytes", "text_bytes", "latency_ms")
# Words in a tool's name that say what it does, when its annotations do not (server-memory, basic-memory, mem0, ...).
_READ_WORDS = frozenset(
    {
        "search",
        "read",
        "get",
        "find",
        "open",
        "list",
        "query",
        "recall",
        "retrieve",
        "fetch",
        "view",
        "context",
        "recent",
    }
)
_WRITE_WORDS = frozenset(
    {"create", "add", "write", "store", "save", "update", "delete", "remember", "insert", "edit", "append", "upsert"}
    | {"move", "canvas", "observe"}
)


def call_kind(tool: str, annotations: Mapping[str, Any] | None) -> str:
    """A tool call's kind: "read" or "write" by the tool's MCP annotations, else by the words of its name.

    ``readOnlyHint`` true is a read; ``readOnlyHint`` false or ``destructiveHint``
    true is a write (per the MCP specification's tool annotations). Most memory
    servers annotate nothing, so ``search_nodes`` and ``create_entities`` are
    told apart by their names, and a name that says neither is "other".
    """
    hints = annotations or {}
    if hints.get("readOnlyHint") is True:
        return "read"
    if hints.get("readOnlyHint") is False or hints.get("destructiveHint") is True:
        return "write"
    words = set(re.split(r"[^a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", tool).lower()))
    if words & _WRITE_WORDS:
        return "write"
    if words & _READ_WORDS:
        return "read"
    return "other"


def parse_tap_log(data: bytes) -> MemoryCalls:
    """The calls in a tap log's bytes; lines that are not the tap's events, or not as the tap writes them
    (a figure that is no bounded number, nesting past any the tap writes, a list where an object goes), are
    passed over and counted in the result's ``fault``: never an error, the log being the tap's."""
    annotations: dict[tuple[str, str], Mapping[str, Any]] = {}
    named: dict[tuple[str, str], str] = {}  # (server, tool) -> kind, from the configuration's recall key
    offered: list[str] = []
    untapped: list[str] = []
    calls: list[MemoryCall] = []
    unread = 0
    for line in data.splitlines():
        event = _tap_event(line)
        if event is None:
            unread += 1 if line.strip() else 0
            continue
        server = event["server"]
        if event.get("event") == "tools" and isinstance(event.get("tools"), list):
            for tool in event["tools"]:
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    hints = tool.get("annotations")
                    annotations[server, tool["name"]] = hints if isinstance(hints, dict) else {}
                    offered.append(f"{server}/{tool['name']}")
        elif event.get("event") == "kinds":
            for key, kind in (("reads", "read"), ("writes", "write")):
                tools = event.get(key)
                for tool in tools if isinstance(tools, list) else []:
                    named[server, str(tool)] = kind
        elif event.get("event") == "untapped":
            untapped.append(server)
        elif event.get("event") == "call" and isinstance(event.get("tool"), str):
            kind = named.get((server, event["tool"])) or call_kind(
                event["tool"], annotations.get((server, event["tool"]))
            )
            call = _call(server, event, kind)
            if call is None:
                unread += 1
            else:
                calls.append(call)
    fault = f"{unread} line(s) of the MCP tap's log are not the tap's events and were passed over" if unread else None
    return MemoryCalls(
        offered=tuple(dict.fromkeys(offered)),
        calls=tuple(calls),
        untapped=tuple(dict.fromkeys(untapped)),
        fault=fault,
    )


def _tap_event(line: bytes) -> dict[str, Any] | None:
    """One line as the tap writes it: a JSON object naming its server (a line nested past the parser is none)."""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) and isinstance(event.get("server"), str) else None


def _call(server: str, event: Mapping[str, Any], kind: str) -> MemoryCall | None:
    """The call a ``call`` line records; None when one of its figures is no number the relay could have written."""
    figures = {key: bounded_number(event.get(key, 0), MAX_TAP_FIGURE) for key in _FIGURES}
    text = event.get("text", "")
    if any(value is None for value in figures.values()) or not isinstance(text, str):
        return None
    return MemoryCall(
        server=server,
        tool=event["tool"],
        kind=kind,
        argument_bytes=int(figures["argument_bytes"] or 0),
        text_bytes=int(figures["text_bytes"] or 0),
        text=text,
        is_error=event.get("is_error") is True,
        latency_ms=figures["latency_ms"] or 0.0,
        # The host's monotonic clock when the call was made; a missing or impossible one places it in no turn.
        at=bounded_number(event.get("at"), MAX_TAP_FIGURE),
    )


def read_memory_calls(harness: Path, *, tapped: bool) -> MemoryCalls | None:
    """The step's memory calls: the relay's log in ``harness`` when the step had tapped servers, and the agent's
    own log (``$RECALL_MEMORY_LOG``) when it wrote one; None when there is neither.

    Both are read as files the agent could have replaced. One that cannot be
    read whole leaves the step's memory use unknown and says why; it is never
    the agent's failure, the counts being only evidence beside the score.
    """
    own, own_fault = read_agent_file(
        harness / MEMORY_LOG_FILE, f"{MEMORY_LOG_VAR} ({MEMORY_LOG_FILE})", MAX_TAP_LOG_BYTES
    )
    if not tapped and not own and own_fault is None:
        return None
    relayed, fault = (
        read_agent_file(harness / TAP_LOG_FILE, "the MCP tap's log", MAX_TAP_LOG_BYTES) if tapped else (b"", None)
    )
    fault = fault or own_fault
    if fault is not None:
        return MemoryCalls(fault=fault)
    return parse_tap_log(relayed + b"\n" + own)


def calls_by_turn(calls: MemoryCalls, sent_at: Sequence[float | None]) -> list[MemoryCalls]:
    """A live session's calls, split among its turns: each call to the last turn sent before it was made (one
    made before the first turn, as the CLI starts, to the first). The tools offered, the servers untapped and a
    log's fault hold for the whole session, so every turn carries them."""
    times = [at for at in sent_at if at is not None]
    split: list[list[MemoryCall]] = [[] for _ in sent_at]
    for call in calls.calls:
        turn = 0 if call.at is None else max(0, bisect.bisect_right(times, call.at) - 1)
        split[min(turn, len(split) - 1)].append(call)
    return [dataclasses.replace(calls, calls=tuple(mine)) for mine in split]
