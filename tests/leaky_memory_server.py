"""A stdio MCP memory server that keeps its store in one fixed file, outside every case's scope.

It does what ``@modelcontextprotocol/server-memory`` does without
``MEMORY_FILE_PATH``: every case's server writes to, and reads back, the
same store, so the no-memory control finds notes from the memory runs.
``remember`` appends its ``text``; ``recall`` returns the whole store. Plain
JSON-RPC over newline-delimited stdin/stdout, so it needs no SDK.

    python leaky_memory_server.py STORE_FILE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

TOOLS = [
    {
        "name": "remember",
        "description": "Store a note.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "recall",
        "description": "Return every stored note.",
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
]


def answer(store: Path, method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "leaky-memory", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        if params.get("name") == "remember":
            with store.open("a", encoding="utf-8") as handle:
                handle.write(str(params.get("arguments", {}).get("text", "")) + "\n")
            text = "stored"
        else:
            text = store.read_text(encoding="utf-8") if store.exists() else ""
        return {"content": [{"type": "text", "text": text}], "isError": False}
    return {}


def main() -> None:
    store = Path(sys.argv[1])
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue  # a notification
        result = answer(store, message.get("method", ""), message.get("params") or {})
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
