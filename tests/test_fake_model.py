"""The fake model server alone: each API, streamed and not, over real HTTP on loopback.

The adapter tests drive it with the real CLIs; these check its wire formats
and its honesty (it answers a later step from notes in the context only)
without any CLI installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.suites import locomo, longmemeval
from pytest_recall.testing import FakeModelServer
from pytest_recall.testing.exchange import Request
from pytest_recall.testing.fake_brain import decide

SEED = Path(__file__).resolve().parent.parent / "cases" / "session-memory-recall" / "case_01"
TEACH = (SEED / "step1.txt").read_text(encoding="utf-8")
ASK = (SEED / "step2.txt").read_text(encoding="utf-8")
NOTE = "recall-note closing_balance = 27436.42"


def post(server: FakeModelServer, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        server.base_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(response.headers["Content-Type"]), bytes(response.read())


def sse(payload: bytes) -> list[dict[str, Any]]:
    """The JSON data of every server-sent event, ``[DONE]`` left out."""
    lines = payload.decode().splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ") and line != "data: [DONE]"]


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "requests.jsonl"


def logged(log_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]


def test_anthropic_memory_mode_asks_bash_to_append_the_note_to_claude_md(log_path):
    body = {"model": "m", "messages": [{"role": "user", "content": TEACH}], "tools": [{"name": "Bash"}]}
    with FakeModelServer("memory", log_path=log_path) as server:
        _, raw = post(server, "/v1/messages", body)
        _, streamed = post(server, "/v1/messages", {**body, "stream": True})

    message = json.loads(raw)
    assert message["stop_reason"] == "tool_use"
    call = message["content"][0]
    assert call["name"] == "Bash"
    assert NOTE in call["input"]["command"] and "~/.claude/CLAUDE.md" in call["input"]["command"]
    assert message["usage"]["input_tokens"] > 0 and message["usage"]["output_tokens"] > 0
    events = sse(streamed)
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    partial = next(e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta")
    assert json.loads(partial) == call["input"]
    assert [entry["kind"] for entry in logged(log_path)] == ["learn", "learn"]


def test_anthropic_after_the_tool_result_it_says_what_it_learnt():
    messages = [
        {"role": "user", "content": TEACH},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": ""}]},
    ]
    with FakeModelServer("memory") as server:
        _, raw = post(server, "/v1/messages", {"messages": messages, "tools": [{"name": "Bash"}]})
    assert json.loads(raw)["content"] == [{"type": "text", "text": f"Noted: the answer is 27436.42.\n{NOTE}"}]


def user_text(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


@pytest.mark.parametrize("mode", ["memory", "plain"])
def test_a_live_session_asks_its_next_turn_after_an_earlier_turn_used_a_tool(mode):
    """One process, one conversation: the tool result of turn 1 does not make turn 2 look like a tool's end."""
    call = {"type": "function_call", "call_id": "c", "name": "exec_command", "arguments": "{}"}
    spoken = "Noted: the answer is 27436.42."
    earlier = [
        user_text(TEACH),
        call,
        {"type": "function_call_output", "call_id": "c", "output": ""},
        user_text(f"# AGENTS.md instructions\n\n<INSTRUCTIONS>\n{NOTE}\n</INSTRUCTIONS>"),
    ]
    if mode == "plain":
        earlier = [user_text(TEACH)]
    else:
        spoken += f"\n{NOTE}"
    body = {"input": [*earlier, {"type": "message", "role": "assistant", "content": spoken}, user_text(ASK)]}
    with FakeModelServer(mode) as server:
        _, after_tool = post(server, "/v1/responses", {"input": earlier, "tools": [{"name": "exec_command"}]})
        _, asked = post(server, "/v1/responses", body)
    if mode == "memory":
        assert sse(after_tool)[-1]["response"]["output"][0]["content"][0]["text"] == spoken
    answer = sse(asked)[-1]["response"]["output"][0]["content"][0]["text"]
    assert answer == ("27436.42" if mode == "memory" else "UNKNOWN")


def test_a_structured_side_request_gets_json_of_its_schema_and_is_no_turn(log_path):
    """Codex asks for a thread title with a JSON schema and the user's prompt inside: never a recall."""
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    body = {
        "input": [user_text(NOTE), user_text(f"Generate a concise, single-line task title.\n\nUser prompt:\n{ASK}")],
        "text": {"format": {"type": "json_schema", "strict": True, "schema": schema, "name": "codex_output_schema"}},
    }
    with FakeModelServer("memory", log_path=log_path) as server:
        _, payload = post(server, "/v1/responses", body)
    assert json.loads(sse(payload)[-1]["response"]["output"][0]["content"][0]["text"]) == {"title": "OK"}
    assert [entry["kind"] for entry in logged(log_path)] == ["side"]


def test_an_anthropic_structured_side_request_is_no_turn_either(log_path):
    """Claude Code (under its ACP bridge) titles a session by asking for JSON in output_config: never a recall."""
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    body = {
        "messages": [{"role": "user", "content": f"{ASK}\n\nWrite the title in the predominant language"}],
        "tools": [],
        "output_config": {"format": {"type": "json_schema", "schema": schema}},
    }
    with FakeModelServer("memory", log_path=log_path) as server:
        _, raw = post(server, "/v1/messages", body)
    assert json.loads(json.loads(raw)["content"][0]["text"]) == {"title": "OK"}
    assert [entry["kind"] for entry in logged(log_path)] == ["side"]


def test_plain_mode_writes_nothing_and_a_later_step_is_unknown():
    with FakeModelServer("plain") as server:
        _, taught = post(
            server, "/v1/messages", {"messages": [{"role": "user", "content": TEACH}], "tools": [{"name": "Bash"}]}
        )
        _, asked = post(server, "/v1/messages", {"messages": [{"role": "user", "content": ASK}]})
    assert json.loads(taught)["stop_reason"] == "end_turn"
    assert json.loads(asked)["content"][0]["text"] == "UNKNOWN"


@pytest.mark.parametrize(
    ("where", "answer"),
    [("system", "27436.42"), ("earlier turn", "27436.42"), ("nowhere", "UNKNOWN"), ("only the ledger", "UNKNOWN")],
)
def test_a_later_step_is_answered_from_a_note_in_the_context_only(where, answer):
    body: dict[str, Any] = {"messages": [{"role": "user", "content": ASK}]}
    if where == "system":
        body["system"] = [{"type": "text", "text": f"Memory:\n{NOTE}\n"}]
    elif where == "earlier turn":
        body["messages"] = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": NOTE},
            *body["messages"],
        ]
    elif where == "only the ledger":
        body["messages"] = [
            {"role": "user", "content": TEACH},
            {"role": "assistant", "content": "ok"},
            *body["messages"],
        ]
    with FakeModelServer("memory") as server:
        _, raw = post(server, "/v1/messages", body)
    assert json.loads(raw)["content"][0]["text"] == answer


def test_native_mode_appends_to_the_auto_memory_folder_its_system_prompt_names():
    folder = "/home/u/.claude/projects/-tmp-work/memory"
    body = {
        "system": [{"type": "text", "text": f"You have a persistent file-based memory at `{folder}/`."}],
        "messages": [{"role": "user", "content": TEACH}],
        "tools": [{"name": "Bash"}],
    }
    with FakeModelServer("native") as server:
        _, raw = post(server, "/v1/messages", body)
    command = json.loads(raw)["content"][0]["input"]["command"]
    assert f"{folder}/MEMORY.md" in command and NOTE in command


def test_responses_stream_calls_codex_shell_tool_then_answers_with_usage():
    body = {
        "model": "fake",
        "stream": True,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": TEACH}]}],
        "tools": [{"type": "function", "name": "exec_command"}],
    }
    with FakeModelServer("memory") as server:
        content_type, payload = post(server, "/v1/responses", body)
        later = {"model": "fake", "stream": True, "instructions": NOTE, "input": [{"role": "user", "content": ASK}]}
        _, answer = post(server, "/v1/responses", later)

    assert content_type == "text/event-stream"
    events = sse(payload)
    call = next(e["item"] for e in events if e["type"] == "response.output_item.done")
    assert call["type"] == "function_call" and call["name"] == "exec_command"
    assert "AGENTS.md" in json.loads(call["arguments"])["cmd"]
    completed = sse(answer)[-1]
    assert completed["type"] == "response.completed"
    assert completed["response"]["output"][0]["content"][0]["text"] == "27436.42"
    assert completed["response"]["usage"]["input_tokens"] > 0


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_chat_completions_keep_the_note_in_the_reply_and_report_usage(stream):
    body = {"model": "fake", "stream": stream, "messages": [{"role": "user", "content": TEACH}]}
    with FakeModelServer("memory") as server:
        content_type, payload = post(server, "/v1/chat/completions", body)

    if stream:
        assert content_type == "text/event-stream" and payload.endswith(b"data: [DONE]\n\n")
        chunks = sse(payload)
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
        usage = chunks[-1]["usage"]
        assert chunks[-1]["choices"] == []
    else:
        completion = json.loads(payload)
        text, usage = completion["choices"][0]["message"]["content"], completion["usage"]
    assert text == f"Noted: the answer is 27436.42.\n{NOTE}"
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0


def test_the_command_serves_on_the_port_it_prints_and_logs_every_request(tmp_path):
    log = tmp_path / "log.jsonl"
    command = [sys.executable, "-m", "pytest_recall.cli", "fake-model", "--mode", "plain", "--log", str(log)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            url = process.stdout.readline().split()[-1]
            body = {"messages": [{"role": "user", "content": "Reply with the single word READY."}]}
            request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode())
            with urllib.request.urlopen(request, timeout=10) as response:
                assert json.load(response)["choices"][0]["message"]["content"] == "READY"
        finally:
            process.terminate()
    assert url.startswith("http://127.0.0.1:")
    assert [entry["kind"] for entry in logged(log)] == ["ready"]


# --- coding tasks: the CLI's own file tools, decided from the request alone ---

CODING_TEACH = (
    "Project alpha-service (package alpha1a).\n\n"
    'Project rule: every new module in src/alpha1a/ starts with the line "# owner: team-red-fox-1234".\n\n'
    "Task: add a module load_cart to package alpha1a (src/alpha1a/) "
    "with a function load_cart_item() that returns 123.\n"
    "Follow the project's rules. Reply DONE when the files are written.\n"
)
CODING_ASK = CODING_TEACH.replace(
    'Project rule: every new module in src/alpha1a/ starts with the line "# owner: team-red-fox-1234".\n\n', ""
).replace("load_cart", "save_cart")
CLAUDE_TOOLS = frozenset({"Bash", "Read", "Write", "Edit"})


def coding_request(prompt: str, *, notes: str = "", results: tuple[str, ...] = ()) -> Request:
    context = f"Primary working directory: /w/step\n{notes}\n{prompt}\n" + "\n".join(results)
    return Request("anthropic", context, prompt, bool(results), CLAUDE_TOOLS, results)


def test_a_coding_task_stores_the_rule_through_memory_then_writes_with_the_write_tool():
    store = decide(coding_request(CODING_TEACH), "memory")
    assert (store.tool, store.kind) == ("Bash", "learn")
    command = json.loads(store.tool_input)["command"]
    assert command.endswith(">> ~/.claude/CLAUDE.md") and "recall-coding" in command and "team-red-fox-1234" in command

    write = decide(coding_request(CODING_TEACH, results=("(Bash completed with no output)",)), "memory")
    call = json.loads(write.tool_input)
    assert (write.tool, call["file_path"]) == ("Write", "/w/step/src/alpha1a/load_cart.py")
    assert call["content"].startswith("# owner: team-red-fox-1234\n") and "return 123" in call["content"]

    done = decide(coding_request(CODING_TEACH, results=("stored", "File created successfully")), "memory")
    assert (done.tool, done.kind, done.text) == (None, "done", "DONE: wrote src/alpha1a/load_cart.py")


def test_a_later_coding_task_applies_only_the_notes_the_cli_sent_back():
    note = [
        line for line in json.loads(decide(coding_request(CODING_TEACH), "memory").tool_input)["command"].split("'")
    ]
    stored = next(part for part in note if part.startswith("recall-coding "))

    remembered = json.loads(decide(coding_request(CODING_ASK, notes=stored), "memory").tool_input)["content"]
    forgotten = decide(coding_request(CODING_ASK), "plain")

    assert remembered.startswith("# owner: team-red-fox-1234\n")
    assert forgotten.tool == "Write" and "team-red-fox" not in json.loads(forgotten.tool_input)["content"]
    assert decide(coding_request(CODING_TEACH), "plain").tool == "Write", "a plain model stores nothing first"


# -- issue 26, item 9: malformed requests get a 400, and no read is unbounded --------------------


def raw_request(server: FakeModelServer, head: bytes, body: bytes = b"", timeout: float = 10.0) -> bytes:
    """One request on its own connection, as bytes; what came back before the server closed or went quiet."""
    import socket

    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as connection:
        connection.sendall(head + body)
        connection.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


def post_head(length: str) -> bytes:
    return (
        f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()


NESTED = b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
MALFORMED = [
    pytest.param(None, b"[1, 2, 3]", id="a-json-list"),
    pytest.param(None, NESTED, id="nested-100000-deep"),
    pytest.param(None, b'{"messages": 7}', id="messages-not-a-list"),
    pytest.param("abc", b"{}", id="content-length-not-a-number"),
    pytest.param("-1", b"{}", id="content-length-minus-one"),
]


@pytest.mark.parametrize(("length", "body"), MALFORMED)
def test_a_malformed_request_is_answered_400_and_the_server_keeps_serving(length, body):
    with FakeModelServer("memory") as server:
        answer = raw_request(server, post_head(str(len(body)) if length is None else length), body)
        assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
        assert b"invalid_request_error" in answer
        content_type, _ = post(server, "/v1/messages", {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert content_type.startswith("application/json")


def test_a_body_over_the_bound_is_refused_unread():
    from pytest_recall.testing.fake_model import MAX_BODY_BYTES

    with FakeModelServer("memory") as server:
        answer = raw_request(server, post_head(str(MAX_BODY_BYTES + 1)))
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def imported_steps(kind: str) -> tuple[list[str], str, str]:
    """``(ingest prompts, question prompt, a gold word)`` of the first question of a tiny imported file."""
    data = Path(__file__).parent / "data"
    if kind == "longmemeval":
        question = longmemeval.parse_question(0, json.loads((data / "longmemeval_tiny.json").read_text())[0])
        return longmemeval.ingest_prompts(question, 1), longmemeval.question_prompt(question), "Business Administration"
    conversation = locomo.parse_conversation(0, json.loads((data / "locomo_tiny.json").read_text())[0])
    charity = conversation.questions[4]  # What did the charity race raise awareness for? mental health
    return locomo.ingest_prompts(conversation, 1), locomo.question_prompt(conversation, charity), "mental health"


def chat_turns(steps: list[str], server: FakeModelServer) -> list[dict[str, str]]:
    """The conversation llm keeps over the ingest steps (its memory is the conversation)."""
    messages: list[dict[str, str]] = []
    for step in steps:
        messages.append({"role": "user", "content": step})
        _, raw = post(server, "/v1/chat/completions", {"model": "fake", "messages": messages})
        messages.append({"role": "assistant", "content": json.loads(raw)["choices"][0]["message"]["content"]})
    return messages


@pytest.mark.parametrize("kind", ["longmemeval", "locomo"])
@pytest.mark.parametrize("mode", ["memory", "plain"])
def test_an_imported_suites_question_is_answered_in_plain_text_from_the_noted_sessions_alone(kind, mode):
    ingest, question, gold = imported_steps(kind)
    with FakeModelServer(mode) as server:
        messages = chat_turns(ingest, server)
        _, raw = post(
            server,
            "/v1/chat/completions",
            {"model": "fake", "messages": [*messages, {"role": "user", "content": question}]},
        )
    answer = json.loads(raw)["choices"][0]["message"]["content"]
    assert "value" not in answer and "evidence" not in answer
    if mode == "memory":
        assert gold in answer
    else:
        # The sessions were in the conversation, but no note was kept: declining is all it can do.
        assert gold not in answer and "Not mentioned" in answer
