"""An MCP server configuration for a run or a case: the common ``mcpServers`` JSON, with templates.

``--recall-mcp=FILE`` (or ``mcp = "FILE"`` in a case.toml or suite.toml) names
a file in the shape Claude Code, Cursor and most MCP clients read::

    {"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"],
                               "env": {"MEMORY_FILE_PATH": "{scope}/memory.jsonl"}}}}

Every string in it may use the placeholders of ``--recall-env`` (``{scope}``,
``{home}``, ``{workdir}``, ``{step}``, ``{case}``), filled in for each step, so
each case's server keeps its store inside that case's memory scope. The file
is read and checked once, when the run starts or the case is collected; a
mistake is one line naming the file. A relative path in it (the ``command``,
an argument or ``env`` value naming a file there, the ``cwd``) is made absolute
against the file's folder: each session runs in an empty folder of its own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_recall.cases.command_paths import absolute_word, resolve_command_paths


class McpConfigError(ValueError):
    """A configuration that cannot be used; the message is one line naming the file."""


# The placeholders a --recall-env value or an MCP configuration may use.
PLACEHOLDERS = ("scope", "home", "workdir", "step", "case")
# pytest-recall's own key in a server entry, stripped before any CLI sees the file: which of the server's tools
# read and which write, when neither their annotations nor their names say (see memory_tap.call_kind).
RECALL_KEY = "recall"
_KINDS = ("reads", "writes")
# What one server entry may hold: a command it is started with, or a URL it is reached at.
_STDIO_KEYS = {"command", "args", "env", "cwd", "type", RECALL_KEY}
_HTTP_KEYS = {"url", "headers", "type", RECALL_KEY}


def check_template(template: str) -> str | None:
    """Why a template cannot be filled in, or None when it can."""
    try:
        template.format_map(dict.fromkeys(PLACEHOLDERS, ""))
    except KeyError as exc:
        return f"unknown placeholder {{{exc.args[0]}}}; use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
    except (ValueError, IndexError) as exc:
        return f"{exc}; write a literal brace as {{{{ or }}}}"
    return None


def fill(value: Any, values: Mapping[str, str]) -> Any:
    """``value`` with every string in it filled in from ``values``."""
    if isinstance(value, str):
        return value.format_map(values)
    if isinstance(value, Mapping):
        return {key: fill(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [fill(item, values) for item in value]
    return value


def settings_with_mcp(settings: Mapping[str, Any], folder: Path, source: str) -> dict[str, Any]:
    """A case.toml's or suite.toml's settings with ``mcp = "FILE"`` (relative to ``folder``) read in."""
    __tracebackhide__ = True
    resolved = dict(settings)
    if "mcp" in resolved:
        if not isinstance(resolved["mcp"], str) or not resolved["mcp"].strip():
            raise McpConfigError(f"{source}: mcp must name an MCP configuration file, not {resolved['mcp']!r}")
        resolved["mcp"] = read_mcp_config(folder / resolved["mcp"], f"{source}: mcp")
    return resolved


def read_mcp_config(path: Path, what: str) -> dict[str, Any]:
    """The ``mcpServers`` object of ``path``, checked; ``what`` names the setting in errors."""
    __tracebackhide__ = True
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise McpConfigError(f"{what}: {path} does not exist; give an MCP configuration file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise McpConfigError(f"{what}: {path} is not a readable JSON file ({exc})") from None
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(servers, dict) or not servers:
        raise McpConfigError(
            f'{what}: {path} must hold {{"mcpServers": {{"NAME": {{"command": ...}}}}}} with at least one server'
        )
    for name, entry in servers.items():
        _check_server(name, entry, f"{what}: {path}: server {name!r}")
    return {name: _with_absolute_paths(entry, str(path.parent)) for name, entry in servers.items()}


def _with_absolute_paths(entry: dict[str, Any], folder: str) -> dict[str, Any]:
    """A server entry whose relative paths are made absolute against ``folder``, the configuration's own."""
    if "command" not in entry:
        return entry
    argv, _ = resolve_command_paths((entry["command"], *entry.get("args", [])), folder)
    resolved = {**entry, "command": argv[0]}
    if "args" in entry:
        resolved["args"] = list(argv[1:])
    if "env" in entry:
        resolved["env"] = {name: absolute_word(value, folder, program=False) for name, value in entry["env"].items()}
    cwd = entry.get("cwd")
    if isinstance(cwd, str) and cwd and "{" not in cwd and not cwd.startswith("~"):
        resolved["cwd"] = os.path.abspath(os.path.join(folder, cwd))  # an absolute cwd stays as it is
    return resolved


def _check_server(name: str, entry: Any, where: str) -> None:
    __tracebackhide__ = True
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise McpConfigError(f"{where}: a server name may hold letters, digits, '-' and '_' only")
    if not isinstance(entry, dict) or not (isinstance(entry.get("command"), str) or isinstance(entry.get("url"), str)):
        raise McpConfigError(f'{where} needs a "command" to start it or a "url" to reach it')
    allowed = _STDIO_KEYS if "command" in entry else _HTTP_KEYS
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise McpConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    if not all(isinstance(arg, str) for arg in entry.get("args", [])) or not isinstance(entry.get("args", []), list):
        raise McpConfigError(f'{where}: "args" must be a list of strings')
    _check_kinds(entry.get(RECALL_KEY, {}), where)
    for table in ("env", "headers"):
        values = entry.get(table, {})
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            raise McpConfigError(f'{where}: "{table}" must map names to strings')
    for text in _strings(entry):
        problem = check_template(text)
        if problem is not None:
            raise McpConfigError(f"{where}: {text!r}: {problem}")


def _check_kinds(kinds: Any, where: str) -> None:
    """``"recall": {"reads": [TOOL, ...], "writes": [TOOL, ...]}``, a tool in one list at most."""
    __tracebackhide__ = True
    shape = f'{where}: "{RECALL_KEY}" must be {{"reads": [TOOL, ...], "writes": [TOOL, ...]}}'
    if not isinstance(kinds, dict) or set(kinds) - set(_KINDS):
        raise McpConfigError(shape)
    for tools in kinds.values():
        if not isinstance(tools, list) or not all(isinstance(tool, str) and tool for tool in tools):
            raise McpConfigError(shape)
    both = sorted(set(kinds.get("reads", [])) & set(kinds.get("writes", [])))
    if both:
        raise McpConfigError(f'{where}: "{RECALL_KEY}" names {", ".join(both)} as both a read and a write')


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []
