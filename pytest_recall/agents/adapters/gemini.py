"""``recall-gemini [EXTRA ARGS...] PROMPT``: Gemini CLI in headless mode, unattended.

``gemini -p`` runs one prompt; ``--output-format json`` prints one object
with the answer (``response``), the figures per model (``stats``) and any
``error`` apart, so stdout holds the answer alone. Its tools would wait for
an approval no one gives, so ``--approval-mode=yolo``; and in a folder it
has not been told to trust (every step's new working directory) Gemini CLI
quietly drops YOLO back to asking, so ``--skip-trust`` trusts it for the
session. Gemini CLI 0.61 has no ``save_memory`` tool any more: its memory
is the ``GEMINI.md`` files it loads into every session, which the model
edits with its own file and shell tools; the global one is
``~/.gemini/GEMINI.md``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_recall.agents.adapters.common import (
    Adapter,
    Outcome,
    chatter,
    stream_reader,
)
from pytest_recall.agents.adapters.print_run import ModelAt, PrintRun, joined

ADAPTER = Adapter(
    script="recall-gemini",
    cli="gemini",
    bin_variable="RECALL_GEMINI_BIN",
    package="npm @google/gemini-cli",
    tested="0.61.0",
    memory="~/.gemini/GEMINI.md (or $GEMINI_CLI_HOME/.gemini/GEMINI.md), edited by the model with its own tools",
    home_copy=".gemini/settings.json,.gemini/oauth_creds.json,.gemini/google_accounts.json",
    sandbox_bind="the npm prefix that holds node_modules/@google/gemini-cli",
)
UNATTENDED = ["--approval-mode=yolo", "--skip-trust"]


@stream_reader
def read_json(stdout: str) -> Outcome:
    """The JSON object ``--output-format json`` prints last, on lines of its own; the rest is chatter."""
    document: dict[str, Any] = {}
    start = len(stdout)
    decoder = json.JSONDecoder()
    for found in re.finditer(r"^\{", stdout, re.MULTILINE):
        try:
            candidate, _ = decoder.raw_decode(stdout, found.start())
        except ValueError:
            continue
        if isinstance(candidate, dict) and ("response" in candidate or "error" in candidate):
            document, start = candidate, found.start()
    if not document:
        return Outcome(stdout, ok=False, failure="gemini printed no JSON result")
    chatter(stdout[:start])
    tokens_in = tokens_out = 0
    models = (document.get("stats") or {}).get("models") or {}
    for figures in models.values():
        tokens = figures.get("tokens") or {} if isinstance(figures, dict) else {}
        tokens_in += int(tokens.get("prompt") or 0)
        tokens_out += int(tokens.get("candidates") or 0)
    error = document.get("error")
    answer = str(document.get("response") or "")
    failure = ""
    if error:
        failure = f"gemini reported an error: {error.get('message') if isinstance(error, dict) else error}"
    return Outcome(answer, ok=not error, tokens_in=tokens_in, tokens_out=tokens_out, failure=failure)


ROW = PrintRun(
    ADAPTER,
    read_json,
    flags=[*UNATTENDED, "--output-format", "json"],
    prompt=joined("--prompt="),
    model=ModelAt("GOOGLE_GEMINI_BASE_URL"),
)
main = ROW.main
