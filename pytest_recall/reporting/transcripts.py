"""How much text a record and a report carry: prompts by reference, transcripts by need.

A step's prompt is already on disk in the case folder (or regenerated from
its suite.toml), and a ``long_haystack`` prompt is about a megabyte; a
record names it by size and sha256 with its head and tail, so a reader can
recognise it and check it, without a copy per case. ``--recall-transcripts``
then decides which cases keep their stdout and stderr in the report:
``failed`` (the default) keeps them, and the prompt references, where they
explain a failure; ``all`` keeps everything (full prompts too); ``none``
keeps only scalars and step summaries. A passing case's ``content_hash``
still pins its prompts. The run log always holds the whole record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args

from pytest_recall.scoring import scored_a_pass

TranscriptMode = Literal["failed", "all", "none"]
# The default comes first.
TRANSCRIPT_MODES: tuple[str, ...] = get_args(TranscriptMode)
DEFAULT_TRANSCRIPTS: TranscriptMode = "failed"
# Characters of a prompt's start and end a reference keeps: enough to recognise it.
PROMPT_EDGE_CHARS = 300
# What a step loses where its transcript is not kept: a passing case's prompts are pinned by its content_hash.
_TRANSCRIPT_KEYS = ("prompt", "stdout", "stderr", "terminal")


def prompt_reference(prompt: str) -> dict[str, Any]:
    """A prompt by reference: its size in bytes and sha256 (of the UTF-8 text), with its head and tail.

    A prompt short enough to fit in the head is whole there, and the tail is empty.
    """
    data = prompt.encode("utf-8")
    whole = len(prompt) <= 2 * PROMPT_EDGE_CHARS
    return {
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "head": prompt if whole else prompt[:PROMPT_EDGE_CHARS],
        "tail": "" if whole else prompt[-PROMPT_EDGE_CHARS:],
    }


def prompt_field(prompt: str, *, full: bool) -> str | dict[str, Any]:
    """What a record says of a step's prompt: the text itself with ``--recall-transcripts=all``, else a reference."""
    return prompt if full else prompt_reference(prompt)


def prompt_text(value: Any) -> str:
    """A record's prompt as readable text, whether it holds the prompt or a reference to it."""
    if not isinstance(value, Mapping):
        return "" if value is None else str(value)
    head, tail = str(value.get("head") or ""), str(value.get("tail") or "")
    if not tail:
        return head
    return f"{head}\n[… {value.get('size')} bytes in all, sha256 {str(value.get('sha256'))[:16]}…]\n{tail}"


def transcripts_view(mode: TranscriptMode) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    """What the report keeps of a record under ``--recall-transcripts=mode``."""

    def view(row: Mapping[str, Any]) -> Mapping[str, Any]:
        if mode == "all" or (mode == "failed" and not scored_a_pass(row.get("score"), row.get("error"))):
            return row
        steps = row.get("steps")
        if not isinstance(steps, list):
            return row
        kept = dict(row)
        kept["steps"] = [
            {key: value for key, value in step.items() if key not in _TRANSCRIPT_KEYS}
            if isinstance(step, Mapping)
            else step
            for step in steps
        ]
        return kept

    return view
