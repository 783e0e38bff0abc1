"""Google's Generative Language API as the fake model speaks it, for Gemini CLI.

Gemini CLI (through the ``@google/genai`` SDK) posts to
``/v1beta/models/<model>:generateContent`` for one whole reply and to
``…:streamGenerateContent`` for a stream: server-sent events with
``?alt=sse``, else one JSON array of the same chunks. A conversation is a
list of ``contents``, each ``{"role": "user" | "model", "parts": [...]}``;
a part holds ``text``, a ``functionCall`` (``name`` and ``args`` as an
object) or a ``functionResponse`` (``name`` and a ``response`` object). The
tools are ``functionDeclarations`` inside ``tools``; a structured side reply
is asked for with ``generationConfig.responseMimeType`` of JSON and a
``responseJsonSchema`` (or the older ``responseSchema``). Every reply
carries ``usageMetadata``, which is where the CLI reads tokens.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from pytest_recall.testing.exchange import Reply, Request

Json = dict[str, Any]
# "/v1beta/models/gemini-2.5-pro:streamGenerateContent": the model and the method, whatever the API version.
_PATH = re.compile(r"^/(?:v\d+\w*/)?models/(?P<model>[^/:]+):(?P<method>\w+)$")
METHODS = ("generateContent", "streamGenerateContent", "countTokens")


def route(path: str) -> tuple[str, str] | None:
    """``(model, method)`` of a Generative Language API path the fake model serves, else None."""
    found = _PATH.match(path)
    if found is None or found["method"] not in METHODS:
        return None
    return found["model"], found["method"]


def _part_text(part: Any) -> str:
    """What a part says: its text, or a function's response as JSON; never a call's arguments."""
    if not isinstance(part, dict) or part.get("thought"):
        return ""
    if isinstance(part.get("text"), str):
        return str(part["text"])
    response = part.get("functionResponse")
    if isinstance(response, dict):
        return json.dumps(response.get("response"), ensure_ascii=False)
    return ""


def _parts(content: Any) -> list[Any]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return parts if isinstance(parts, list) else []


def _has(content: Json, key: str) -> bool:
    return any(isinstance(part, dict) and key in part for part in _parts(content))


def _text(content: Any) -> str:
    return "\n".join(text for text in (_part_text(part) for part in _parts(content)) if text)


def read_gemini(body: Json) -> Request:
    contents: list[Json] = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    after_tool = False
    for content in reversed(contents):
        # Since the model's last reply that was not a call: has a function's response come back?
        if content.get("role") == "user" and _has(content, "functionResponse"):
            after_tool = True
            break
        if content.get("role") == "model" and not _has(content, "functionCall"):
            break
    # The newest text a person typed: Gemini CLI puts its <session_context> in an earlier part of the same turn.
    typed = [
        _part_text(part)
        for content in contents
        if content.get("role", "user") == "user" and not _has(content, "functionResponse")
        for part in _parts(content)
    ]
    prompt = next((text for text in reversed(typed) if text.strip()), "")
    context = "\n".join([_text(body.get("systemInstruction")), *(_text(content) for content in contents)])
    tools = frozenset(
        str(declaration.get("name"))
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
        for declaration in tool.get("functionDeclarations") or []
        if isinstance(declaration, dict) and declaration.get("name")
    )
    results = tuple(
        _part_text(part)
        for content in contents
        for part in _parts(content)
        if isinstance(part, dict) and "functionResponse" in part
    )
    return Request("gemini", context, prompt, after_tool, tools, results, side_schema=_json_schema(body))


def _json_schema(body: Json) -> Json | None:
    """The schema of a JSON reply the CLI asked for itself (its router, its loop check), if any."""
    config = body.get("generationConfig")
    if not isinstance(config, dict) or config.get("responseMimeType") != "application/json":
        return None
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return _lower_types(schema) if isinstance(schema, dict) else {"type": "object"}


def _lower_types(schema: Any) -> Any:
    """The older ``responseSchema`` spells types in capitals (``OBJECT``, ``STRING``): JSON Schema does not."""
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_lower_types(item) for item in schema]
    return schema


def _reply_parts(reply: Reply) -> list[Json]:
    if reply.tool:
        return [{"functionCall": {"name": reply.tool, "args": json.loads(reply.tool_input or "{}")}}]
    return [{"text": reply.text}]


def _usage(tokens_in: int, tokens_out: int) -> Json:
    total = tokens_in + tokens_out
    return {"promptTokenCount": tokens_in, "candidatesTokenCount": tokens_out, "totalTokenCount": total}


def gemini_response(reply: Reply, model: str, tokens_in: int, tokens_out: int) -> Json:
    """One whole ``GenerateContentResponse``."""
    candidate = {"content": {"role": "model", "parts": _reply_parts(reply)}, "finishReason": "STOP", "index": 0}
    return {"candidates": [candidate], "usageMetadata": _usage(tokens_in, tokens_out), "modelVersion": model}


def gemini_chunks(reply: Reply, model: str, tokens_in: int, tokens_out: int) -> Iterator[Json]:
    """The same reply streamed: the parts first, then an empty text that finishes it with the usage."""
    usage = _usage(tokens_in, 0)
    yield {
        "candidates": [{"content": {"role": "model", "parts": _reply_parts(reply)}, "index": 0}],
        "usageMetadata": usage,
        "modelVersion": model,
    }
    last = {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}
    yield {"candidates": [last], "usageMetadata": _usage(tokens_in, tokens_out), "modelVersion": model}


def count_tokens(tokens_in: int) -> Json:
    return {"totalTokens": tokens_in}
