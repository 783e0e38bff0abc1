"""An agent's own log of its memory calls, for a memory the MCP tap cannot see.

The harness counts memory use from the tap between a CLI and its MCP servers. A memory that is no
tapped server (a library in the agent's own process, as ``recall-provider`` runs it, or a CLI's
built-in memory tool, as Hermes Agent's) is logged by the agent itself to ``$RECALL_MEMORY_LOG``,
one event a line in the tap's shape, and read after the step as the tap's log is: as a file the
agent could have written, so the counts are evidence beside the score, never the score.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

__all__ = ["TEXT_KEPT", "CallLog"]

# A result's text kept for evidence matching, as the tap keeps it.
TEXT_KEPT = 16_000


class CallLog:
    """Appends each memory call to the log in the MCP tap's event shape; a no-op without a log.

    The first line says which tools read and which write, so the report counts them whatever their names.
    """

    def __init__(self, path: str | None, server: str, *, reads: Sequence[str], writes: Sequence[str]) -> None:
        self._path = path
        self._server = server
        self._write({"event": "kinds", "reads": list(reads), "writes": list(writes)})

    @classmethod
    def from_environment(cls, server: str, *, reads: Sequence[str], writes: Sequence[str]) -> CallLog:
        """The log the harness names for the step (``$RECALL_MEMORY_LOG``, which it sets for every step)."""
        return cls(os.environ.get("RECALL_MEMORY_LOG"), server, reads=reads, writes=writes)

    def call(self, tool: str, argument: str, returned: str, *, latency_ms: float, is_error: bool = False) -> None:
        self._write(
            {
                "event": "call",
                "tool": tool,
                "argument_bytes": len(argument.encode("utf-8", "surrogatepass")),
                "text_bytes": len(returned.encode("utf-8", "surrogatepass")),
                "text": returned[:TEXT_KEPT],
                "is_error": is_error,
                "latency_ms": round(latency_ms, 3),
            }
        )

    def _write(self, event: dict[str, Any]) -> None:
        if self._path is None:
            return
        with open(self._path, "a", encoding="utf-8") as log:
            log.write(json.dumps({**event, "server": self._server}, ensure_ascii=False) + "\n")
