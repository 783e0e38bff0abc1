"""The notebook: a small agent with a real memory, kept in SQLite.

In a session that shows it a ledger (or an audit trail) it works out what is
asked, says it, and writes it down. In a later, fresh session it answers
from its notebook alone, or says UNKNOWN. It is the reference that shows a
suite can be solved and that memory is what solves it.

The notebook lives in ``$RECALL_SCOPE_DIR/notebook.sqlite`` when the harness
gives a scope, else in ``$XDG_DATA_HOME/pytest-recall/notebook.sqlite``. With
``RECALL_NOTEBOOK_MEMORY=agents-md`` it keeps what coding tasks teach in the
workspace's ``AGENTS.md`` instead, as repository-memory agents do.

``recall-notebook PROMPT`` answers one prompt and exits (fresh sessions);
``recall-notebook --repl`` is the same agent as a REPL for live (continue)
sessions: it prints ``notebook> ``, reads a turn, answers, and prints the
prompt again, until end of input.
"""

from __future__ import annotations

import json
import os
import select
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

from pytest_recall.agents import abilities_solver, audit_solver, coding_solver, ledger_solver

UNKNOWN = "UNKNOWN"
REPL_PROMPT = "notebook> "
# Set to any value, the notebook says on stderr how much it holds: tests read it from the record.
STATS_VAR = "RECALL_NOTEBOOK_STATS"
# Set to "agents-md", the notebook keeps what coding tasks teach in the workspace's AGENTS.md instead.
MEMORY_VAR = "RECALL_NOTEBOOK_MEMORY"
# A turn arrives on a terminal one line at a time; this much silence means it is all in.
TURN_QUIET_S = 0.2


def notebook_path() -> Path:
    scope = os.environ.get("RECALL_SCOPE_DIR")
    if scope:
        return Path(scope) / "notebook.sqlite"
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data_home) / "pytest-recall" / "notebook.sqlite"


class Notebook:
    """Facts by key, newest wins; and audit trails, newest wins."""

    def __init__(self, path: Path | None) -> None:
        """A notebook on disk, or with ``None`` one in memory that lives as long as the process."""
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(":memory:" if path is None else path)
        self._db.execute("CREATE TABLE IF NOT EXISTS facts (key TEXT, value TEXT, at INTEGER PRIMARY KEY)")
        self._db.execute("CREATE TABLE IF NOT EXISTS trails (body TEXT, at INTEGER PRIMARY KEY)")

    def remember(self, key: str, value: str) -> None:
        with self._db:
            self._db.execute("INSERT INTO facts (key, value) VALUES (?, ?)", (key, value))

    def recall(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM facts WHERE key = ? ORDER BY at DESC LIMIT 1", (key,)).fetchone()
        return None if row is None else str(row[0])

    def recall_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Every key under ``prefix`` with its newest value."""
        rows = self._db.execute(
            "SELECT key, value FROM facts WHERE at IN (SELECT MAX(at) FROM facts WHERE substr(key, 1, ?) = ?"
            " GROUP BY key) ORDER BY key",
            (len(prefix), prefix),
        ).fetchall()
        return [(str(key), str(value)) for key, value in rows]

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM facts").fetchone()[0])

    def keep_trail(self, body: str) -> None:
        with self._db:
            self._db.execute("INSERT INTO trails (body) VALUES (?)", (body,))

    def latest_trail(self) -> str | None:
        row = self._db.execute("SELECT body FROM trails ORDER BY at DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def close(self) -> None:
        self._db.close()


def respond(prompt: str, notebook: Notebook) -> str:
    """One turn: learn from what the prompt shows, or answer from memory."""
    if coding_solver.is_session(prompt):
        if os.environ.get(MEMORY_VAR) == "agents-md":
            return coding_solver.respond(prompt, coding_solver.AgentsMdMemory(Path.cwd()))
        return coding_solver.respond(prompt, notebook)
    if abilities_solver.is_session(prompt):
        return abilities_solver.respond(prompt, notebook)
    solved = ledger_solver.solve(prompt)
    if solved is not None:
        key, value = solved
        notebook.remember(key, value)
        return f"Noted: the answer is {value}."
    asked = ledger_solver.recall_key(prompt)
    if asked is not None:
        return notebook.recall(asked) or UNKNOWN
    trail = audit_solver.parse_trail(prompt)
    if trail is not None:
        notebook.keep_trail(trail)
    else:
        trail = notebook.latest_trail()
    question = audit_solver.question_of(prompt)
    if trail is not None and question is not None:
        return audit_solver.format_answer(audit_solver.answer(trail, question))
    if question is not None:
        return json.dumps({"value": None, "evidence": []})
    return UNKNOWN


def turns(fd: int = 0, quiet_s: float = TURN_QUIET_S) -> Iterator[str]:
    """Each turn read from ``fd`` until end of input.

    A terminal hands a multi-line prompt over line by line, with nothing to
    mark its end, so a turn is every line that arrives until the input has
    been quiet for ``quiet_s``.
    """
    while True:
        chunks: list[bytes] = []
        at_end = False
        while True:
            ready, _, _ = select.select([fd], [], [], None if not chunks else quiet_s)
            if not ready:
                break
            data = os.read(fd, 1 << 16)
            if not data:
                at_end = True
                break
            chunks.append(data)
        if chunks:
            yield b"".join(chunks).decode("utf-8", "replace")
        if at_end:
            return


def repl(notebook: Notebook, prompt: str = REPL_PROMPT) -> None:
    """Answer turn after turn, showing ``prompt`` whenever ready for the next."""
    print(prompt, end="", flush=True)
    for turn in turns():
        print(respond(turn, notebook), flush=True)
        print(prompt, end="", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    notebook = Notebook(notebook_path())
    try:
        if args == ["--repl"]:
            repl(notebook)
        else:
            print(respond(args[-1] if args else sys.stdin.read(), notebook))
        if os.environ.get(STATS_VAR):
            held = len(abilities_solver.accounts_held(notebook))
            print(f"notebook: {notebook.count()} notes, {held} ledger accounts", file=sys.stderr)
    finally:
        notebook.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
