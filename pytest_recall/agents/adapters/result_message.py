"""The ``result`` message that ends the JSON output of Claude Code and of Qwen Code, read into an :class:`Outcome`.

Qwen Code's headless output follows Claude Code's: one JSON message a line
(``system``, ``assistant``, ``user``), then a ``result`` with the answer, an
``is_error`` flag, a ``subtype`` that is ``success`` when the turn ended
well, the usage and, for Claude Code, ``total_cost_usd``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_recall.agents.adapters.common import Outcome, json_events, json_number, json_object, stream_reader


@stream_reader
def read_result(stdout: str, cli: str) -> Outcome:
    """The last ``result`` message; every other line is chatter for the transcript."""
    return result_of(list(json_events(stdout)), cli)


def result_of(events: Iterable[dict[str, Any]], cli: str) -> Outcome:
    """The last ``result`` message among the CLI's JSON messages, read once (see :func:`json_events`)."""
    result: dict[str, Any] | None = None
    for document in events:
        if document.get("type") == "result":
            result = document
    if result is None:
        return Outcome("", ok=False, failure=f"{cli} printed no result")
    cost = result.get("total_cost_usd")
    usage = json_object(result.get("usage"))
    answer = str(result.get("result") or "")
    failed = bool(result.get("is_error")) or result.get("subtype") != "success"
    return Outcome(
        answer,
        ok=not failed,
        cost_usd=json_number(cost) if isinstance(cost, (int, float)) else None,
        tokens_in=_count(usage.get("input_tokens")),
        tokens_out=_count(usage.get("output_tokens")),
        failure=f"{cli} reported an error ({result.get('subtype')}): {answer}" if failed else "",
    )


def _count(value: Any) -> int | None:
    return int(json_number(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
