"""A memory provider in twenty lines: the example of the protocol ``recall-provider`` runs.

``recall-provider pytest_recall.agents.keyword_provider:KeywordStore`` keeps
each added text as one line of ``keywords.jsonl`` in the scope folder, and a
search returns the stored texts that share most words with the query (words
of three letters or more, case folded), best first, ties in the order they
were added. It is no library anyone would choose; it is what the protocol
asks of one, small enough to read at once, and the quick tests' provider.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

_WORD = re.compile(r"[^\W_]{3,}")


def words(text: str) -> set[str]:
    return {word.casefold() for word in _WORD.findall(text)}


class KeywordStore:
    """``KeywordStore(scope)`` is the factory: the class itself, given the case's scope folder."""

    def __init__(self, scope: Path) -> None:
        self.path = scope / "keywords.jsonl"

    def add(self, text: str) -> None:
        with self.path.open("a", encoding="utf-8") as store:
            store.write(json.dumps(text) + "\n")

    def search(self, query: str, limit: int) -> list[str]:
        if not self.path.is_file():
            return []
        stored = [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines()]
        wanted = words(query)
        shared = [(len(wanted & words(text)), -order, text) for order, text in enumerate(stored)]
        return [text for count, _order, text in sorted(shared, reverse=True) if count > 0][:limit]
