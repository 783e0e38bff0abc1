"""``recall-cline [EXTRA ARGS...] PROMPT``: the Cline CLI's one-shot run, answer and usage read from its NDJSON.

``cline --json`` runs one turn and exits, printing one event a
line and last a ``run_result`` with the answer (``text``), why the run
ended (``finishReason``) and its ``usage``. Its tools are approved by default
(``--auto-approve`` defaults to true). Not ``--yolo``: that mode does not end
a turn on the model's answer, only on its ``submit_and_exit`` tool, and asks
again forever when the model answers in text.

The prompt goes on stdin: as an argument, one without white space is refused
("unquoted prompt") or, when it names a subcommand (``history``), runs that
instead. ``--json`` still wants an argument (despite its error message, piped
stdin alone is refused), so it gets a blank one, which passes the quoting
check; Cline joins the piped text after it and trims the whole, so the model
gets the prompt without the white space at its ends. A prompt that starts
with ``/team`` is rewritten into a request for a team of agents either way.

Outside yolo mode the CLI starts a background "hub" daemon for later runs,
which would outlive the step: ``CLINE_SESSION_BACKEND_MODE=local`` keeps the
session in the CLI's own process. The provider (an OpenAI-compatible base URL
and key) is what ``cline auth`` wrote to ``providers.json`` in its data
folder; no account is needed. Cline's memory is its rules: every Markdown
file in the global rules folder ``~/Documents/Cline/Rules`` (shared with
Cline's editor extensions) is loaded into every session's system prompt.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from pytest_recall.agents.adapters.common import (
    Adapter,
    Outcome,
    chatter,
    json_events,
    json_number,
    stream_reader,
)
from pytest_recall.agents.adapters.print_run import ModelAt, PrintRun, on_stdin_after

ADAPTER = Adapter(
    script="recall-cline",
    cli="cline",
    bin_variable="RECALL_CLINE_BIN",
    package="npm cline",
    tested="3.0.65",
    memory="~/Documents/Cline/Rules/*.md, its global rules, loaded into every session",
    home_copy=".cline/data/settings/providers.json",
    sandbox_bind="the npm prefix that holds node_modules/cline (the native binary is in @cline/cli-linux-*)",
)
UNATTENDED = ["--json"]
# The session in the CLI's own process: no hub daemon left running after the step.
LOCAL_ENV = {"CLINE_SESSION_BACKEND_MODE": "local"}


# The argument --json requires; the prompt itself comes on stdin, after it.
BLANK_PROMPT = " "


@stream_reader
def read_events(stdout: str) -> Outcome:
    """The ``run_result`` event holds the answer and the usage; a run without one did not finish."""
    result: dict[str, object] = {}
    errors: list[str] = []
    for event in json_events(stdout):
        kind = event.get("type")
        if kind == "run_result":
            result = event
        elif kind == "error":
            errors.append(str(event.get("message") or event))
        chatter(json.dumps(event))
    usage = result.get("aggregateUsage") or result.get("usage") or {}
    usage = usage if isinstance(usage, dict) else {}
    reason = result.get("finishReason")
    ok = reason == "completed" and not errors
    if not result:
        failure = "cline: no run_result event"
    else:
        failure = f"cline: {errors[-1] if errors else f'the run ended: {reason}'}"
    return Outcome(
        str(result.get("text") or ""),
        ok=ok,
        # Cline says 0 for a model it has no prices for: unknown, not free.
        cost_usd=json_number(usage.get("totalCost")) or None,
        tokens_in=int(json_number(usage.get("inputTokens"))),
        tokens_out=int(json_number(usage.get("outputTokens"))),
        failure="" if ok else failure,
    )


# The AI SDK Cline is built on prints a warning with its stack trace on stderr at every request (a deprecated
# provider option of its own making): a user reading a failed step's transcript wants what went wrong.
_SDK_WARNING = re.compile(r"^\w*Warning: AI SDK Warning")
_STACK_FRAME = re.compile(r"^\s+at \S")


def quiet_stderr(stderr: str) -> str:
    """Cline's stderr for the transcript: each AI SDK warning once, with how often it came, without its stack
    trace; every other line as it was."""
    kept: list[str] = []
    counts: dict[str, int] = {}
    in_warning = False
    for line in stderr.splitlines():
        if _SDK_WARNING.match(line):
            in_warning = True
            if line not in counts:
                kept.append(line)
            counts[line] = counts.get(line, 0) + 1
        elif not (in_warning and (_STACK_FRAME.match(line) or not line.strip())):
            in_warning = False
            kept.append(line)
    return "\n".join(
        f"{line} (x{counts[line]}, stack traces left out)" if counts.get(line, 0) > 1 else line for line in kept
    )


def model_base_url(env: Mapping[str, str]) -> str | None:
    """The ``baseUrl`` of the provider Cline last used, from its ``providers.json``, if it names one."""
    cline_dir = env.get("CLINE_DIR") or os.path.join(env.get("HOME", "~"), ".cline")
    data_dir = env.get("CLINE_DATA_DIR") or os.path.join(cline_dir, "data")
    try:
        document = json.loads(Path(data_dir, "settings", "providers.json").read_text(encoding="utf-8"))
        url = document["providers"][document["lastUsedProvider"]]["settings"]["baseUrl"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return url if isinstance(url, str) else None


ROW = PrintRun(
    ADAPTER,
    read_events,
    flags=UNATTENDED,
    prompt=on_stdin_after("--", BLANK_PROMPT),
    env_over=LOCAL_ENV,
    model=ModelAt("providers.json's baseUrl", lambda _extra, env: model_base_url(env)),
    stderr_filter=quiet_stderr,
)
main = ROW.main
