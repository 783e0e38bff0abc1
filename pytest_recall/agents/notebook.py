"""The notebook: a small agent with a real memory, kept in SQLite.

In a session that shows it a ledger (or an audit trail) it works out what is
asked, says it, and writes it down. In a later, fresh session it answers
from its notebook alone, or says UNKNOWN. It is the reference that shows a
suite can be solved and that memory is what solves it.

The notebook lives in ``$RECALL_SCOPE_DIR/notebook.sqlite`` when the harness
gives a scope, else in ``$XDG_DATA_HOME/pytest-recall/notebook.sqlite``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

from pytest_recall.agents import audit_solver, ledger_solver

UNKNOWN = "UNKNOWN"


def notebook_path() -> Path:
    scope = os.environ.get("RECALL_SCOPE_DIR")
    if scope:
        return Path(scope) / "notebook.sqlite"
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data_home) / "pytest-recall" / "notebook.sqlite"


class Notebook:
    """Facts by key, newest wins; and audit trails, newest wins."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS facts (key TEXT, value TEXT, at INTEGER PRIMARY KEY)")
        self._db.execute("CREATE TABLE IF NOT EXISTS trails (body TEXT, at INTEGER PRIMARY KEY)")

    def remember(self, key: str, value: str) -> None:
        with self._db:
            self._db.execute("INSERT INTO facts (key, value) VALUES (?, ?)", (key, value))

    def recall(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM facts WHERE key = ? ORDER BY at DESC LIMIT 1", (key,)).fetchone()
        return None if row is None else str(row[0])

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


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    prompt = args[-1] if args else sys.stdin.read()
    notebook = Notebook(notebook_path())
    try:
        print(respond(prompt, notebook))
    finally:
        notebook.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
