"""recall-retrieval: a plain keyword memory, the baseline the public benchmarks deserve.

Shown a session (a step of an imported LongMemEval or LoCoMo suite), it
stores every line of it, with the session's date, in an SQLite FTS5 table
under ``$RECALL_SCOPE_DIR`` and replies OK. Asked a question, it finds the
stored line that best matches the question's words (BM25 over
Porter-stemmed tokens) and answers with that line's sentence sharing most of
them, without the speaker's name; a question about when (``when``, ``date``,
``year``, ...) also gets the session's date. With nothing stored, or nothing
matching, it says the question was not mentioned.

It is not an LLM and reasons about nothing: it shows what a keyword memory
recovers through the harness, between the amnesiac's floor and a real
agent's memory.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from pathlib import Path

DB_NAME = "retrieval.sqlite"
NOT_MENTIONED = "Not mentioned in my memory (UNKNOWN)"
STORE_CUE = "Reply OK once you have stored what you need."
_SESSION_HEADER = re.compile(r"^(?:Chat session|Session) \d+ of \d+, held (?:on|at) (.+):$")
_QUESTION = re.compile(r"^Question: (.+)$", re.MULTILINE)
_WORD = re.compile(r"[^\W_]+")
_SPEAKER = re.compile(r"^[^:]{1,40}: ")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WHEN = re.compile(r"\b(?:when|date|year|month|day|days|weeks|ago|how long)\b", re.IGNORECASE)
# Words no question is about; matching on them would rank every line alike.
STOPWORDS = frozenset(
    """
    a about after again all am an and any are as at be been before being but by can could did do does doing
    during for from had has have having he her here hers him his how i if in into is it its just me more most
    my no nor not of on once only or other our out over own same she should so some such than that the their
    them then there these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours ever
    """.split()  # noqa: SIM905
)


def database(scope: Path) -> sqlite3.Connection:
    scope.mkdir(parents=True, exist_ok=True)
    return _with_table(sqlite3.connect(scope / DB_NAME))


def _with_table(db: sqlite3.Connection) -> sqlite3.Connection:
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS lines USING fts5(text, date UNINDEXED, tokenize='porter unicode61')")
    return db


def told_sessions(prompt: str) -> str | None:
    """The sessions a prompt tells (from its first session header on), or None for a prompt that tells none."""
    lines = prompt.splitlines()
    first = next((i for i, line in enumerate(lines) if _SESSION_HEADER.match(" ".join(line.split()))), None)
    if first is None:
        return None
    return "\n".join(line for line in lines[first:] if line.strip() != STORE_CUE).strip()


def answer_from(told: str, question: str) -> str:
    """What this agent answers to ``question`` having stored the sessions in ``told``, kept in memory only.

    The fake model answers an imported suite's question this way from the
    sessions its notes kept, so a dry run scores what keyword recall over
    those notes recovers, never more than the agent's memory held.
    """
    db = _with_table(sqlite3.connect(":memory:"))
    try:
        store(db, told)
        return best_line(db, question) or NOT_MENTIONED
    finally:
        db.close()


def store(db: sqlite3.Connection, prompt: str) -> int:
    """Every line of every session in the prompt, with its session's date; how many were stored."""
    date = None
    rows = []
    for raw in prompt.splitlines():
        line = " ".join(raw.split())
        header = _SESSION_HEADER.match(line)
        if header:
            date = header.group(1)
        elif date is not None and line and line != STORE_CUE:
            rows.append((line, date))
    with db:
        db.executemany("INSERT INTO lines (text, date) VALUES (?, ?)", rows)
    return len(rows)


def content_words(text: str) -> list[str]:
    return [w for w in (m.lower() for m in _WORD.findall(text)) if w not in STOPWORDS]


def best_line(db: sqlite3.Connection, question: str) -> str | None:
    words = content_words(question)
    if not words:
        return None
    query = " OR ".join(f'"{word}"' for word in dict.fromkeys(words))
    row = db.execute(
        "SELECT text, date FROM lines WHERE lines MATCH ? ORDER BY bm25(lines), rowid LIMIT 1", (query,)
    ).fetchone()
    if row is None:
        return None
    answer = best_sentence(_SPEAKER.sub("", row[0], count=1), words)
    return f"{answer} ({row[1]})" if _WHEN.search(question) else answer


def best_sentence(text: str, words: list[str]) -> str:
    """The sentence of ``text`` that shares most stemmed words with the question; the first of equals."""
    wanted = {_stem(word) for word in words}
    sentences = [part for part in _SENTENCE_END.split(text) if part.strip()] or [text]
    return max(sentences, key=lambda part: len(wanted & {_stem(w) for w in content_words(part)})).strip()


def _stem(word: str) -> str:
    from pytest_recall.scoring.locomo_f1 import stem

    return stem(word)


def respond(prompt: str, scope: Path) -> str:
    if STORE_CUE in prompt:
        store(database(scope), prompt)
        return "OK"
    asked = _QUESTION.search(prompt)
    if asked is None or not (scope / DB_NAME).is_file():
        return NOT_MENTIONED
    return best_line(database(scope), asked.group(1)) or NOT_MENTIONED


def read_prompt(args: list[str]) -> str:
    """The prompt as the harness delivers it: the last argument, else the prompt file, else stdin."""
    if args:
        return args[-1]
    prompt_file = os.environ.get("RECALL_PROMPT_FILE")
    if prompt_file:
        return Path(prompt_file).read_text(encoding="utf-8")
    return sys.stdin.read()


def main(argv: list[str] | None = None) -> int:
    scope = os.environ.get("RECALL_SCOPE_DIR")
    if not scope:
        print("recall-retrieval: RECALL_SCOPE_DIR is not set; run it under pytest-recall", file=sys.stderr)
        return 2
    print(respond(read_prompt(sys.argv[1:] if argv is None else argv), Path(scope)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
