"""``recall-pi [EXTRA ARGS...] PROMPT``: pi (``@mariozechner/pi-coding-agent``) in print mode, answer and usage
read from its JSON events.

``pi --mode json`` runs one prompt and exits, printing every event of the
session, one JSON object a line. The prompt goes on stdin: a positional
prompt that starts with ``-`` or ``@`` would be read as an option or a file
to attach (pi trims the whitespace around stdin, nothing else). Each
assistant message ends with a ``message_end`` event that holds its usage
(tokens and dollars) and its ``stopReason``; the answer is the text of the
last one. pi asks no permission for its tools, so nothing waits for a person.

A model that fails does not change pi's exit status: pi retries it three
times (2, 4, then 8 seconds apart) and exits 0 with an assistant message
whose ``stopReason`` is ``error``; the adapter reports that as a failure.
pi's memory is its context files: the global ``AGENTS.md`` in its agent
folder (``~/.pi/agent``, or ``$PI_CODING_AGENT_DIR``) is loaded into every
session. ``PI_OFFLINE`` keeps it from update checks and install telemetry.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_recall.agents.adapters.common import (
    Adapter,
    Outcome,
    chatter,
    json_events,
    json_number,
    json_object,
    stream_reader,
)
from pytest_recall.agents.adapters.print_run import ModelAt, PrintRun

ADAPTER = Adapter(
    script="recall-pi",
    cli="pi",
    bin_variable="RECALL_PI_BIN",
    package="npm @mariozechner/pi-coding-agent",
    tested="0.73.1",
    memory="~/.pi/agent/AGENTS.md (or $PI_CODING_AGENT_DIR/AGENTS.md), loaded into every session",
    home_copy=".pi/agent/models.json,.pi/agent/settings.json,.pi/agent/auth.json",
    sandbox_bind="the npm prefix that holds node_modules/@mariozechner/pi-coding-agent, and the Node that runs it",
)
UNATTENDED = ["--mode", "json"]
# Nothing but the model API: no update checks, no install telemetry.
QUIET_ENV = {"PI_OFFLINE": "1"}
FAILED_STOPS = ("error", "aborted")


@stream_reader
def read_events(stdout: str) -> Outcome:
    """The last assistant message is the answer; tokens and dollars add up over every assistant message."""
    last: dict[str, Any] | None = None
    tokens_in = tokens_out = 0
    cost = 0.0
    for event in json_events(stdout):
        message = json_object(event.get("message"))
        if event.get("type") == "message_end" and message.get("role") == "assistant":
            last = message
            usage = json_object(message.get("usage"))
            tokens_in += int(json_number(usage.get("input")))
            tokens_out += int(json_number(usage.get("output")))
            cost += json_number(json_object(usage.get("cost")).get("total"))
        if event.get("type") != "message_update":  # the deltas repeat the message: the transcript keeps the rest
            chatter(json.dumps(event))
    content = (last or {}).get("content")
    text = "".join(
        str(part.get("text") or "")
        for part in (content if isinstance(content, list) else [])
        if isinstance(part, dict) and part.get("type") == "text"
    )
    stop = (last or {}).get("stopReason")
    ok = last is not None and stop not in FAILED_STOPS
    failure = "no assistant message" if last is None else str(last.get("errorMessage") or f"stopped: {stop}")
    return Outcome(
        text,
        ok=ok,
        # pi prices a model of models.json at 0 unless its cost is given: unknown, not free.
        cost_usd=cost or None,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        failure="" if ok else f"pi: {failure}",
    )


def model_base_url(extra: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The ``baseUrl`` in models.json of the provider this run uses, if models.json names one.

    The provider is ``--provider``'s, or the prefix of ``--model PROVIDER/ID``,
    else settings.json's ``defaultProvider``; anything unreadable gives None,
    and pi then reports an unreachable model itself.
    """
    folder = Path(os.path.expanduser(env.get("PI_CODING_AGENT_DIR") or os.path.join(env.get("HOME", "~"), ".pi/agent")))
    try:
        provider = _named_provider(extra) or _read_json(folder / "settings.json")["defaultProvider"]
        url = _read_json(folder / "models.json")["providers"][provider]["baseUrl"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return url if isinstance(url, str) else None


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _named_provider(extra: Sequence[str]) -> str | None:
    for flag, value in itertools.pairwise(extra):
        if flag == "--provider":
            return value
        if flag == "--model" and "/" in value:
            return value.split("/", 1)[0]
    return None


ROW = PrintRun(
    ADAPTER,
    read_events,
    flags=UNATTENDED,
    env_under=QUIET_ENV,
    model=ModelAt("models.json's baseUrl of pi's provider", model_base_url),
)
main = ROW.main
