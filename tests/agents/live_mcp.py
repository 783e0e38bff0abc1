"""A live REPL agent whose memory is the first MCP server the harness gives it (``$RECALL_MCP_CONFIG``).

It starts the server once, as a CLI does, and keeps it for the whole session: a turn that starts with
"Remember" goes to the server's ``remember`` tool, any other to its ``recall`` tool, whose text, on one line,
is the answer. Plain JSON-RPC over newline-delimited stdio, so it needs no SDK. Run by the live-session tap test.

The file is not named test_*, so pytest never collects it.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from pytest_recall.agents.notebook import REPL_PROMPT, turns


class Server:
    def __init__(self, entry: dict[str, Any]) -> None:
        env = {**os.environ, **(entry.get("env") or {})}
        self.process = subprocess.Popen(
            [entry["command"], *entry.get("args", [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        self.ids = itertools.count(1)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        self.process.stdin.flush()

    def ask(self, method: str, params: dict[str, Any]) -> Any:
        number = next(self.ids)
        self.send({"id": number, "method": method, "params": params})
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            if message.get("id") == number:
                return message.get("result")
        raise SystemExit("the memory server went away")


def main() -> int:
    config = json.loads(Path(os.environ["RECALL_MCP_CONFIG"]).read_text(encoding="utf-8"))
    server = Server(next(iter(config["mcpServers"].values())))
    server.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "live"}})
    server.send({"method": "notifications/initialized"})
    server.ask("tools/list", {})
    print(REPL_PROMPT, end="", flush=True)
    for turn in turns():
        if turn.strip().lower().startswith("remember"):
            server.ask("tools/call", {"name": "remember", "arguments": {"text": turn.strip()}})
            print("noted", flush=True)
        else:
            result = server.ask("tools/call", {"name": "recall", "arguments": {"query": turn.strip()}})
            text = "".join(part.get("text", "") for part in (result or {}).get("content", []))
            print(" ".join(text.split()) or "UNKNOWN", flush=True)
        print(REPL_PROMPT, end="", flush=True)
    print("bye", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
