"""The no-memory control is the check on an MCP run: a control that scores above 0 means memory leaked around the scope.

A real stdio MCP server (``leaky_memory_server.py``) keeps one store for
every case, in a fixed file outside the scopes, as server-memory does without
``MEMORY_FILE_PATH``; ``recall-mcp`` stores each step through it and prints
what its search returns. The same server with its store in ``{scope}`` is
the run where nothing leaks.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from mcp_servers import LEAKY_SERVER as SERVER
from mcp_servers import RECALL_MCP_REMEMBER as RECALL_MCP

LEAK_LINE = "WARNING --recall-mcp: the no-memory control scored"


def run_with_store(recall_suite: Any, store: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    config = recall_suite.pytester.path / "mcp.json"
    entry = {"command": sys.executable, "args": [str(SERVER), store]}
    config.write_text(json.dumps({"mcpServers": {"memory": entry}}), encoding="utf-8")
    result = recall_suite.run(
        f"--recall-mcp={config}",
        "--recall-answer-judge=contains",
        "--recall-control",
        command=RECALL_MCP,
        timeout=600,
    )
    return result, recall_suite.report()


@pytest.mark.slow
def test_a_control_that_scores_on_an_mcp_run_says_memory_leaked_around_the_scope(recall_suite: Any) -> None:
    # The control runs after its case, so it finds the case's own note; each session starts recall-mcp and the server.
    recall_suite.add("only", ["Remember the balance 12345.67.", "What was the balance?"])
    outside = recall_suite.pytester.path / "outside"
    outside.mkdir()

    leaked, leaked_report = run_with_store(recall_suite, str(outside / "store.txt"))
    kept, kept_report = run_with_store(recall_suite, "{scope}/store.txt")

    assert leaked_report["control"]["score"] > 0 and leaked_report["control"]["mcp_leaked"] is True
    (line,) = [line for line in leaked.outlines if LEAK_LINE in line]
    assert "memory leaked around the scope" in line and "docs/mcp.md" in line
    assert kept_report["score"] == 1.0, "the scoped store must still be memory"
    assert kept_report["control"]["score"] == 0 and kept_report["control"]["mcp_leaked"] is False
    assert not [line for line in kept.outlines if LEAK_LINE in line]
