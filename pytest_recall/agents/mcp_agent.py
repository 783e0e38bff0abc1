"""``recall-mcp [OPTIONS] PROMPT``: a memory server measured on its own, with no model at all.

Each step is one session, as for any agent: it starts the MCP server (stdio)
or connects to it (streamable HTTP), searches it with the step's prompt and
prints what the search returned, then stores the prompt with the write tool.
Only the last step's output is judged, so what is measured is what the
server's search returns for the question after earlier sessions stored the
rest: with ``--recall-answer-judge=contains``, each server's recall on any suite
whose answers are literal, with the bytes returned beside it; with
``--recall-answer-judge=evidence``, its evidence recall per category on
imported questions, whose evidence turns the import keeps.

The server comes from ``--config FILE`` (the ``mcpServers`` shape; by default
``$RECALL_MCP_CONFIG``, which ``--recall-mcp`` fills in per step, so the store
lies in the case's scope) or ``--url URL``. Which tools to call, and with
what, comes from :data:`KNOWN_TOOLS` for the servers it knows, or from
``--write-tool``/``--search-tool`` and ``--write-args``/``--search-args``
(JSON whose strings may use ``{prompt}``, ``{step}`` and ``{query}``).

A server that cannot be started, ends during start-up, or lacks the tools is
one line on stderr and exit status 2: an agent failure, never a score of 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What to call on the servers this knows, by the write tool each offers: (write arguments, search tool,
# search arguments). The first whose write and search tools the server offers is used.
KNOWN_TOOLS: dict[str, tuple[dict[str, Any], str, dict[str, Any]]] = {
    # @modelcontextprotocol/server-memory: an entity per step; search_nodes matches a substring of names,
    # types and observations.
    "create_entities": (
        {"entities": [{"name": "step {step}", "entityType": "recall step", "observations": ["{prompt}"]}]},
        "search_nodes",
        {"query": "{query}"},
    ),
    # basic-memory: a Markdown note per step; search_notes is full-text search over the notes.
    "write_note": (
        {"title": "step {step}", "content": "{prompt}", "directory": "recall"},
        "search_notes",
        {"query": "{query}"},
    ),
}
START_TIMEOUT_S = 180.0
CALL_TIMEOUT_S = 120.0
FAILED = 2


class ServerError(Exception):
    """The server could not be used; the message is the one line to show."""


@dataclass(frozen=True, slots=True)
class Plan:
    """The tools to call and the argument templates for each."""

    write_tool: str
    write_args: Mapping[str, Any]
    search_tool: str
    search_args: Mapping[str, Any]


def fill(template: Any, values: Mapping[str, str]) -> Any:
    """Every string in ``template`` with ``{prompt}``, ``{step}`` and ``{query}`` replaced (other braces kept)."""
    if isinstance(template, str):
        for name, value in values.items():
            template = template.replace("{" + name + "}", value)
        return template
    if isinstance(template, Mapping):
        return {key: fill(item, values) for key, item in template.items()}
    if isinstance(template, list):
        return [fill(item, values) for item in template]
    return template


def plan_for(offered: Sequence[str], options: argparse.Namespace) -> Plan:
    """What to call, from the flags and the table; a tool the server lacks is an error naming what it has."""
    known = next(
        (
            (write, *KNOWN_TOOLS[write])
            for write in KNOWN_TOOLS
            if write in offered and KNOWN_TOOLS[write][1] in offered
        ),
        None,
    )
    write_tool = options.write_tool or (known[0] if known else None)
    search_tool = options.search_tool or (known[2] if known else None)
    has = ", ".join(sorted(offered)) or "no tools"
    if write_tool is None or search_tool is None:
        raise ServerError(
            f"the server offers no write and search tools this knows ({has}); name them with "
            "--write-tool and --search-tool"
        )
    for tool in (write_tool, search_tool):
        if tool not in offered:
            raise ServerError(f"has no tool {tool!r} (it has: {has})")
    write_args = _template(options.write_args, "--write-args") if options.write_args else None
    search_args = _template(options.search_args, "--search-args") if options.search_args else None
    if write_args is None:
        if known is None or write_tool != known[0]:
            raise ServerError(f"--write-args is needed: {write_tool!r} is not a tool this knows")
        write_args = known[1]
    if search_args is None:
        if known is None or search_tool != known[2]:
            raise ServerError(f"--search-args is needed: {search_tool!r} is not a tool this knows")
        search_args = known[3]
    return Plan(write_tool, write_args, search_tool, search_args)


def _template(text: str, flag: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ServerError(f"{flag} is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ServerError(f"{flag} must be a JSON object of the tool's arguments")
    return value


def server_entry(options: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """``(name, mcpServers entry)`` of the server to use."""
    if options.url:
        return "server", {"url": options.url}
    path = options.config or os.environ.get("RECALL_MCP_CONFIG")
    if not path:
        raise ServerError("no server: give --config FILE, --url URL, or run under --recall-mcp")
    try:
        servers = json.loads(Path(path).read_text(encoding="utf-8"))["mcpServers"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ServerError(f"{path} is not an MCP configuration ({exc})") from None
    name = options.name or next(iter(servers), None)
    if name not in servers:
        raise ServerError(f"{path} has no server {name!r} (it has: {', '.join(servers)})")
    return str(name), dict(servers[name])


def text_of(result: Any) -> str:
    """The text a tool call returned: its text blocks, else its structured content as JSON."""
    texts = [block.text for block in getattr(result, "content", []) or [] if getattr(block, "text", None)]
    if texts:
        return "\n".join(texts)
    structured = getattr(result, "structured_content", None)
    return json.dumps(structured) if structured is not None else ""


async def session_step(entry: Mapping[str, Any], options: argparse.Namespace, prompt: str) -> str:
    """Search with the prompt, then store it; what the search returned."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    step = os.environ.get("RECALL_STEP", "1")
    if "url" in entry:
        transport: Any = streamable_http_client(entry["url"])
    else:
        parameters = StdioServerParameters(
            command=entry["command"],
            args=list(entry.get("args", [])),
            env={**os.environ, **entry.get("env", {})},
            cwd=entry.get("cwd"),
        )
        transport = stdio_client(parameters)
    async with transport as streams, ClientSession(streams[0], streams[1]) as session:
        with anyio.fail_after(START_TIMEOUT_S):
            await session.initialize()
            offered = [tool.name for tool in (await session.list_tools()).tools]
        plan = plan_for(offered, options)
        values = {"prompt": prompt, "step": step, "query": prompt}
        found = await _call(session, plan.search_tool, fill(plan.search_args, values))
        await _call(session, plan.write_tool, fill(plan.write_args, values))
        return found


def start_timeout_s() -> float:
    """How long the server may take to start: ``MCP_TIMEOUT`` (milliseconds, as Claude Code reads it), else 180 s."""
    try:
        return max(1.0, float(os.environ["MCP_TIMEOUT"]) / 1000)
    except (KeyError, ValueError):
        return START_TIMEOUT_S


async def _call(session: Any, tool: str, arguments: dict[str, Any]) -> str:
    result = await session.call_tool(tool, arguments, read_timeout_seconds=CALL_TIMEOUT_S)
    if getattr(result, "is_error", False):
        raise ServerError(f"{tool} failed: {text_of(result)[:300]}")
    return text_of(result)


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, str]:
    parser = argparse.ArgumentParser(prog="recall-mcp", description=__doc__.split("\n\n")[0])
    where = parser.add_argument_group("the server")
    where.add_argument("--config", help="mcpServers JSON file (default: $RECALL_MCP_CONFIG, set by --recall-mcp)")
    where.add_argument("--name", help="which server of the file (default: the first)")
    where.add_argument("--url", help="a streamable HTTP server's URL, instead of a file")
    tools = parser.add_argument_group("its tools (default: from the built-in table of known servers)")
    tools.add_argument("--write-tool", help="the tool that stores a step's prompt")
    tools.add_argument("--search-tool", help="the tool that searches with the question")
    tools.add_argument("--write-args", help='JSON arguments of the write tool, e.g. \'{"text": "{prompt}"}\'')
    tools.add_argument("--search-args", help='JSON arguments of the search tool, e.g. \'{"q": "{query}"}\'')
    parser.add_argument("prompt", help="the step's prompt (the harness puts it last)")
    options = parser.parse_args(list(argv))
    return options, options.prompt


def main(argv: Sequence[str] | None = None) -> int:
    options, prompt = parse(sys.argv[1:] if argv is None else argv)
    try:
        import anyio
    except ImportError:
        print("recall-mcp needs the MCP SDK: pip install 'pytest-recall[mcp]'", file=sys.stderr)
        return FAILED
    try:
        name, entry = server_entry(options)
    except ServerError as exc:
        print(f"recall-mcp: {exc}", file=sys.stderr)
        return FAILED
    try:
        found = anyio.run(session_step, entry, options, prompt)
    except Exception as exc:  # the SDK raises exception groups from its task groups
        print(f"recall-mcp: MCP server {name!r} {why(exc)}", file=sys.stderr)
        return FAILED
    print(found, flush=True)
    print(f"recall-mcp: returned {len(found.encode('utf-8'))} bytes", file=sys.stderr)
    return 0


def why(exc: BaseException) -> str:
    """One line for what went wrong starting or talking to a server, from the innermost error."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    if isinstance(exc, ServerError):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"cannot be started: {exc.strerror}: {exc.filename}"
    if isinstance(exc, TimeoutError):
        return f"did not answer within {start_timeout_s():g} s (raise MCP_TIMEOUT, in milliseconds)"
    text = str(exc) or type(exc).__name__
    return f"ended or failed before it answered ({text.splitlines()[0]}): did it crash at start? its stderr is above"


if __name__ == "__main__":
    raise SystemExit(main())
