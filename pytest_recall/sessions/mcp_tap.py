"""A recording tap for a stdio MCP server: ``recall-mcp-tap --log FILE --server NAME -- COMMAND ARGS...``.

Whether an agent used its memory is a fact only the wire between the agent's
CLI and the memory server holds: a CLI may never list the server's tools, or
list them and never call one, and a memory arm that never read its memory
scores like a forgetful one. The harness writes each step's MCP configuration
itself, so it can start every stdio server behind this relay and see every call
whatever the CLI, without asking the CLI.

The relay is transparent by construction: each pump forwards every byte it
reads, as soon as it reads it, before it looks at what it forwarded. Only a
copy is parsed, as the MCP stdio transport frames it (one JSON-RPC message per
line), and a line it cannot parse is forwarded all the same and not recorded.
The server's stderr is the relay's own (inherited), and so are its working
folder, environment and cgroup, so the server runs exactly where it would have.

What is recorded, one JSON line an event, flushed as it happens so a relay
killed with its session still leaves what it saw:

- ``{"event": "tools", ...}``: the tools a ``tools/list`` answer offered, with
  their annotations (what classes a call as a read or a write);
- ``{"event": "call", ...}``: a ``tools/call``, its tool, the size of its
  arguments and of its result, the text the result carried (cut to
  ``TEXT_KEPT`` characters), whether it was an error, its latency from the
  request's last byte read to the answer's last byte read, and when the
  request was read (``at``, the host's monotonic clock).

The log is evidence of an honest agent's use of its memory, not proof against
a hostile one: the agent runs as the same user in the same sandbox and could
write the log itself. The harness reads it with the cost file's care, and a
line that is not as the relay writes it (a figure that is no bounded number,
a list where an object goes, nesting past the parser) is passed over and
counted in the step's memory fault, never an error of the case.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

# A result's text kept in the log for evidence matching; the rest is counted, not kept.
TEXT_KEPT = 16_000
# A message longer than this is forwarded but not parsed: a flood must not grow the relay without bound.
LONGEST_PARSED_LINE = 8 * 1024 * 1024
# Requests whose answers the relay waits for; past this many unanswered, the oldest are forgotten.
PENDING_KEPT = 1024
_CHUNK = 65536


class Recorder:
    """Pairs requests with their answers and appends what it sees to the log, one line an event."""

    def __init__(self, log: IO[str], server: str) -> None:
        self._log = log
        self._server = server
        self._lock = threading.Lock()
        # Request id (as JSON text, so 1 and "1" stay apart) -> (method, tool, argument bytes, start time).
        self._pending: dict[str, tuple[str, str | None, int, float]] = {}
        # Answers read before their request was looked at: each pump forwards first and parses after, so a fast
        # server's answer can overtake the record of the request it answers. Both carry their own read times.
        self._early: dict[str, tuple[dict[str, Any], float, int]] = {}

    def from_client(self, message: Any, at: float) -> None:
        if not isinstance(message, dict) or "id" not in message:
            return
        method = message.get("method")
        if method not in ("tools/call", "tools/list"):
            return
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        tool = params.get("name") if method == "tools/call" else None
        arguments = params.get("arguments", {})
        key = _key(message["id"])
        request = (method, tool if isinstance(tool, str) else None, _json_size(arguments), at)
        with self._lock:
            answer = self._early.pop(key, None)
            if answer is None:
                _keep(self._pending, key, request)
        if answer is not None:
            self._answered(request, *answer)

    def from_server(self, message: Any, at: float, size: int) -> None:
        if not isinstance(message, dict) or "id" not in message or "method" in message:
            return
        key = _key(message["id"])
        with self._lock:
            request = self._pending.pop(key, None)
            if request is None:
                _keep(self._early, key, (message, at, size))
        if request is not None:
            self._answered(request, message, at, size)

    def _answered(
        self, request: tuple[str, str | None, int, float], message: dict[str, Any], at: float, size: int
    ) -> None:
        method, tool, argument_bytes, started = request
        result = message.get("result")
        if method == "tools/list":
            self._write({"event": "tools", "tools": _offered_tools(result)})
            return
        text = _result_text(result)
        self._write(
            {
                "event": "call",
                "tool": tool,
                "argument_bytes": argument_bytes,
                "result_bytes": size,
                "text_bytes": len(text.encode("utf-8", "surrogatepass")),
                "text": text[:TEXT_KEPT],
                "is_error": "error" in message or (isinstance(result, dict) and result.get("isError") is True),
                "latency_ms": round((at - started) * 1000, 3),
                # When the request was read, on the host's monotonic clock (CLOCK_MONOTONIC, one for every
                # process): what tells a live session's turns apart, each call going to the turn sent before it.
                "at": round(started, 6),
            }
        )

    def _write(self, event: dict[str, Any]) -> None:
        event["server"] = self._server
        line = json.dumps(event, ensure_ascii=False) + "\n"
        with self._lock, contextlib.suppress(OSError, ValueError):
            self._log.write(line)
            self._log.flush()


def _keep(table: dict[str, Any], key: str, value: Any) -> None:
    """Add to a table of unpaired messages, forgetting the oldest past ``PENDING_KEPT``: a flood stays bounded."""
    if len(table) >= PENDING_KEPT:
        table.pop(next(iter(table)))
    table[key] = value


def _key(request_id: Any) -> str:
    return json.dumps(request_id, sort_keys=True)


def _json_size(value: Any) -> int:
    try:
        return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError, RecursionError):
        return 0


def _offered_tools(result: Any) -> list[dict[str, Any]]:
    tools = result.get("tools") if isinstance(result, dict) else None
    offered = []
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            annotations = tool.get("annotations")
            offered.append({"name": tool["name"], "annotations": annotations if isinstance(annotations, dict) else {}})
    return offered


def _result_text(result: Any) -> str:
    """What a tool's answer puts before the model: its text content, else its structured content as JSON."""
    if not isinstance(result, dict):
        return ""
    content = result.get("content")
    texts = [
        item["text"]
        for item in (content if isinstance(content, list) else [])
        if isinstance(item, dict) and isinstance(item.get("text"), str)
    ]
    if texts:
        return "\n".join(texts)
    structured = result.get("structuredContent")
    return json.dumps(structured, ensure_ascii=False) if structured is not None else ""


class _Lines:
    """Splits a stream's copy into lines and hands each whole one on, parsed; an overlong line is skipped."""

    def __init__(self, deliver: Callable[[Any, float, int], None]) -> None:
        self._deliver = deliver
        self._parts: list[bytes] = []
        self._held = 0
        self._skipping = False

    def feed(self, chunk: bytes, at: float) -> None:
        """Hand on each line the chunk ends; ``at`` is when the chunk was read, for every line it ends."""
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                self._hold(chunk[start:])
                return
            self._hold(chunk[start:end])
            if not self._skipping:
                line = b"".join(self._parts)
                # A line nested past the parser's depth (RecursionError) is forwarded like any other, not recorded.
                with contextlib.suppress(ValueError, RecursionError):
                    self._deliver(json.loads(line), at, len(line))
            self._parts, self._held, self._skipping = [], 0, False
            start = end + 1

    def _hold(self, piece: bytes) -> None:
        if self._skipping or not piece:
            return
        self._held += len(piece)
        if self._held > LONGEST_PARSED_LINE:
            self._parts, self._skipping = [], True
        else:
            self._parts.append(piece)


def _pump(
    source: int, target: int, lines: _Lines, on_end: Callable[[], None], clock: Callable[[], float] = time.monotonic
) -> None:
    """Forward every byte from ``source`` to ``target`` first, then let ``lines`` look at a copy.

    The time is taken as the chunk is read, before it is forwarded: taken after, a request's time could come
    later than its answer's (the server answering, and its pump reading, while this thread waits to run again),
    and a latency come out below zero.
    """
    try:
        while chunk := os.read(source, _CHUNK):
            at = clock()
            view = memoryview(chunk)
            while view:
                view = view[os.write(target, view) :]
            lines.feed(chunk, at)
    except OSError:
        pass  # the other side went away: end this direction as the stream would have ended
    finally:
        on_end()


def relay(command: Sequence[str], log: IO[str], server: str) -> int:
    """Run ``command`` behind the tap until its output ends; its exit status, as a shell would give it."""
    recorder = Recorder(log, server)
    try:
        child = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    except OSError as exc:
        # Worded as an agent's own MCP client words it, so the failure reads the same with or without the tap.
        print(f"recall-mcp-tap: MCP server {server!r} cannot be started: {exc.strerror}: {command[0]}", file=sys.stderr)
        return 127
    assert child.stdin is not None and child.stdout is not None
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda signum, _frame: _forward(child, signum))
    requests = _Lines(lambda message, at, _size: recorder.from_client(message, at))
    upstream = threading.Thread(
        target=_pump, args=(sys.stdin.fileno(), child.stdin.fileno(), requests, child.stdin.close), daemon=True
    )
    upstream.start()
    _pump(
        child.stdout.fileno(),
        sys.stdout.fileno(),
        _Lines(recorder.from_server),
        lambda: _close_quietly(sys.stdout.fileno()),
    )
    status = child.wait()
    return status if status >= 0 else 128 - status


def _forward(child: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        child.send_signal(signum)


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="recall-mcp-tap",
        description="Run a stdio MCP server behind a transparent relay that logs its tool calls (one JSON line each).",
    )
    parser.add_argument("--log", required=True, help="the file the events are appended to")
    parser.add_argument("--server", required=True, help="the server's name in the MCP configuration")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...: the server to start")
    options = parser.parse_args(argv)
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    if not command:
        parser.error("name the server's command after --")
    try:
        log = open(options.log, "a", encoding="utf-8")  # noqa: SIM115 - open for the relay's whole life
    except OSError as exc:
        print(f"recall-mcp-tap: cannot write {options.log}: {exc}", file=sys.stderr)
        return 2
    with log:
        return relay(command, log, options.server)


if __name__ == "__main__":
    sys.exit(main())
