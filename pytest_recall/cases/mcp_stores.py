"""Where known MCP memory servers keep their store, and which ``--recall-mcp`` entries leave it outside a case.

A server started without its store variable keeps the store where its
authors chose, not in the case's scope: ``@modelcontextprotocol/server-memory``
writes ``memory.jsonl`` beside its own package (a relative
``MEMORY_FILE_PATH`` too), basic-memory its notes and SQLite index under HOME.
Such a store outlives the case: notes from one case reach the next, and the
no-memory control finds them, so the score is not memory. A run says so once
at start-up, one line per server. Only servers known here are judged; for any
other, nothing is said rather than guessed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class KnownStore:
    """A server recognised by a word of its command line, and the variables that place its store."""

    name: str
    word: str
    variables: tuple[str, ...]
    # Where the store is when a variable is unset; None: under HOME, which is the case's own with --recall-home=case.
    default: str | None
    safe_form: str


KNOWN_STORES = (
    KnownStore(
        "@modelcontextprotocol/server-memory",
        "server-memory",
        ("MEMORY_FILE_PATH",),
        "beside its package",
        '"MEMORY_FILE_PATH": "{scope}/memory.jsonl"',
    ),
    KnownStore(
        "basic-memory",
        "basic-memory",
        ("BASIC_MEMORY_HOME", "BASIC_MEMORY_CONFIG_DIR"),
        None,
        '"BASIC_MEMORY_HOME": "{scope}/notes", "BASIC_MEMORY_CONFIG_DIR": "{scope}/basic-memory"',
    ),
)


def unscoped_store_lines(
    servers: Mapping[str, Any] | None, *, home_per_case: bool, run_env: Sequence[tuple[str, str | None]] = ()
) -> list[str]:
    """One warning line for each known server in ``servers`` whose store would be shared between cases.

    ``run_env`` is ``--recall-env``: a variable set there reaches the server
    too (the CLIs start their servers with their own environment), unless
    the server's entry sets it itself.
    """
    lines = []
    for name, entry in (servers or {}).items():
        known = _known(entry)
        if known is None:
            continue
        env = {**dict(run_env), **(entry.get("env") or {})}
        outside = [_placed(variable, env.get(variable), known, home_per_case) for variable in known.variables]
        where = next((place for place in outside if place is not None), None)
        if where is not None:
            lines.append(
                f"WARNING --recall-mcp: server {name!r} ({known.name}) keeps its store {where}, shared by every case "
                f"and the no-memory control, so its score is not one case's memory; set {known.safe_form} in its "
                '"env" (docs/mcp.md)'
            )
    return lines


def _known(entry: Any) -> KnownStore | None:
    """The known server an entry starts, by its command or an argument (``npx -y @.../server-memory``)."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("command"), str):
        return None
    words = [os.path.basename(entry["command"]), *entry.get("args", [])]
    return next((known for known in KNOWN_STORES if any(known.word in word for word in words)), None)


def _placed(variable: str, value: str | None, known: KnownStore, home_per_case: bool) -> str | None:
    """Where the store lies when outside the case's scope and HOME, said for the warning; None when inside."""
    if value is None:
        if known.default is not None:
            return f"{known.default} ({variable} is unset)"
        return None if home_per_case else f"in your HOME, shared under --recall-home=user ({variable} is unset)"
    if value.startswith("{scope}") or (home_per_case and value.startswith("{home}")):
        return None
    return f"at {variable}={value}, outside the case's scope"
