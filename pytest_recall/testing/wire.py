"""The three wire formats the fake model speaks: requests read into a :class:`Request`, replies encoded.

Each API's shape is what its CLI parses: Anthropic Messages (content blocks,
``tool_use``, SSE events with names), OpenAI Responses (output items,
``function_call``, ``response.completed`` with usage) and OpenAI Chat
Completions (choices, ``tool_calls``, and when streamed a last chunk with
usage and no choices, then ``[DONE]``); Google's API is in :mod:`wire_gemini`. Token counts are rough but never zero.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

from pytest_recall.testing.exchange import Reply, Request, ToolCall

Json = dict[str, Any]
MODEL_NAME = "fake"
# OpenCode names each session with a request whose system prompt says this, quoting the first prompt.
_TITLE_TASK = re.compile(r"\byou are a title generator\b", re.IGNORECASE)


def _text_of(content: Any) -> str:
    """Every text inside a message's content, whatever its shape, except tool-call arguments."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(part) for part in content)
    if isinstance(content, dict):
        if content.get("type") in ("tool_use", "function_call", "custom_tool_call"):
            return ""
        parts = [content[k] for k in ("text", "output", "content") if k in content]
        return "\n".join(_text_of(part) for part in parts)
    return ""


def read_anthropic(body: Json) -> Request:
    messages: list[Json] = body.get("messages") or []
    after_tool = _tool_ran_this_turn(
        messages,
        is_reply=lambda m: m.get("role") == "assistant" and not _has_block(m, "tool_use"),
        is_result=lambda m: m.get("role") == "user" and _has_block(m, "tool_result"),
    )
    # A message that carries tool results is no person's turn, whatever text comes with it ("Tool loaded.").
    prompt = _latest_user_text(
        messages, lambda m: m.get("role") == "user" and not _has_block(m, "tool_result"), "tool_result"
    )
    context = "\n".join([_text_of(body.get("system")), *(_text_of(m.get("content")) for m in messages)])
    tools = frozenset(str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict))
    results = tuple(
        _text_of(block.get("content"))
        for message in messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )
    calls = _turn_calls(
        messages,
        is_reply=lambda m: m.get("role") == "assistant" and not _has_block(m, "tool_use"),
        calls_of=lambda m: [
            (str(b.get("id")), str(b.get("name")), json.dumps(b.get("input") or {}))
            for b in (m.get("content") if m.get("role") == "assistant" and isinstance(m.get("content"), list) else [])
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ],
        results_of=lambda m: [
            (str(b.get("tool_use_id")), _text_of(b.get("content")))
            for b in (m.get("content") if m.get("role") == "user" and isinstance(m.get("content"), list) else [])
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ],
    )
    side_schema = _output_schema(body, "output_config")
    return Request("anthropic", context, prompt, after_tool, tools, results, side_schema=side_schema, calls=calls)


def read_responses(body: Json) -> Request:
    raw = body.get("input") or []
    items: list[Json] = [{"role": "user", "content": raw}] if isinstance(raw, str) else raw
    after_tool = _tool_ran_this_turn(
        items,
        is_reply=lambda m: m.get("role") == "assistant" and m.get("type", "message") == "message",
        is_result=lambda m: str(m.get("type", "")).endswith("_output"),
    )
    prompt = _latest_user_text(items, lambda m: m.get("role") == "user" and m.get("type", "message") == "message", "")
    context = "\n".join([_text_of(body.get("instructions")), *(_text_of(item) for item in items)])
    tools = frozenset(_responses_tool_names(body.get("tools") or []))
    results = tuple(_text_of(item) for item in items if str(item.get("type", "")).endswith("_output"))
    calls = _turn_calls(
        items,
        is_reply=lambda m: m.get("role") == "assistant" and m.get("type", "message") == "message",
        calls_of=lambda m: (
            [(str(m.get("call_id")), _joined_name(m), str(m.get("arguments") or "{}"))]
            if m.get("type") == "function_call"
            else []
        ),
        results_of=lambda m: [(str(m.get("call_id")), _text_of(m))] if m.get("type") == "function_call_output" else [],
    )
    return Request(
        "responses", context, prompt, after_tool, tools, results, side_schema=_output_schema(body), calls=calls
    )


# Codex offers an MCP server's tools as one namespace (``mcp__<server>``) of functions, and a call names
# the namespace and the function apart; the model sees each as ``<namespace>__<function>``, as Claude Code
# names them.
NAMESPACE_JOIN = "__"


def _responses_tool_names(tools: list[Any]) -> list[str]:
    names = []
    for tool in tools:
        if not isinstance(tool, dict) or not tool.get("name"):
            continue
        if tool.get("type") == "namespace":
            names += [
                f"{tool['name']}{NAMESPACE_JOIN}{inner['name']}"
                for inner in tool.get("tools") or []
                if isinstance(inner, dict) and inner.get("name")
            ]
        names.append(str(tool["name"]))
    return names


def _joined_name(item: Json) -> str:
    namespace = item.get("namespace")
    return f"{namespace}{NAMESPACE_JOIN}{item.get('name')}" if namespace else str(item.get("name"))


def _split_name(tool: str) -> Json:
    """The ``name`` (and ``namespace``) fields of a Responses call of ``tool``."""
    if tool.startswith("mcp" + NAMESPACE_JOIN) and tool.count(NAMESPACE_JOIN) >= 2:
        namespace, _, name = tool.rpartition(NAMESPACE_JOIN)
        return {"name": name, "namespace": namespace}
    return {"name": tool}


def _turn_calls(items: list[Json], is_reply: Any, calls_of: Any, results_of: Any) -> tuple[ToolCall, ...]:
    """The tool calls since the assistant's last final reply, each with its result once one came back."""
    start = next((i + 1 for i in range(len(items) - 1, -1, -1) if is_reply(items[i])), 0)
    made: dict[str, tuple[str, str]] = {}
    results: dict[str, str] = {}
    for item in items[start:]:
        for call_id, name, arguments in calls_of(item):
            made[call_id] = (name, arguments)
        for call_id, text in results_of(item):
            results[call_id] = text
    return tuple(ToolCall(name, arguments, results.get(call_id, "")) for call_id, (name, arguments) in made.items())


def read_chat(body: Json) -> Request:
    messages: list[Json] = body.get("messages") or []
    after_tool = _tool_ran_this_turn(
        messages,
        is_reply=lambda m: m.get("role") == "assistant" and not m.get("tool_calls"),
        is_result=lambda m: m.get("role") == "tool",
    )
    prompt = _latest_user_text(messages, lambda m: m.get("role") == "user" and not _is_internal_context(m), "")
    system = " ".join(_text_of(m.get("content")) for m in messages if m.get("role") == "system")
    if _TITLE_TASK.search(system):
        # The CLI's own side task quotes the person's prompt; it is not a turn of the conversation.
        prompt = ""
    context = "\n".join(_text_of(m.get("content")) for m in messages)
    functions = [t.get("function") for t in body.get("tools") or [] if isinstance(t, dict)]
    tools = frozenset(str(f["name"]) for f in functions if isinstance(f, dict) and f.get("name"))
    results = tuple(_text_of(m.get("content")) for m in messages if m.get("role") == "tool")
    calls = _turn_calls(
        messages,
        is_reply=lambda m: m.get("role") == "assistant" and not m.get("tool_calls"),
        calls_of=lambda m: [
            (str(c.get("id")), str(c["function"].get("name")), str(c["function"].get("arguments") or "{}"))
            for c in (m.get("tool_calls") or [] if m.get("role") == "assistant" else [])
            if isinstance(c, dict) and isinstance(c.get("function"), dict)
        ],
        results_of=lambda m: (
            [(str(m.get("tool_call_id")), _text_of(m.get("content")))] if m.get("role") == "tool" else []
        ),
    )
    return Request("chat", context, prompt, after_tool, tools, results, calls=calls)


# What OpenClaw appends to a turn as a user message of its own (its exec sessions, its subagents): never the prompt.
_INTERNAL_CONTEXT = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"


def _is_internal_context(message: Json) -> bool:
    return _text_of(message.get("content")).lstrip().startswith(_INTERNAL_CONTEXT)


def _tool_ran_this_turn(items: list[Json], is_reply: Any, is_result: Any) -> bool:
    """Whether a tool's result came back since the assistant's last final reply.

    One process may hold a whole conversation (a live session), so a tool
    result of an earlier turn must not make a new prompt look like the end of
    a tool call. What a CLI appends after a result (Codex adds the AGENTS.md it
    just grew as a user message) does not end the turn either: only a reply does.
    """
    for item in reversed(items):
        if is_result(item):
            return True
        if is_reply(item):
            return False
    return False


def _has_block(message: Json, kind: str) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == kind for b in content)


def _output_schema(body: Json, holder: str = "text") -> Json | None:
    """The JSON schema a request asks its reply to follow, if any: the CLI's own side task (a title).

    The Responses API takes it in ``text.format``, Anthropic's Messages API in ``output_config.format``.
    """
    settings = body.get(holder)
    output = settings.get("format") if isinstance(settings, dict) else None
    if isinstance(output, dict) and output.get("type") == "json_schema" and isinstance(output.get("schema"), dict):
        return dict(output["schema"])
    return None


def _latest_user_text(messages: list[Json], is_user: Any, skip_block: str) -> str:
    """The newest user message that holds text (a tool result alone is not a prompt)."""
    for message in reversed(messages):
        if not is_user(message):
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = [b for b in content if not (isinstance(b, dict) and b.get("type") == skip_block)]
        text = _text_of(content)
        if text.strip():
            return text
    return ""


def tokens(text: str) -> int:
    """A rough count, about four characters a token, never zero: usage must be visible."""
    return max(1, len(text) // 4)


def anthropic_events(reply: Reply, model: str, tokens_in: int) -> Iterator[tuple[str, Json]]:
    message_id = f"msg_{uuid.uuid4().hex[:24]}"
    usage_in = {"input_tokens": tokens_in, "output_tokens": 1, "cache_creation_input_tokens": 0}
    usage_in["cache_read_input_tokens"] = 0
    start = {"id": message_id, "type": "message", "role": "assistant", "model": model, "content": []}
    yield "message_start", {"type": "message_start", "message": {**start, "stop_reason": None, "usage": usage_in}}
    if reply.tool:
        block: Json = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": reply.tool, "input": {}}
        delta: Json = {"type": "input_json_delta", "partial_json": reply.tool_input}
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": reply.text}
    yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    stop = "tool_use" if reply.tool else "end_turn"
    out = {"output_tokens": tokens(reply.text + reply.tool_input)}
    yield (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": out},
    )
    yield "message_stop", {"type": "message_stop"}


def anthropic_message(reply: Reply, model: str, tokens_in: int) -> Json:
    if reply.tool:
        content: list[Json] = [
            {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": reply.tool}
            | {"input": json.loads(reply.tool_input)}
        ]
    else:
        content = [{"type": "text", "text": reply.text}]
    usage = {"input_tokens": tokens_in, "output_tokens": tokens(reply.text + reply.tool_input)}
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.tool else "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def responses_events(reply: Reply, model: str, tokens_in: int) -> Iterator[tuple[str, Json]]:
    response_id = f"resp_{uuid.uuid4().hex[:24]}"
    yield "response.created", {"type": "response.created", "response": {"id": response_id, "model": model}}
    item_id = f"item_{uuid.uuid4().hex[:16]}"
    if reply.tool:
        item: Json = {"type": "function_call", "id": item_id, "call_id": f"call_{uuid.uuid4().hex[:16]}"}
        item |= _split_name(reply.tool) | {"arguments": reply.tool_input, "status": "completed"}
    else:
        item = {"type": "message", "id": item_id, "role": "assistant", "status": "completed"}
        item["content"] = [{"type": "output_text", "text": reply.text, "annotations": []}]
        yield (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "content": [], "status": "in_progress"},
            },
        )
        yield (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": reply.text,
            },
        )
    yield "response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}
    tokens_out = tokens(reply.text + reply.tool_input)
    usage = {"input_tokens": tokens_in, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": tokens_out}
    usage |= {"output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": tokens_in + tokens_out}
    done = {"id": response_id, "model": model, "status": "completed", "output": [item], "usage": usage}
    yield "response.completed", {"type": "response.completed", "response": done}


def _tool_calls(reply: Reply) -> list[Json]:
    call = {"name": reply.tool, "arguments": reply.tool_input}
    return [{"index": 0, "id": f"call_{uuid.uuid4().hex[:16]}", "type": "function", "function": call}]


def chat_completion(reply: Reply, model: str, tokens_in: int) -> Json:
    tokens_out = tokens(reply.text + reply.tool_input)
    message: Json = {"role": "assistant", "content": None if reply.tool else reply.text}
    if reply.tool:
        message["tool_calls"] = _tool_calls(reply)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool else "stop"}],
        "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out},
    }


def chat_chunks(reply: Reply, model: str, tokens_in: int) -> Iterator[tuple[str, Json]]:
    whole = chat_completion(reply, model, tokens_in)
    head = {"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"], "model": model}
    yield "", {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
    choice = whole["choices"][0]
    delta: Json = {"tool_calls": choice["message"]["tool_calls"]} if reply.tool else {"content": reply.text}
    yield "", {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield "", {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    yield "", {**head, "choices": [], "usage": whole["usage"]}


READERS = {"/v1/messages": read_anthropic, "/v1/responses": read_responses, "/v1/chat/completions": read_chat}
