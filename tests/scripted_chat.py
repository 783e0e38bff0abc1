"""A scripted model behind a real OpenAI-compatible endpoint on 127.0.0.1.

verifiers 0.4 takes a model only as an endpoint (a base URL and the name of an
API-key variable), so the scripted model is a small HTTP server: ``POST
/v1/chat/completions`` answers with the policy's reply, as server-sent events
when the request streams (as chat programs do) and as one JSON completion
otherwise. Every request body is kept, so a test can read what the model was
shown. Standard library only, so it runs in any virtualenv.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The reply to a request: the turn number (how many user messages it holds) and its messages.
Policy = Callable[[int, list[dict[str, Any]]], str]
API_KEY_VAR = "RECALL_SCRIPTED_API_KEY"
MODEL = "scripted"


class ScriptedChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, policy: Policy) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.policy = policy
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def reply(self, body: dict[str, Any]) -> str:
        with self.lock:
            self.requests.append(body)
        messages = [{"role": m.get("role"), "content": _text(m.get("content"))} for m in body.get("messages", [])]
        turn = sum(1 for message in messages if message["role"] == "user")
        return self.policy(turn, messages)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content or () if isinstance(part, dict))


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedChatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the tests read the kept requests
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "tests"}]})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        text = self.server.reply(body)
        number = len(self.server.requests)
        head = {"id": f"scripted-{number}", "created": 0, "model": body.get("model", MODEL)}
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self._send_json(200, {**head, "object": "chat.completion", "choices": [choice], "usage": usage})
            return
        chunks = [
            {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None},
            {"index": 0, "delta": {"content": text}, "finish_reason": None},
            {"index": 0, "delta": {}, "finish_reason": "stop"},
        ]
        events = [{**head, "object": "chat.completion.chunk", "choices": [choice]} for choice in chunks]
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        payload = b"".join(f"data: {json.dumps(event)}\n\n".encode() for event in events) + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_json(self, status: int, document: dict[str, Any]) -> None:
        payload = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@contextmanager
def scripted_chat(policy: Policy) -> Iterator[ScriptedChatServer]:
    """A running scripted server, shut down on exit."""
    server = ScriptedChatServer(policy)
    thread = threading.Thread(target=server.serve_forever, name="scripted-chat", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
