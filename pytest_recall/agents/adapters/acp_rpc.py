"""JSON-RPC 2.0 over an ACP agent's stdio: one JSON object a line, both ways, both sides asking.

The client (recall-acp) asks and waits; while it waits the agent may ask back
(permission, files) and send notifications (``session/update``). Everything
runs in one thread, in the order the agent wrote it, so nothing is missed or
reordered. Any way the agent can break the conversation (exit, close its
pipes, write something that is not JSON-RPC, answer with an error) is an
:class:`AcpFailure` whose message is the one line the harness shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Callable
from typing import IO, Any

Json = dict[str, Any]
# The longest line read from the agent: a message is a few kilobytes; this bounds what a broken agent can make us hold.
MAX_LINE_BYTES = 64 << 20
# JSON-RPC's code for a method the other side does not serve.
METHOD_NOT_FOUND = -32601
# What a line of garbage is shown as, at most.
SHOWN_CHARS = 80


class AcpFailure(Exception):
    """The agent or the protocol failed; ``str()`` is one line for stderr."""


class Refusal(Exception):
    """A request from the agent that the client answers with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


RequestHandler = Callable[[str, Json], Json]
NotificationHandler = Callable[[str, Json], None]


class Peer:
    """The agent process, as the other side of a JSON-RPC conversation."""

    def __init__(self, process: subprocess.Popen[bytes], answer: RequestHandler, hear: NotificationHandler) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._writer: IO[bytes] = process.stdin
        self._reader: IO[bytes] = process.stdout
        self._answer = answer
        self._hear = hear
        self._next_id = 0

    def call(self, method: str, params: Json) -> Json:
        """Send a request and serve the agent until its response comes; the result, or AcpFailure."""
        request_id = self._next_id
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, method)
        while True:
            message = self._receive(method)
            if "method" in message:
                self._serve(message)
            elif message.get("id") == request_id:
                return _result_of(message, method)

    def _serve(self, message: Json) -> None:
        method = str(message["method"])
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in message:
            self._hear(method, params)
            return
        reply: Json = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = self._answer(method, params)
        except Refusal as refusal:
            reply["error"] = {"code": refusal.code, "message": str(refusal)}
        self._send(reply, method)

    def _send(self, message: Json, during: str) -> None:
        try:
            self._writer.write(json.dumps(message).encode("utf-8") + b"\n")
            self._writer.flush()
        except (BrokenPipeError, ValueError):
            raise AcpFailure(f"the agent {self.ended()} during {during}") from None

    def _receive(self, during: str) -> Json:
        while True:
            line = self._reader.readline(MAX_LINE_BYTES)
            if not line:
                raise AcpFailure(f"the agent {self.ended()} before it answered {during}")
            if len(line) >= MAX_LINE_BYTES:
                raise AcpFailure(f"the agent wrote a line of more than {MAX_LINE_BYTES >> 20} MiB during {during}")
            if line.strip():
                break
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            message = None
        if not isinstance(message, dict) or ("method" not in message and "id" not in message):
            shown = line.decode("utf-8", "replace").strip()[:SHOWN_CHARS]
            raise AcpFailure(f"the agent wrote something that is not JSON-RPC during {during}: {shown!r}")
        return message

    def ended(self, wait_s: float = 5.0) -> str:
        """How the agent ended ("exited with status 3", "was killed by SIGKILL"), once its output is closed."""
        try:
            status = self.process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return "closed its output"
        if status < 0:
            return f"was killed by {signal.Signals(-status).name}"
        return f"exited with status {status}"

    def close(self, grace_s: float = 5.0) -> None:
        """End the conversation as ACP's stdio transport does, by closing the agent's input; then end what is left.

        The agent runs in a process group of its own (see :func:`start_agent`):
        an npm launcher's native binary, or a server the agent started, is
        terminated with it, and whatever is still there after the grace is killed.
        """
        with contextlib.suppress(OSError):
            self._writer.close()
        for stop in (None, signal.SIGTERM, signal.SIGKILL):
            if stop is not None:
                with contextlib.suppress(OSError):
                    os.killpg(self.process.pid, stop)
            try:
                self.process.wait(timeout=grace_s)
                break
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)  # what the agent left behind in its group
        self._reader.close()


def start_agent(command: list[str], stderr: IO[bytes] | None = None) -> subprocess.Popen[bytes]:
    """The agent, piped on stdin and stdout, in a process group of its own that :meth:`Peer.close` ends whole."""
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, start_new_session=True
    )


def _result_of(message: Json, method: str) -> Json:
    error = message.get("error")
    if error is not None:
        detail = error if not isinstance(error, dict) else f"{error.get('code')}: {error.get('message')}"
        raise AcpFailure(f"the agent answered {method} with an error ({detail})")
    result = message.get("result")
    if not isinstance(result, dict):
        raise AcpFailure(f"the agent answered {method} without a result object")
    return result
