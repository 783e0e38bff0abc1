"""A fake model server on loopback that real agent CLIs talk to, so their wiring is tested for free.

It speaks four wire formats, each streamed (SSE) and not, with usage figures:

- Anthropic Messages, ``POST /v1/messages`` (Claude Code), with ``tool_use`` blocks;
- OpenAI Responses, ``POST /v1/responses`` (Codex), with ``function_call`` items;
- OpenAI Chat Completions, ``POST /v1/chat/completions`` (llm, aider, OpenCode,
  Qwen Code, Copilot CLI), with ``tool_calls`` and a usage chunk;
- Google Generative Language, ``POST /v1beta/models/<model>:generateContent``
  and ``:streamGenerateContent`` (Gemini CLI), with ``functionCall`` parts.

Beside them, OpenAI's ``POST /v1/embeddings``, deterministic and lexical
(:mod:`pytest_recall.testing.fake_embeddings`), for memories that search by meaning.

What it says is decided in :mod:`pytest_recall.testing.fake_brain`, and how
it is said in :mod:`pytest_recall.testing.wire` and
:mod:`pytest_recall.testing.wire_gemini`. Every
request, with the reply it got, is logged as one JSON line, so a test can hold
each verdict against what the model actually answered. Standard library only:
``pytest-recall fake-model`` must run wherever the plugin does.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pytest_recall.testing.fake_brain import MODES, Mode, Reply, decide
from pytest_recall.testing.fake_embeddings import EmbeddingRequestError, embeddings_response
from pytest_recall.testing.fake_judge import fickle
from pytest_recall.testing.wire import (
    MODEL_NAME,
    READERS,
    Json,
    anthropic_events,
    anthropic_message,
    chat_chunks,
    chat_completion,
    responses_events,
    tokens,
)
from pytest_recall.testing.wire_gemini import count_tokens, gemini_chunks, gemini_response, read_gemini, route

__all__ = ["MODES", "FakeModelServer", "Mode", "RateLimitStretch"]

# What a refused request gets back, as the providers word it (Anthropic's type, OpenAI's words).
RATE_LIMITED_BODY: Json = {
    "error": {"type": "rate_limit_error", "message": "Rate limit reached: 429 Too Many Requests"}
}
# A request body the fake model reads at most; the real APIs refuse far less (a few MiB).
MAX_BODY_BYTES = 32 << 20


class FakeModelServer:
    """A threaded HTTP server on 127.0.0.1; ``port=0`` picks a free port. Use as a context manager."""

    def __init__(
        self, mode: Mode, port: int = 0, log_path: Path | None = None, rate_limit: RateLimitStretch | None = None
    ) -> None:
        self.mode = mode
        self.log_path = log_path
        self.rate_limit = rate_limit
        self._lock = threading.Lock()
        # How many times each judge prompt was asked: the fickle judge's coin (fake_judge.fickle) counts askings.
        self._askings: dict[str, int] = {}
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

    def asking(self, prompt: str) -> int:
        """How many times ``prompt`` was asked before now (0 the first time)."""
        with self._lock:
            count = self._askings.get(prompt, 0)
            self._askings[prompt] = count + 1
            return count

    def log(self, entry: Json) -> None:
        if self.log_path is None:
            return
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self._lock, self.log_path.open("a", encoding="utf-8") as out:
            out.write(line)


class RateLimitStretch:
    """A provider's rate limit: after ``after`` model requests, every request gets HTTP 429 for ``seconds``.

    Each refused request is counted, so a test can hold a harness's backoff
    to how many attempts reached the model while it was limited. The
    Retry-After it names is the stretch's time left, or ``retry_after`` when
    given: a provider whose quota is spent for hours still names its
    per-minute window, and a harness must give up on it in time.
    """

    def __init__(self, after: int, seconds: float, retry_after: float | None = None) -> None:
        self.after = after
        self.seconds = seconds
        self.named_wait = retry_after
        self.requests = 0
        self.refused = 0
        self._ends: float | None = None
        self._lock = threading.Lock()

    def retry_after(self) -> float | None:
        """For the request now arriving: the seconds left of the stretch when it is refused, else None."""
        with self._lock:
            self.requests += 1
            now = time.monotonic()
            if self._ends is None and self.requests > self.after:
                self._ends = now + self.seconds
            if self._ends is None or now >= self._ends:
                return None
            self.refused += 1
            return self._ends - now if self.named_wait is None else self.named_wait


class FakeModelHandler(BaseHTTPRequestHandler):
    """One connection to the fake model; ``server`` is set on the subclass each server makes."""

    server_of_run: FakeModelServer
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
        body = self._body()
        if body is None:
            return
        path = self.path.split("?")[0].rstrip("/")
        if not path.startswith("/v1"):
            path = "/v1" + path
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": tokens(json.dumps(body))})
            return
        if path == "/v1/embeddings":
            self._embeddings(path, body)
            return
        gemini = route(path)
        if gemini is not None and gemini[1] == "countTokens":
            self._json(200, count_tokens(tokens(json.dumps(body))))
            return
        reader = read_gemini if gemini is not None else READERS.get(path)
        if reader is None:
            self.server_of_run.log({"path": path, "status": 404, "body": body})
            self._json(404, {"error": {"type": "not_found", "message": f"no such path: {path}"}})
            return
        try:
            request = reader(body)
        except (AttributeError, TypeError, KeyError, ValueError) as exc:
            self._bad_request(f"not a {path} request: {type(exc).__name__}: {str(exc)[:200]}")
            return
        if self._refused(path):
            return
        reply = decide(request, self.server_of_run.mode)
        if reply.kind == "judge" and self.server_of_run.mode == "fickle":
            asking = self.server_of_run.asking(request.prompt)
            reply = Reply(fickle(reply.text, request.prompt, asking), kind="judge")
        model = gemini[0] if gemini is not None else str(body.get("model") or MODEL_NAME)
        tokens_in = tokens(request.context)
        stream = bool(body.get("stream")) or (gemini is not None and gemini[1] == "streamGenerateContent")
        self.server_of_run.log(
            {
                "at": time.time(),
                "path": path,
                "api": request.api,
                "mode": self.server_of_run.mode,
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
        self._send(request.api, reply, model, tokens_in, stream)

    def _embeddings(self, path: str, body: Json) -> None:
        """Vectors for the texts, logged with their count (not the vectors): a test asks who searched, and when."""
        try:
            answer = embeddings_response(body)
        except EmbeddingRequestError as exc:
            self._bad_request(str(exc))
            return
        if self._refused(path):
            return
        texts = body.get("input")
        self.server_of_run.log(
            {"at": time.time(), "path": path, "kind": "embeddings", "inputs": len(answer["data"]), "input": texts}
        )
        self._json(200, answer)

    def _send(self, api: str, reply: Reply, model: str, tokens_in: int, stream: bool) -> None:
        """The reply in the wire format of the API that asked, streamed when it asked so."""
        if api == "gemini":
            self._gemini(reply, model, tokens_in, stream)
        elif api == "anthropic":
            if stream:
                self._sse(anthropic_events(reply, model, tokens_in))
            else:
                self._json(200, anthropic_message(reply, model, tokens_in))
        elif api == "responses":
            self._sse(responses_events(reply, model, tokens_in))
        elif stream:
            self._sse(chat_chunks(reply, model, tokens_in), done=True)
        else:
            self._json(200, chat_completion(reply, model, tokens_in))

    def _refused(self, path: str) -> bool:
        """Within a rate-limit stretch: answer 429 with its Retry-After, and say so."""
        limit = self.server_of_run.rate_limit
        wait = None if limit is None else limit.retry_after()
        if wait is None:
            return False
        self.server_of_run.log({"at": time.time(), "path": path, "status": 429, "retry_after": wait})
        self._json(429, RATE_LIMITED_BODY, {"Retry-After": str(max(1, math.ceil(wait)))})
        return True

    def _gemini(self, reply: Reply, model: str, tokens_in: int, stream: bool) -> None:
        """One response; or its chunks, as server-sent events when asked ``alt=sse``, else a JSON array."""
        tokens_out = tokens(reply.text + reply.tool_input)
        if not stream:
            self._json(200, gemini_response(reply, model, tokens_in, tokens_out))
        elif "alt=sse" in self.path:
            self._sse(("", chunk) for chunk in gemini_chunks(reply, model, tokens_in, tokens_out))
        else:
            self._json(200, list(gemini_chunks(reply, model, tokens_in, tokens_out)))

    def _body(self) -> Json | None:
        """The request's JSON object, read up to MAX_BODY_BYTES; None once a 400 or 413 went back instead.

        A bad ``Content-Length`` leaves no way to find the next request on
        the connection, so the connection closes after the answer.
        """
        declared = (self.headers.get("Content-Length") or "0").strip()
        if not declared.isdigit():
            self.close_connection = True
            self._bad_request(f"Content-Length {declared[:40]!r} is not a byte count")
            return None
        length = int(declared)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            too_large = {"type": "request_too_large", "message": f"body over {MAX_BODY_BYTES} bytes"}
            self._json(413, {"error": too_large})
            return None
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except (ValueError, RecursionError):
            self._bad_request("body is not JSON")
            return None
        if not isinstance(body, dict):
            self._bad_request("body is not a JSON object")
            return None
        return body

    def _bad_request(self, message: str) -> None:
        self._json(400, {"error": {"type": "invalid_request_error", "message": message}})

    def _json(self, status: int, document: Json | list[Json], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
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


def _handler_for(server: FakeModelServer) -> type[BaseHTTPRequestHandler]:
    """A handler class bound to ``server``: http.server makes one handler per connection from a class."""
    return type("Handler", (FakeModelHandler,), {"server_of_run": server})
