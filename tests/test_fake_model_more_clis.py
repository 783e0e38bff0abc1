"""The fake model as Gemini CLI, Qwen Code, OpenCode, Copilot CLI and pi speak to it, over loopback, no CLI needed.

Gemini CLI speaks Google's Generative Language API; Qwen Code, OpenCode,
Copilot CLI and pi speak Chat Completions with tool calls. Each stores a note with its own
shell tool in the file the CLI loads into every session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_fake_model import logged, post, sse

from pytest_recall.testing import FakeModelServer, fake_brain

SEED = Path(__file__).resolve().parent.parent / "cases" / "session-memory-recall" / "case_01"
TEACH = (SEED / "step1.txt").read_text(encoding="utf-8")
ASK = (SEED / "step2.txt").read_text(encoding="utf-8")
NOTE = "recall-note closing_balance = 27436.42"
GEMINI_PATH = "/v1beta/models/gemini-test:"
GEMINI_TOOLS = [{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "write_file"}]}]
SESSION_CONTEXT = {"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}
# How pi 0.73's system prompt begins: its tools are OpenCode's too.
PI_SYSTEM = "You are an expert coding assistant operating inside pi, a coding agent harness."
GEMINI_SYSTEM = {"parts": [{"text": "- **Global Personal Memory** (`/home/u/.gemini/GEMINI.md`): yours"}]}


def gemini_turn(*contents: dict[str, Any]) -> dict[str, Any]:
    return {"contents": list(contents), "systemInstruction": GEMINI_SYSTEM, "tools": GEMINI_TOOLS}


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def test_gemini_memory_mode_appends_the_note_to_the_global_gemini_md_its_prompt_names(tmp_path):
    log_path = tmp_path / "log.jsonl"
    with FakeModelServer("memory", log_path=log_path) as server:
        _, raw = post(server, GEMINI_PATH + "generateContent", gemini_turn(user(SESSION_CONTEXT, {"text": TEACH})))

    response = json.loads(raw)
    call = response["candidates"][0]["content"]["parts"][0]["functionCall"]
    assert call["name"] == "run_shell_command"
    assert call["args"]["command"].endswith(">> /home/u/.gemini/GEMINI.md") and NOTE in call["args"]["command"]
    assert "$(" not in call["args"]["command"], "Gemini CLI blocks command substitution"
    usage = response["usageMetadata"]
    assert usage["promptTokenCount"] > 0 and usage["candidatesTokenCount"] > 0
    assert [(entry["kind"], entry["api"]) for entry in logged(log_path)] == [("learn", "gemini")]


def test_gemini_after_the_function_response_it_says_what_it_stored():
    call = {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {}}}]}
    result = user({"functionResponse": {"name": "run_shell_command", "response": {"output": ""}}})
    with FakeModelServer("memory") as server:
        _, raw = post(server, GEMINI_PATH + "generateContent", gemini_turn(user({"text": TEACH}), call, result))
    assert json.loads(raw)["candidates"][0]["content"]["parts"] == [{"text": f"Noted: the answer is 27436.42.\n{NOTE}"}]


@pytest.mark.parametrize("alt", ["sse", "json array"])
def test_gemini_streams_as_server_sent_events_or_one_json_array_with_usage_last(alt):
    body = gemini_turn(user(SESSION_CONTEXT, {"text": ASK}))
    body["systemInstruction"] = {"parts": [{"text": f"Memory:\n{NOTE}"}]}
    query = "?alt=sse" if alt == "sse" else ""
    with FakeModelServer("memory") as server:
        content_type, payload = post(server, GEMINI_PATH + "streamGenerateContent" + query, body)

    chunks = sse(payload) if alt == "sse" else json.loads(payload)
    assert content_type == ("text/event-stream" if alt == "sse" else "application/json")
    text = "".join(part.get("text", "") for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"])
    assert text == "27436.42"
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"]["candidatesTokenCount"] > 0


def test_gemini_later_session_without_the_note_is_unknown_and_side_requests_follow_their_schema(tmp_path):
    log_path = tmp_path / "log.jsonl"
    # Gemini CLI's router asks for JSON in the older schema dialect, types in capitals.
    schema = {
        "type": "OBJECT",
        "properties": {"reasoning": {"type": "STRING"}, "score": {"type": "INTEGER"}},
        "required": ["reasoning", "score"],
    }
    router = {
        "contents": [user({"text": ASK})],
        "generationConfig": {"responseMimeType": "application/json", "responseSchema": schema},
    }
    with FakeModelServer("memory", log_path=log_path) as server:
        _, routed = post(server, GEMINI_PATH + "generateContent", router)
        _, asked = post(server, GEMINI_PATH + "generateContent", gemini_turn(user(SESSION_CONTEXT, {"text": ASK})))
        _, counted = post(server, GEMINI_PATH + "countTokens", {"contents": [user({"text": ASK})]})

    assert json.loads(json.loads(routed)["candidates"][0]["content"]["parts"][0]["text"]) == {
        "reasoning": "OK",
        "score": 1,
    }
    assert json.loads(asked)["candidates"][0]["content"]["parts"] == [{"text": "UNKNOWN"}]
    assert json.loads(counted)["totalTokens"] > 0
    assert [entry["kind"] for entry in logged(log_path)] == ["side", "recall"]


@pytest.mark.parametrize(
    ("tools", "system", "memory_file"),
    [
        (["run_shell_command", "write_file"], "You are a CLI.", '"$HOME/.qwen"/QWEN.md'),
        (["bash", "read", "write"], "You are a CLI.", '"${XDG_CONFIG_HOME:-$HOME/.config}/opencode"/AGENTS.md'),
        (
            ["bash", "read", "write", "kilo_local_recall"],
            "You are a CLI.",
            '"${XDG_CONFIG_HOME:-$HOME/.config}/kilo"/AGENTS.md',
        ),
        (["bash", "view", "create"], "You are a CLI.", '"${COPILOT_HOME:-$HOME/.copilot}"/copilot-instructions.md'),
        (["bash", "read", "edit", "write"], PI_SYSTEM, '"${PI_CODING_AGENT_DIR:-$HOME/.pi/agent}"/AGENTS.md'),
    ],
    ids=["qwen", "opencode", "kilo", "copilot", "pi"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_chat_completions_with_a_shell_tool_call_it_to_store_the_note(tools, system, memory_file, stream):
    body = {
        "stream": stream,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": TEACH}],
        "tools": [{"type": "function", "function": {"name": tool}} for tool in tools],
    }
    with FakeModelServer("memory") as server:
        _, payload = post(server, "/v1/chat/completions", body)

    if stream:
        chunks = sse(payload)
        calls = [call for c in chunks if c["choices"] for call in c["choices"][0]["delta"].get("tool_calls", [])]
        finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1]
    else:
        choice = json.loads(payload)["choices"][0]
        calls, finish = choice["message"]["tool_calls"], choice["finish_reason"]
    assert finish == "tool_calls"
    (call,) = calls
    assert call["function"]["name"] == tools[0] and call["type"] == "function" and call["id"]
    command = json.loads(call["function"]["arguments"])["command"]
    assert command.endswith(f">> {memory_file}") and NOTE in command


def test_chat_completions_read_a_tool_result_as_the_end_of_the_memory_write():
    messages = [
        {"role": "user", "content": TEACH},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c", "content": "(no output)"},
    ]
    body = {"messages": messages, "tools": [{"type": "function", "function": {"name": "bash"}}]}
    with FakeModelServer("memory") as server:
        _, payload = post(server, "/v1/chat/completions", body)
    assert json.loads(payload)["choices"][0]["message"]["content"] == f"Noted: the answer is 27436.42.\n{NOTE}"


def test_opencode_title_request_quoting_a_question_is_a_side_request_not_a_recall(tmp_path):
    log_path = tmp_path / "log.jsonl"
    body = {
        "messages": [
            {"role": "system", "content": "You are a title generator. You output ONLY a thread title."},
            {"role": "user", "content": "Generate a title for this conversation:"},
            {"role": "user", "content": ASK},
        ]
    }
    with FakeModelServer("plain", log_path=log_path) as server:
        _, payload = post(server, "/v1/chat/completions", body)
    assert json.loads(payload)["choices"][0]["message"]["content"] == "OK"
    assert [entry["kind"] for entry in logged(log_path)] == ["side"]


@pytest.mark.parametrize(("mode", "stored"), [("memory", True), ("plain", False)])
def test_an_agent_with_a_memory_tool_of_its_own_gets_the_note_through_it_not_the_shell(mode, stored):
    """Hermes Agent offers ``memory`` beside its ``terminal``: the note goes in as a memory entry, never a file."""
    body = {
        "messages": [{"role": "user", "content": TEACH}],
        "tools": [{"type": "function", "function": {"name": tool}} for tool in ("terminal", "memory")],
    }
    with FakeModelServer(mode) as server:
        _, payload = post(server, "/v1/chat/completions", body)

    message = json.loads(payload)["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    if stored:
        (call,) = calls
        assert call["function"]["name"] == "memory"
        assert json.loads(call["function"]["arguments"]) == {"action": "add", "target": "memory", "content": NOTE}
    else:
        assert calls == [] and "27436.42" in message["content"]


# How OpenClaw 2026.9 talks: its workspace and memory plugin named in the system prompt, most tools behind
# tool_call, and a user message of its own after the prompt.
OPENCLAW_TOOLS = [{"type": "function", "function": {"name": tool}} for tool in ("exec", "write", "tool_call")]
OPENCLAW_INTERNAL = {"role": "user", "content": "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nnone\n<<<END>>>"}


def openclaw_turn(prompt: str, memory_slot: bool, *more: dict[str, Any]) -> dict[str, Any]:
    search = "- memory_search (memory-core): Mandatory recall step\n" if memory_slot else ""
    system = f"Tools:\n{search}## Workspace\nWorking directory: /w/.openclaw/workspace\n"
    messages = [{"role": "system", "content": system}, {"role": "user", "content": f"[Mon 12:28 UTC] {prompt}"}]
    return {"messages": [*messages, OPENCLAW_INTERNAL, *more], "tools": OPENCLAW_TOOLS}


def test_openclaw_keeps_the_note_under_memory_in_its_workspace_which_only_its_search_finds():
    with FakeModelServer("memory") as server:
        _, taught = post(server, "/v1/chat/completions", openclaw_turn(TEACH, memory_slot=True))
        _, asked = post(server, "/v1/chat/completions", openclaw_turn(ASK, memory_slot=True))
        search = json.loads(asked)["choices"][0]["message"]["tool_calls"][0]
        found = [
            {"role": "assistant", "content": None, "tool_calls": [{**search, "id": "s"}]},
            {
                "role": "tool",
                "tool_call_id": "s",
                "content": json.dumps({"text": json.dumps({"snippet": f"{NOTE}\n\n"})}),
            },
        ]
        _, answered = post(server, "/v1/chat/completions", openclaw_turn(ASK, True, *found))
        _, without_slot = post(server, "/v1/chat/completions", openclaw_turn(ASK, memory_slot=False))

    (store,) = json.loads(taught)["choices"][0]["message"]["tool_calls"]
    command = json.loads(store["function"]["arguments"])["command"]
    assert store["function"]["name"] == "exec" and command.endswith(">> /w/.openclaw/workspace/memory/recall.md")
    assert search["function"]["name"] == "tool_call"
    assert json.loads(search["function"]["arguments"])["id"] == "memory_search"
    assert json.loads(answered)["choices"][0]["message"]["content"] == "27436.42"
    assert json.loads(without_slot)["choices"][0]["message"]["content"] == "UNKNOWN"


def searched(call: dict[str, Any], result: str, call_id: str) -> list[dict[str, Any]]:
    """One memory_search call of the model's and OpenClaw's result for it, as the next request carries them."""
    return [
        {"role": "assistant", "content": None, "tool_calls": [{**call, "id": call_id}]},
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"text": result})},
    ]


def test_openclaw_search_that_misses_a_note_still_being_indexed_is_tried_again_and_then_given_up():
    """memory-core's first search in a session does not wait for the index to take the last session's note."""
    empty = json.dumps({"results": []})
    with FakeModelServer("memory") as server:
        _, asked = post(server, "/v1/chat/completions", openclaw_turn(ASK, memory_slot=True))
        call = json.loads(asked)["choices"][0]["message"]["tool_calls"][0]
        missed = searched(call, empty, "s1")
        _, again = post(server, "/v1/chat/completions", openclaw_turn(ASK, True, *missed))
        found = [*missed, *searched(call, json.dumps({"snippet": f"{NOTE}\n"}), "s2")]
        _, answered = post(server, "/v1/chat/completions", openclaw_turn(ASK, True, *found))
        attempts = range(fake_brain.MEMORY_SEARCH_ATTEMPTS)
        never = [message for attempt in attempts for message in searched(call, empty, f"s{attempt}")]
        _, gave_up = post(server, "/v1/chat/completions", openclaw_turn(ASK, True, *never))

    (retried,) = json.loads(again)["choices"][0]["message"]["tool_calls"]
    assert retried["function"] == call["function"]
    assert json.loads(answered)["choices"][0]["message"]["content"] == "27436.42"
    assert json.loads(gave_up)["choices"][0]["message"]["content"] == "UNKNOWN"


def test_letta_code_keeps_the_note_as_a_memory_block_of_its_own_under_system():
    """Letta Code's ``memory`` tool takes a command: ``create`` makes a block that every later prompt holds."""
    tools = ("Bash", "Write", "SendAgentMessage", "memory")
    body = {
        "messages": [{"role": "user", "content": TEACH}],
        "tools": [{"type": "function", "function": {"name": tool}} for tool in tools],
    }
    with FakeModelServer("memory") as server:
        _, payload = post(server, "/v1/chat/completions", body)

    (call,) = json.loads(payload)["choices"][0]["message"]["tool_calls"]
    arguments = json.loads(call["function"]["arguments"])
    assert call["function"]["name"] == "memory" and arguments["command"] == "create"
    assert arguments["file_path"].startswith("system/") and arguments["file_text"] == NOTE
