"""``recall-letta [EXTRA ARGS...] PROMPT``: Letta Code's headless mode, one agent kept, a new conversation a step.

Letta Code's agents keep their memory as memory blocks, projected to a git-backed
memory filesystem (MemFS); a block under ``system/`` is in every later
conversation's system prompt, and the agent edits them with its ``memory`` tool.
With its local backend (``letta backend local``, or ``--backend local``) the
agents, conversations and MemFS live in ``~/.letta/lc-local-backend`` and the
model is any provider connected there, an OpenAI-compatible one with
``letta connect openai-compatible --base-url URL``: no Letta server, no
account.

Which agent a run uses is remembered per working folder, and each step gets a
new one, so the adapter names the agent: ``letta agents list --name recall``
finds it, or ``letta agents create --name recall`` makes it (with the ``-m``
model among the extra arguments, if any). Then ``letta -p --agent ID --new
--output-format json`` runs the step in a new conversation of that agent, the
prompt on stdin: what a later step knows, the agent's memory kept, not the
conversation. The JSON ``result`` holds the answer, ``is_error`` and the usage.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_recall.agents.adapters.common import (
    Adapter,
    Outcome,
    chatter,
    json_document,
    json_number,
    run_cli,
    stream_reader,
)
from pytest_recall.agents.adapters.print_run import ModelAt, PrintRun
from pytest_recall.agents.adapters.result_message import result_of

ADAPTER = Adapter(
    script="recall-letta",
    cli="letta",
    bin_variable="RECALL_LETTA_BIN",
    package="npm @letta-ai/letta-code (Node >= 22.19)",
    tested="0.32.18",
    memory="memory blocks in ~/.letta/lc-local-backend/memfs/<agent>/memory/system/ (its memory tool), local backend",
    home_copy=".letta/settings.json,.letta/lc-local-backend/providers/auth.json",
    sandbox_bind="the npm prefix that holds node_modules/@letta-ai/letta-code, and the Node >= 22.19 that runs it",
)
# The agent every step of a case uses, by name.
AGENT_NAME = "recall"
MODEL_FLAGS = ("-m", "--model")


def provider_base_url(env: Mapping[str, str]) -> str | None:
    """The ``base_url`` of the one OpenAI-compatible provider connected to the local backend, if any."""
    path = Path(env.get("HOME", "~"), ".letta", "lc-local-backend", "providers", "auth.json").expanduser()
    try:
        providers = json.loads(path.read_text(encoding="utf-8"))["providers"]
        urls = [entry["base_url"] for entry in providers.values() if entry.get("base_url")]
    except (OSError, UnicodeDecodeError, ValueError, LookupError, TypeError, AttributeError):
        return None
    return str(urls[0]) if len(urls) == 1 else None


def model_args(extra: Sequence[str]) -> list[str]:
    """The ``-m MODEL`` among the extra arguments, for the agent the adapter creates."""
    for index, arg in enumerate(extra):
        if arg in MODEL_FLAGS and index + 1 < len(extra):
            return ["--model", extra[index + 1]]
        if arg.startswith("--model="):
            return ["--model", arg.split("=", 1)[1]]
    return []


def agent_id(cli: str, extra: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The id of the agent named ``recall``, made when there is none; None when letta lists none after that.

    The id is read from the list, never from what ``agents create`` prints: that is the whole agent, its
    system prompt too, and Node may exit before a pipe has taken all of it (seen under bwrap).
    """
    listed = run_cli([cli, "agents", "list", "--name", AGENT_NAME], env)
    found = _items(listed.stdout)
    if not found:
        made = run_cli([cli, "agents", "create", "--name", AGENT_NAME, "--pinned", *model_args(extra)], env)
        listed = run_cli([cli, "agents", "list", "--name", AGENT_NAME], env)
        found = _items(listed.stdout)
        if not found:
            chatter(made.stdout[-2000:] + listed.stdout)  # what letta said instead, for the transcript
    return found[0] if found else None


def _items(stdout: str) -> list[str]:
    try:
        document: Any = json.loads(stdout)
    except ValueError:
        return []
    items = document.get("items") if isinstance(document, dict) else None
    return [str(item["id"]) for item in items or [] if isinstance(item, dict) and item.get("id")]


@stream_reader
def read_json(stdout: str) -> Outcome:
    """``--output-format json`` prints one ``result`` object (over several lines); its usage is OpenAI's."""
    document = json_document(stdout)
    if document is None:
        return Outcome(stdout, ok=False, failure="letta printed no JSON result")
    outcome = result_of([document], "letta")
    usage: Any = document.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Outcome(
        outcome.answer,
        ok=outcome.ok,
        tokens_in=int(json_number(usage.get("prompt_tokens"))),
        tokens_out=int(json_number(usage.get("completion_tokens"))),
        failure=outcome.failure,
    )


def step_command(cli: str, extra: Sequence[str]) -> list[str]:
    """The step, in a new conversation of the agent named ``recall``: found, or made, by asking letta first."""
    agent = agent_id(cli, extra, os.environ)
    if agent is None:
        print(f"{ADAPTER.script}: letta could neither list nor create the agent {AGENT_NAME!r}", file=sys.stderr)
        raise SystemExit(1)
    return [cli, "-p", "--agent", agent, "--new", "--output-format", "json", *extra]


ROW = PrintRun(
    ADAPTER,
    read_json,
    command=step_command,
    model=ModelAt("the base_url of its connected provider", lambda _extra, env: provider_base_url(env)),
)
main = ROW.main
