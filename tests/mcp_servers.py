"""The MCP memory servers the tests plug into agents, pinned by ``.ci/install-mcp-servers``: shared by the MCP tests.

The file is not named test_*, so pytest never collects it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from cli_wiring import installed

TOOLS = Path(__file__).resolve().parent.parent / ".tools"
# A stdio server in Python that keeps notes in the file it is given (tests/leaky_memory_server.py), and
# recall-mcp set to store each step through its remember tool and to answer from its recall tool.
LEAKY_SERVER = Path(__file__).resolve().parent / "leaky_memory_server.py"
RECALL_MCP_REMEMBER = shlex.join(
    [
        str(Path(sys.executable).with_name("recall-mcp")),
        *("--write-tool", "remember", "--write-args", '{"text": "{prompt}"}'),
        *("--search-tool", "recall", "--search-args", '{"query": "{query}"}'),
    ]
)


def _server_memory(command: str) -> dict[str, Any]:
    return {"command": command, "env": {"MEMORY_FILE_PATH": "{scope}/memory.jsonl"}}


def _basic_memory(command: str) -> dict[str, Any]:
    # Its config and SQLite index and its Markdown notes all in the case's scope; no update check, no banner,
    # and plain text search (its vector search needs a model download).
    env = {
        "BASIC_MEMORY_CONFIG_DIR": "{scope}/basic-memory",
        "BASIC_MEMORY_HOME": "{scope}/notes",
        "BASIC_MEMORY_DEFAULT_SEARCH_TYPE": "text",
        "BASIC_MEMORY_NO_PROMOS": "1",
        "FASTMCP_CHECK_FOR_UPDATES": "off",
        "FASTMCP_SHOW_SERVER_BANNER": "false",
    }
    return {"command": command, "args": ["mcp"], "env": env}


# name: (variable naming the installed server, where the script installs it, its entry, where its store lies)
SERVERS = {
    "server-memory": (
        "RECALL_SERVER_MEMORY_BIN",
        TOOLS / "mcp-npm/node_modules/.bin/mcp-server-memory",
        _server_memory,
        "scope/memory.jsonl",
    ),
    "basic-memory": (
        "RECALL_BASIC_MEMORY_BIN",
        TOOLS / "basic-memory-venv/bin/basic-memory",
        _basic_memory,
        "scope/notes/",
    ),
}


def server_command(server: str) -> str:
    """The installed server; skip when it is absent, unless under CI, where that is a failure."""
    variable, default, _entry, _store = SERVERS[server]
    found = shutil.which(os.environ.get(variable) or str(default))
    reason = f'{server} is not installed: run `eval "$(.ci/install-mcp-servers)"` or set {variable}'
    return installed(found, reason, marker="mcp_server")


def write_config(server: str, path: Path) -> Path:
    """An ``mcpServers`` file with the server as ``memory``, its store under ``{scope}``."""
    entry = SERVERS[server][2](server_command(server))
    path.write_text(json.dumps({"mcpServers": {"memory": entry}}, indent=2), encoding="utf-8")
    return path


def store_prefix(server: str) -> str:
    """Where, in a step's memory listing, the server's store lies: under the case's scope."""
    return SERVERS[server][3]
