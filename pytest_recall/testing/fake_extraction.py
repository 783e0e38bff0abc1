"""mem0's fact extraction, answered by the fake model: each new message is kept whole as one memory.

mem0's ``Memory.add`` with ``infer=True`` (its default) asks its LLM, in
one JSON-mode chat request, which memories to keep from the new messages;
its prompt ends in sections ``## New Messages``, ``## Observation Date`` and
``# Output:``, and the answer is ``{"memory": [{"id": ..., "text": ...}]}``.
A real model rewrites the messages into facts. The fake model extracts
nothing it was not told: each new user or assistant message becomes one
memory, word for word, so what mem0 then embeds, dedupes and stores is what
the step said, and a run measures mem0's pipeline around its LLM rather
than a guess at what a model would have extracted.
"""

from __future__ import annotations

import json
import re

_NEW_MESSAGES = re.compile(r"^## New Messages\n(.*?)\n+## Observation Date\n", re.MULTILINE | re.DOTALL)
# mem0 writes each message as "role: content" (its parse_messages); a content may run over several lines.
_MESSAGE = re.compile(r"^(user|assistant|system): ", re.MULTILINE)


def is_extraction_prompt(prompt: str) -> bool:
    """Whether ``prompt`` is mem0's extraction request (its user turn, as ``generate_additive_extraction_prompt``)."""
    return prompt.rstrip().endswith("# Output:") and _NEW_MESSAGES.search(prompt) is not None


def extraction_reply(prompt: str) -> str:
    """The JSON mem0 reads back: one memory per user or assistant message in the prompt's new messages."""
    found = _NEW_MESSAGES.search(prompt)
    section = found.group(1) if found else ""
    starts = list(_MESSAGE.finditer(section))
    memories: list[dict[str, str]] = []
    for index, start in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(section)
        text = section[start.end() : end].strip()
        if start.group(1) != "system" and text:
            memories.append({"id": str(len(memories)), "text": text})
    return json.dumps({"memory": memories}, ensure_ascii=False)
