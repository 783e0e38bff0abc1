"""A scripted ACP agent: the notebook (``recall-notebook``) behind the Agent Client Protocol on stdio.

It keeps its notes in ``$RECALL_SCOPE_DIR`` as the notebook does, so through
``recall-acp`` the seed suite scores 1.000; with ``--plain`` its notebook is
in memory, kept for the process's turns and forgotten at exit: 0.000 in fresh
sessions, 1.000 only when every turn comes to one process (``--live``). Each turn it asks permission to
write the notebook (a ``session/request_permission``), reports that as a tool
call, answers in two chunks of one message, and reports usage and a cost, as
real agents do. A refused permission means an in-memory notebook for the turn.

``--fail=HOW`` makes ``session/prompt`` go wrong the ways real agents do:
``exit`` (dies), ``garbage`` (writes a non-JSON line), ``error`` (a JSON-RPC
error), ``hang`` (never answers, with a helper process), ``silent`` (ends the turn with no message),
``refusal`` (stops with ``refusal``). What ``session/new`` brought is written
to stderr, for tests of the MCP servers handed over. ``--usage=JSON``,
``--cost=JSON`` and ``--options=JSON`` put a value of the test's (NaN, a
400-digit integer, a string) where its input tokens, its cost's amount or its
permission options go.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from pytest_recall.agents.notebook import Notebook, notebook_path, respond

Json = dict[str, Any]


def send(message: Json) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def receive() -> Json | None:
    line = sys.stdin.readline()
    return json.loads(line) if line else None


def update(session_id: str, body: Json) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": body}})


OPTIONS = [
    {"optionId": "yes", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]
# --usage=, --cost=, --options=: the values a test plants (parsed as JSON, NaN and Infinity included).
planted: Json = {}


def allowed_to_write(session_id: str, options: Any) -> bool:
    """Ask the client, as an agent asks before an edit; True when it picked an allow option."""
    tool_call = {"toolCallId": "write-1", "title": "write the notebook", "kind": "edit"}
    send(
        {
            "jsonrpc": "2.0",
            "id": "ask-1",
            "method": "session/request_permission",
            "params": {"sessionId": session_id, "toolCall": tool_call, "options": options},
        }
    )
    reply = receive() or {}
    outcome = (reply.get("result") or {}).get("outcome") or {}
    print(f"acp-notebook: permission {json.dumps(outcome)}", file=sys.stderr, flush=True)
    return outcome.get("optionId") in ("yes", "always")


def turn(request: Json, in_ram: Notebook | None, fail: str) -> Json:
    """One ``session/prompt``: its result, after the updates a real agent sends."""
    params = request["params"]
    session_id = params["sessionId"]
    prompt = "".join(block.get("text", "") for block in params["prompt"])
    if fail == "exit":
        raise SystemExit(3)
    if fail == "garbage":
        print("Loading model... done", flush=True)
    if fail == "hang":
        # A helper of its own, as an npm launcher has its native binary: it must not outlive the step.
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        print(f"acp-notebook: hanging, pids {os.getpid()} {helper.pid}", file=sys.stderr, flush=True)
        time.sleep(3600)
    keep = in_ram is None and allowed_to_write(session_id, planted.get("options", OPTIONS))
    update(
        session_id,
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "write-1",
            "title": "write the notebook",
            "kind": "edit",
            "status": "in_progress",
        },
    )
    if in_ram is not None:
        answer = respond(prompt, in_ram)
    else:
        notebook = Notebook(notebook_path() if keep else None)
        try:
            answer = respond(prompt, notebook)
        finally:
            notebook.close()
    update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": "write-1", "status": "completed"})
    if fail != "silent":
        half = len(answer) // 2
        for piece in (answer[:half], answer[half:]):
            update(
                session_id,
                {"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": piece}},
            )
    update(
        session_id,
        {
            "sessionUpdate": "usage_update",
            "used": 120,
            "size": 200000,
            "cost": {"amount": planted.get("cost", 0.0012), "currency": "USD"},
        },
    )
    stop = "refusal" if fail == "refusal" else "end_turn"
    return {
        "stopReason": stop,
        "usage": {"totalTokens": 130, "inputTokens": planted.get("usage", 100), "outputTokens": 30},
    }


def main(argv: list[str]) -> int:
    in_ram = Notebook(None) if "--plain" in argv else None
    fail = next((arg.split("=", 1)[1] for arg in argv if arg.startswith("--fail=")), "")
    for arg in argv:
        name, _, value = arg.partition("=")
        if name in ("--usage", "--cost", "--options"):
            planted[name[2:]] = json.loads(value)
    sessions = 0
    while (request := receive()) is not None:
        method, request_id = request.get("method"), request.get("id")
        if method == "initialize":
            result: Json = {
                "protocolVersion": 1,
                "agentCapabilities": {"mcpCapabilities": {"http": True}},
                "authMethods": [],
            }
        elif method == "session/new":
            print(f"acp-notebook: session/new {json.dumps(request['params'])}", file=sys.stderr, flush=True)
            sessions += 1
            result = {"sessionId": f"sess-{sessions}"}
        elif method == "session/prompt" and fail == "error":
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": "model unreachable"}})
            continue
        elif method == "session/prompt":
            result = turn(request, in_ram, fail)
        else:
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
