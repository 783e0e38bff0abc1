"""A fake model server on loopback that real agent CLIs talk to, so their wiring is tested for free.

It speaks three wire formats, each streamed (SSE) and not, with usage figures:

- Anthropic Messages, ``POST /v1/messages`` (Claude Code), with ``tool_use`` blocks;
- OpenAI Responses, ``POST /v1/responses`` (Codex), with ``function_call`` items;
- OpenAI Chat Completions, ``POST /v1/chat/completions`` (llm, aider), with a usage chunk.

What it says is decided in :mod:`pytest_recall.testing.fake_brain`. Every
request, with the reply it got, is logged as one JSON line, so a test can hold
each verdict against what the model actually answered. Standard library only:
``pytest-recall fake-model`` must run wherever the plugin does.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pytest_recall.testing.fake_brain import MODES, Mode, Reply, Request, decide

__all__ = ["MODES", "FakeModelServer", "Mode"]
Json = dict[str, Any]
MODEL_NAME = "fake"


def _text_of(content: Any) -> str:
    """Every text inside a message's content, whatever its shape, except tool-call arguments."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(part) for part in content)
    if isinstance(content, dict):
        if content.get("type") in ("tool_use", "function_call", "custom_tool_call"):
            return ""
        parts = [content[k] for k in ("text", "output", "content") if k in content]
        return "\n".join(_text_of(part) for part in parts)
    return ""


def read_anthropic(body: Json) -> Request:
    messages: list[Json] = body.get("messages") or []
    after_tool = any(
        isinstance(block, dict) and block.get("type") == "tool_result"
        for message in messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
    )
    prompt = _latest_user_text(messages, lambda m: m.get("role") == "user", "tool_result")
    context = "\n".join([_text_of(body.get("system")), *(_text_of(m.get("content")) for m in messages)])
    tools = frozenset(str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict))
    return Request("anthropic", context, prompt, after_tool, tools)


def read_responses(body: Json) -> Request:
    raw = body.get("input") or []
    items: list[Json] = [{"role": "user", "content": raw}] if isinstance(raw, str) else raw
    after_tool = any(str(item.get("type", "")).endswith("_output") for item in items)
    prompt = _latest_user_text(items, lambda m: m.get("role") == "user" and m.get("type", "message") == "message", "")
    context = "\n".join([_text_of(body.get("instructions")), *(_text_of(item) for item in items)])
    tools = frozenset(str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict) and t.get("name"))
    return Request("responses", context, prompt, after_tool, tools)


def read_chat(body: Json) -> Request:
    messages: list[Json] = body.get("messages") or []
    after_tool = any(m.get("role") == "tool" for m in messages)
    prompt = _latest_user_text(messages, lambda m: m.get("role") == "user", "")
    context = "\n".join(_text_of(m.get("content")) for m in messages)
    return Request("chat", context, prompt, after_tool, frozenset())


def _latest_user_text(messages: list[Json], is_user: Any, skip_block: str) -> str:
    """The newest user message that holds text (a tool result alone is not a prompt)."""
    for message in reversed(messages):
        if not is_user(message):
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = [b for b in content if not (isinstance(b, dict) and b.get("type") == skip_block)]
        text = _text_of(content)
        if text.strip():
            return text
    return ""


def _tokens(text: str) -> int:
    """A rough count, about four characters a token, never zero: usage must be visible."""
    return max(1, len(text) // 4)


def anthropic_events(reply: Reply, model: str, tokens_in: int) -> Iterator[tuple[str, Json]]:
    message_id = f"msg_{uuid.uuid4().hex[:24]}"
    usage_in = {"input_tokens": tokens_in, "output_tokens": 1, "cache_creation_input_tokens": 0}
    usage_in["cache_read_input_tokens"] = 0
    start = {"id": message_id, "type": "message", "role": "assistant", "model": model, "content": []}
    yield "message_start", {"type": "message_start", "message": {**start, "stop_reason": None, "usage": usage_in}}
    if reply.tool:
        block: Json = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": reply.tool, "input": {}}
        delta: Json = {"type": "input_json_delta", "partial_json": reply.tool_input}
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": reply.text}
    yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    stop = "tool_use" if reply.tool else "end_turn"
    out = {"output_tokens": _tokens(reply.text + reply.tool_input)}
    yield (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": out},
    )
    yield "message_stop", {"type": "message_stop"}


def anthropic_message(reply: Reply, model: str, tokens_in: int) -> Json:
    if reply.tool:
        content: list[Json] = [
            {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": reply.tool}
            | {"input": json.loads(reply.tool_input)}
        ]
    else:
        content = [{"type": "text", "text": reply.text}]
    usage = {"input_tokens": tokens_in, "output_tokens": _tokens(reply.text + reply.tool_input)}
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.tool else "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def responses_events(reply: Reply, model: str, tokens_in: int) -> Iterator[tuple[str, Json]]:
    response_id = f"resp_{uuid.uuid4().hex[:24]}"
    yield "response.created", {"type": "response.created", "response": {"id": response_id, "model": model}}
    item_id = f"item_{uuid.uuid4().hex[:16]}"
    if reply.tool:
        item: Json = {"type": "function_call", "id": item_id, "call_id": f"call_{uuid.uuid4().hex[:16]}"}
        item |= {"name": reply.tool, "arguments": reply.tool_input, "status": "completed"}
    else:
        item = {"type": "message", "id": item_id, "role": "assistant", "status": "completed"}
        item["content"] = [{"type": "output_text", "text": reply.text, "annotations": []}]
        yield (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "content": [], "status": "in_progress"},
            },
        )
        yield (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": reply.text,
            },
        )
    yield "response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}
    tokens_out = _tokens(reply.text + reply.tool_input)
    usage = {"input_tokens": tokens_in, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": tokens_out}
    usage |= {"output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": tokens_in + tokens_out}
    done = {"id": response_id, "model": model, "status": "completed", "output": [item], "usage": usage}
    yield "response.completed", {"type": "response.completed", "response": done}


def chat_completion(reply: Reply, model: str, tokens_in: int) -> Json:
    tokens_out = _tokens(reply.text)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out},
    }


def chat_chunks(reply: Reply, model: str, tokens_in: int) -> Iterator[tuple[str, Json]]:
    whole = chat_completion(reply, model, tokens_in)
    head = {"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"], "model": model}
    yield "", {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
    yield "", {**head, "choices": [{"index": 0, "delta": {"content": reply.text}, "finish_reason": None}]}
    yield "", {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    yield "", {**head, "choices": [], "usage": whole["usage"]}


READERS = {"/v1/messages": read_anthropic, "/v1/responses": read_responses, "/v1/chat/completions": read_chat}


class FakeModelServer:
    """A threaded HTTP server on 127.0.0.1; ``port=0`` picks a free port. Use as a context manager."""

    def __init__(self, mode: Mode, port: int = 0, log_path: Path | None = None) -> None:
        self.mode = mode
        self.log_path = log_path
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.1)

    def __enter__(self) -> FakeModelServer:
        self._thread = threading.Thread(target=self.serve_forever, name="fake-model", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def log(self, entry: Json) -> None:
        if self.log_path is None:
            return
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self._lock, self.log_path.open("a", encoding="utf-8") as out:
            out.write(line)


def _handler_for(server: FakeModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the JSON log is the record."""

        def do_GET(self) -> None:
            path = self.path.split("?")[0].rstrip("/")
            if path in ("/v1/models", "/models"):
                self._json(200, {"object": "list", "data": [{"id": MODEL_NAME, "object": "model"}], "models": []})
            else:
                self._json(404, {"error": {"type": "not_found", "message": f"no such path: {path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            path = self.path.split("?")[0].rstrip("/")
            if not path.startswith("/v1"):
                path = "/v1" + path
            try:
                body: Json = json.loads(raw or b"{}")
            except ValueError:
                self._json(400, {"error": {"type": "invalid_request_error", "message": "body is not JSON"}})
                return
            if path == "/v1/messages/count_tokens":
                self._json(200, {"input_tokens": _tokens(json.dumps(body))})
                return
            reader = READERS.get(path)
            if reader is None:
                server.log({"path": path, "status": 404, "body": body})
                self._json(404, {"error": {"type": "not_found", "message": f"no such path: {path}"}})
                return
            request = reader(body)
            reply = decide(request, server.mode)
            model = str(body.get("model") or MODEL_NAME)
            tokens_in = _tokens(request.context)
            stream = bool(body.get("stream"))
            server.log(
                {
                    "at": time.time(),
                    "path": path,
                    "api": request.api,
                    "mode": server.mode,
                    "stream": stream,
                    "kind": reply.kind,
                    "prompt": request.prompt,
                    "after_tool": request.after_tool,
                    "tools": sorted(request.tools),
                    "reply": reply.text,
                    "tool": reply.tool,
                    "tool_input": reply.tool_input,
                    "body": body,
                }
            )
            if request.api == "anthropic":
                if stream:
                    self._sse(anthropic_events(reply, model, tokens_in))
                else:
                    self._json(200, anthropic_message(reply, model, tokens_in))
            elif request.api == "responses":
                self._sse(responses_events(reply, model, tokens_in))
            elif stream:
                self._sse(chat_chunks(reply, model, tokens_in), done=True)
            else:
                self._json(200, chat_completion(reply, model, tokens_in))

        def _json(self, status: int, document: Json) -> None:
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _sse(self, events: Iterator[tuple[str, Json]], done: bool = False) -> None:
            chunks = [(f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n" for name, data in events]
            if done:
                chunks.append("data: [DONE]\n\n")
            payload = "".join(chunks).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler
