"""Deterministic lexical embeddings for the fake model's OpenAI-compatible ``POST /v1/embeddings``.

A memory that searches by meaning (OpenClaw's memory-core, mem0, Hermes
Agent's providers) needs an embedder, and a test needs one whose nearness it
can predict: two texts are near exactly when they share words. Each word is
hashed into one of ``dimensions`` buckets with a sign (the hashing trick), the
counts are weighted by ``1 + log(count)`` and the vector is scaled to length 1,
so the cosine of two texts grows with the words they share and is 0 for texts
with none in common (bar a rare bucket collision). A note that holds the
question's words is found; a memory that never stored it finds nothing.
The same text gives the same vector on every machine and in every process:
the hash is SHA-256, never Python's salted ``hash``.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from typing import Any

from pytest_recall.testing.wire import MODEL_NAME, Json, tokens

# OpenAI's text-embedding-3-small has 1536; a small default keeps vector stores small and fast.
DEFAULT_DIMENSIONS = 256
# Bounds on what one request may ask for, far above what any memory sends.
MAX_DIMENSIONS = 4096
MAX_INPUTS = 2048
# Words of three letters or more, lower-cased: "the", "is", "a" would make every text near every other.
_WORD = re.compile(r"[0-9a-z][0-9a-z_.'-]*[0-9a-z]|[0-9]+", re.IGNORECASE)
_STOP_WORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "you",
        "your",
        "with",
        "that",
        "this",
        "from",
        "what",
        "which",
        "have",
        "has",
        "had",
        "not",
        "but",
        "its",
        "into",
        "our",
        "out",
        "who",
        "how",
        "when",
        "where",
        "will",
        "would",
        "can",
        "could",
        "about",
        "there",
        "their",
        "them",
        "then",
        "than",
    ]
)


class EmbeddingRequestError(ValueError):
    """A request the embeddings API would refuse with HTTP 400; the message says why."""


def words(text: str) -> list[str]:
    """The words that place a text: lower-cased, two characters or more, a few stop words left out."""
    found = (word.lower() for word in _WORD.findall(text))
    return [word for word in found if len(word) > 1 and word not in _STOP_WORDS]


def embed(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """The unit vector of ``text``; a text with no words gets a fixed unit vector of its own."""
    counts: dict[str, int] = {}
    for word in words(text):
        counts[word] = counts.get(word, 0) + 1
    vector = [0.0] * dimensions
    for word, count in counts.items():
        digest = hashlib.sha256(word.encode()).digest()
        bucket = int.from_bytes(digest[:8], "big") % dimensions
        sign = 1.0 if digest[8] & 1 else -1.0
        vector[bucket] += sign * (1.0 + math.log(count))
    norm = math.sqrt(sum(value * value for value in vector))
    if norm == 0.0:
        # Any unit vector will do, as long as it is the same one every time: an empty note is near nothing.
        vector[dimensions - 1] = 1.0
        return vector
    return [value / norm for value in vector]


def cosine(first: list[float], second: list[float]) -> float:
    """The cosine of two vectors ``embed`` made (both of length 1, so their dot product)."""
    return sum(a * b for a, b in zip(first, second, strict=True))


def embeddings_response(body: Json) -> Json:
    """The OpenAI embeddings answer to a request body; raises EmbeddingRequestError where OpenAI says 400.

    ``input`` is a string or a list of strings (a list of token ids, which
    OpenAI also takes, is read as its digits: nothing here can decode
    tokens). ``encoding_format`` ``base64`` (the OpenAI Python SDK's default)
    packs each vector as little-endian float32, as the API does.
    """
    texts = _inputs(body.get("input"))
    dimensions = body.get("dimensions", DEFAULT_DIMENSIONS)
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or not 1 <= dimensions <= MAX_DIMENSIONS:
        raise EmbeddingRequestError(f"dimensions must be a whole number from 1 to {MAX_DIMENSIONS}")
    encoding = body.get("encoding_format") or "float"
    if encoding not in ("float", "base64"):
        raise EmbeddingRequestError("encoding_format must be 'float' or 'base64'")
    data = []
    for index, text in enumerate(texts):
        vector = embed(text, dimensions)
        value: Any = _base64(vector) if encoding == "base64" else vector
        data.append({"object": "embedding", "index": index, "embedding": value})
    used = sum(tokens(text) for text in texts)
    model = body.get("model")
    return {
        "object": "list",
        "data": data,
        "model": model if isinstance(model, str) and model else MODEL_NAME,
        "usage": {"prompt_tokens": used, "total_tokens": used},
    }


def _inputs(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value:
        raise EmbeddingRequestError("input must be a string or a non-empty list")
    if len(value) > MAX_INPUTS:
        raise EmbeddingRequestError(f"input holds more than {MAX_INPUTS} texts")
    if all(isinstance(item, int) and not isinstance(item, bool) for item in value):
        return [" ".join(str(item) for item in value)]
    texts = []
    for item in value:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in item):
            texts.append(" ".join(str(t) for t in item))
        else:
            raise EmbeddingRequestError("each input must be a string or a list of token ids")
    return texts


def _base64(vector: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
