"""mem0 open source as a ``recall-provider`` provider, in two arms of one wiring.

- ``pytest_recall.agents.mem0_provider:open_source`` keeps each added text
  as one memory, as it came (``infer=False``): mem0 embeds and stores it.
- ``pytest_recall.agents.mem0_provider:extracting`` is mem0's default
  (``infer=True``): its LLM first says which memories to keep from the text,
  which mem0 then embeds, dedupes and stores. The fake model keeps each
  message whole (:mod:`pytest_recall.testing.fake_extraction`); a real LLM
  rewrites it into facts.

Either way a search ranks the memories by the embedding's cosine (mem0 drops
those under its threshold, 0.1).

Everything mem0 keeps lies in the case's scope folder: its local Qdrant
store (a folder, no server), its history database and its own settings
folder (``MEM0_DIR``), so a case's steps share one memory and cases never do.
Its telemetry is off before mem0 is imported (mem0 reads the switch then).
Its embedder and its LLM are OpenAI-compatible at ``$OPENAI_BASE_URL``
(``recall-provider --model-url`` sets it when it is unset): the fake model's
lexical ``/v1/embeddings`` on loopback by default, any endpoint in use.
``$RECALL_MEM0_DIMS`` is the embeddings' width (default 256, the fake
model's; 1536 for OpenAI's text-embedding-3-small).

mem0 is measured as ``pip install mem0ai`` gives it: vector search alone.
Its BM25 keyword search (the ``extras``, fastembed) and its spaCy lemmatizer
(``nlp``) load models from a hub at run time, which an offline run cannot.

Install with ``pip install 'pytest-recall[mem0]'``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_DIMS = 256
# Whose memories these are, in mem0's terms: one user per scope folder.
USER = "recall"


class Mem0Provider:
    """mem0's ``Memory`` over the scope folder, behind the two methods of the protocol."""

    def __init__(self, memory: Any, infer: bool) -> None:
        self._memory = memory
        self._infer = infer

    def add(self, text: str) -> None:
        self._memory.add([{"role": "user", "content": text}], user_id=USER, infer=self._infer)

    def search(self, query: str, limit: int) -> Sequence[str]:
        found = self._memory.search(query, top_k=limit, filters={"user_id": USER})
        return [str(item["memory"]) for item in found.get("results", [])]


def config(home: Path, env: dict[str, str] | os._Environ[str]) -> dict[str, Any]:
    """mem0's ``Memory.from_config`` settings: every file under ``home``, every model call to ``$OPENAI_BASE_URL``."""
    try:
        dims = int(env.get("RECALL_MEM0_DIMS") or DEFAULT_DIMS)
    except ValueError:
        raise ValueError(f"RECALL_MEM0_DIMS={env['RECALL_MEM0_DIMS']!r} is not a whole number") from None
    openai = {
        "openai_base_url": env.get("OPENAI_BASE_URL"),
        "api_key": env.get("OPENAI_API_KEY") or "no-key-needed-on-loopback",
    }
    return {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "path": str(home / "qdrant"),
                "on_disk": True,
                "collection_name": "recall",
                "embedding_model_dims": dims,
            },
        },
        "embedder": {
            "provider": "openai",
            "config": {"model": "text-embedding-3-small", "embedding_dims": dims, **openai},
        },
        "llm": {"provider": "openai", "config": {"model": "gpt-4o-mini", **openai}},
        "history_db_path": str(home / "history.db"),
    }


def open_source(scope: Path) -> Mem0Provider:
    """The factory of the verbatim arm: each added text one memory, no LLM asked."""
    return Mem0Provider(_memory(scope), infer=False)


def extracting(scope: Path) -> Mem0Provider:
    """The factory of mem0's default arm: its LLM extracts the memories to keep from each added text."""
    return Mem0Provider(_memory(scope), infer=True)


def _memory(scope: Path) -> Any:
    """mem0's open-source ``Memory`` with every file it writes under ``scope/mem0``."""
    home = scope / "mem0"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["MEM0_DIR"] = str(home)
    os.environ["MEM0_TELEMETRY"] = "False"
    # Its notices that the optional extras are missing are no failure of the step; its errors still show.
    logging.getLogger("mem0").setLevel(logging.ERROR)
    try:
        from mem0 import Memory
    except ImportError:
        raise RuntimeError("mem0 is not installed: pip install 'pytest-recall[mem0]'") from None
    return Memory.from_config(config(home, os.environ))
