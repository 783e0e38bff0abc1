"""``recall-copilot [EXTRA ARGS...] PROMPT``: GitHub Copilot CLI in prompt mode, unattended.

``copilot -p`` runs one prompt; ``--output-format json`` prints one event a
line (``assistant.message`` for each message, ``session.error`` when the
model failed, a last ``result`` with the exit code and the session's id), so
stdout holds the answer alone. ``--allow-all`` approves every tool, path and
URL, and ``--no-ask-user`` takes away the tool that would wait for a person.
The token counts are not among those events: Copilot CLI writes them to the
session's own log, ``session-state/<id>/events.jsonl`` in its home
(``~/.copilot``, or ``$COPILOT_HOME``), in the ``session.shutdown`` event.

With ``COPILOT_PROVIDER_BASE_URL`` set (bring your own key) it needs no
GitHub login; ``COPILOT_OFFLINE=true`` also keeps it off GitHub entirely.
Its memory is its custom instructions: ``~/.copilot/copilot-instructions.md``
is loaded into every session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_recall.agents.adapters.common import (
    Adapter,
    MalformedOutput,
    Outcome,
    json_events,
    json_number,
    json_object,
)
from pytest_recall.agents.adapters.print_run import PrintRun, joined

ADAPTER = Adapter(
    script="recall-copilot",
    cli="copilot",
    bin_variable="RECALL_COPILOT_BIN",
    package="npm @github/copilot",
    tested="1.0.102",
    memory="~/.copilot/copilot-instructions.md (or $COPILOT_HOME/copilot-instructions.md)",
    home_copy=".copilot/settings.json,.copilot/config.json",
    sandbox_bind="the npm prefix that holds node_modules/@github, and its package cache ($COPILOT_PKG_CACHE_HOME)",
)
UNATTENDED = ["--allow-all", "--no-ask-user", "--no-auto-update"]


def read_events(stdout: str) -> tuple[Outcome, str | None]:
    """The last assistant message is the answer; ``(outcome without tokens, the session's id)``."""
    answer = ""
    errors: list[str] = []
    result: dict[str, Any] | None = None
    try:
        events = list(json_events(stdout))
    except MalformedOutput as malformed:
        return Outcome("", ok=False, failure=f"copilot: its output cannot be read ({malformed})"), None
    for event in events:
        kind = event.get("type")
        data = json_object(event.get("data"))
        if kind == "assistant.message" and not data.get("toolRequests"):
            answer = str(data.get("content") or "")
        elif kind == "session.error":
            errors.append(str(data.get("message") or data))
        elif kind == "result":
            result = event
    if result is None:
        return Outcome(answer, ok=False, failure="copilot printed no result"), None
    exit_code = result.get("exitCode")
    ok = exit_code == 0 and not errors
    failure = "" if ok else f"copilot: {errors[-1] if errors else f'exit code {exit_code}'}"
    session = result.get("sessionId")
    return Outcome(answer, ok=ok, failure=failure), str(session) if session else None


def session_tokens(session: str, env: Mapping[str, str]) -> tuple[int, int] | None:
    """``(in, out)`` summed over models, from the ``session.shutdown`` event of the session's own log."""
    home = Path(env.get("COPILOT_HOME") or Path.home() / ".copilot")
    log = home / "session-state" / session / "events.jsonl"
    try:
        lines = log.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict) and event.get("type") == "session.shutdown":
            metrics = json_object(json_object(event.get("data")).get("modelMetrics"))
            usages = [json_object(figures.get("usage")) for figures in metrics.values() if isinstance(figures, dict)]
            return sum(int(json_number(u.get("inputTokens"))) for u in usages), sum(
                int(json_number(u.get("outputTokens"))) for u in usages
            )
    return None


def read_with_tokens(stdout: str) -> Outcome:
    """The events' outcome with the token counts of the session's own log, when it has them."""
    outcome, session = read_events(stdout)
    tokens = session_tokens(session, os.environ) if session else None
    if tokens is not None:
        outcome = Outcome(outcome.answer, outcome.ok, None, tokens[0], tokens[1], outcome.failure)
    return outcome


ROW = PrintRun(ADAPTER, read_with_tokens, flags=[*UNATTENDED, "--output-format", "json"], prompt=joined("--prompt="))
main = ROW.main
