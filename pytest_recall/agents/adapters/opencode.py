"""``recall-opencode [EXTRA ARGS...] PROMPT``: ``opencode run`` unattended, answer and cost read from its JSON events.

``opencode run`` joins its message arguments with spaces and wraps each one
that holds a space in double quotes, escaping the quotes inside, so a prompt
given as an argument would reach the model changed; given on stdin (and no
message argument) it arrives as it is. ``--format json`` prints one event a
line: each step of the turn opens with ``step_start`` and closes with
``step_finish`` (tokens and dollars), with ``text`` and ``tool_use`` parts in
between, and an ``error`` event when the model failed. The answer is the
text of the last step. ``--auto`` approves every tool call that the config
does not deny: no one is there to answer a permission prompt.

OpenCode's memory is its rules files: the global ``AGENTS.md`` in its
config folder (``~/.config/opencode``) is loaded into every session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

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
    script="recall-opencode",
    cli="opencode",
    bin_variable="RECALL_OPENCODE_BIN",
    package="npm opencode-ai",
    tested="1.18.33",
    memory="~/.config/opencode/AGENTS.md (or $XDG_CONFIG_HOME/opencode/AGENTS.md), loaded into every session",
    home_copy=".config/opencode/opencode.json,.local/share/opencode/auth.json",
    sandbox_bind="the npm prefix that holds node_modules/opencode-ai (the native binary is in opencode-linux-*)",
)
UNATTENDED = ["run", "--format", "json", "--auto"]


@stream_reader
def read_events(stdout: str, cli: str = "opencode") -> Outcome:
    """The text of the last step is the answer; tokens and dollars add up over the steps.

    Kilo Code, a fork of OpenCode, prints the same events: ``cli`` names the one that failed.
    """
    step_text: list[str] = []
    tokens_in = tokens_out = 0
    cost = 0.0
    finished = False
    errors: list[str] = []
    for event in json_events(stdout):
        kind = event.get("type")
        part = json_object(event.get("part"))
        if kind == "step_start":
            step_text = []
        elif kind == "text":
            step_text.append(str(part.get("text") or ""))
        elif kind == "step_finish":
            finished = True
            tokens = json_object(part.get("tokens"))
            tokens_in += int(json_number(tokens.get("input")))
            tokens_out += int(json_number(tokens.get("output")))
            cost += json_number(part.get("cost"))
        elif kind == "error":
            error = event.get("error") or {}
            data = json_object(json_object(error).get("data"))
            errors.append(str(data.get("message") or error))
        if kind != "text":
            chatter(json.dumps(event))
    ok = finished and not errors
    return Outcome(
        "".join(step_text),
        ok=ok,
        # OpenCode says 0 for a model it has no prices for: unknown, not free.
        cost_usd=cost or None,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        failure="" if ok else f"{cli}: {errors[-1] if errors else 'no step finished'}",
    )


def model_base_url(env: Mapping[str, str]) -> str | None:
    """The ``baseURL`` of the provider of the model OpenCode's global config names, if it names one.

    ``OPENCODE_CONFIG``, else ``opencode.json`` in its config folder; a config
    with comments (JSONC) or without such a provider gives None, and OpenCode
    then reports an unreachable model itself.
    """
    return provider_base_url(env.get("OPENCODE_CONFIG") or os.path.join(config_home(env), "opencode", "opencode.json"))


def config_home(env: Mapping[str, str]) -> str:
    return env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "~"), ".config")


def provider_base_url(path: str) -> str | None:
    """The ``baseURL`` of the provider of the ``model`` an OpenCode-style config file names, or None."""
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
        provider = config["provider"][config["model"].split("/", 1)[0]]
        url = provider["options"]["baseURL"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return url if isinstance(url, str) else None


ROW = PrintRun(
    ADAPTER,
    read_events,
    flags=UNATTENDED,
    model=ModelAt("opencode.json's model provider baseURL", lambda _extra, env: model_base_url(env)),
)
main = ROW.main
