"""``recall-kilo [EXTRA ARGS...] PROMPT``: Kilo Code's ``kilo run`` unattended, read as OpenCode's JSON events.

Kilo Code's CLI is a fork of OpenCode and keeps its print mode: ``kilo run
--format json --auto`` takes the prompt on stdin (a message argument would be
re-quoted), approves every tool call the config does not deny, and prints the
same ``step_start``/``text``/``step_finish``/``error`` events, so the reading
is :func:`opencode.read_events`. Its config is ``kilo.json`` in its own config
folder (``~/.config/kilo``, or ``KILO_CONFIG``), in OpenCode's shape.

Kilo Code's memory is its global rules file: ``AGENTS.md`` in that config
folder is loaded into every session. Its PostHog telemetry is turned off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pytest_recall.agents.adapters.common import (
    Adapter,
    Outcome,
)
from pytest_recall.agents.adapters.opencode import UNATTENDED, config_home, provider_base_url, read_events
from pytest_recall.agents.adapters.print_run import ModelAt, PrintRun

ADAPTER = Adapter(
    script="recall-kilo",
    cli="kilo",
    bin_variable="RECALL_KILO_BIN",
    package="npm @kilocode/cli",
    tested="7.7.7",
    memory="~/.config/kilo/AGENTS.md (or $XDG_CONFIG_HOME/kilo/AGENTS.md), loaded into every session",
    home_copy=".config/kilo/kilo.json,.local/share/kilo/auth.json",
    sandbox_bind="the npm prefix that holds node_modules/@kilocode/cli (the native binary is in cli-linux-*)",
)
# Kilo Code reads its telemetry level once at start; anything but "all" turns PostHog off.
QUIET_ENV = {"KILO_TELEMETRY_LEVEL": "off"}


def read_kilo(stdout: str) -> Outcome:
    return read_events(stdout, "kilo")


def model_base_url(env: Mapping[str, str]) -> str | None:
    """The ``baseURL`` of the provider of the model ``kilo.json`` names (``KILO_CONFIG`` moves it), if any."""
    return provider_base_url(env.get("KILO_CONFIG") or os.path.join(config_home(env), "kilo", "kilo.json"))


ROW = PrintRun(
    ADAPTER,
    read_kilo,
    flags=UNATTENDED,
    env_under=QUIET_ENV,
    model=ModelAt("kilo.json's model provider baseURL", lambda _extra, env: model_base_url(env)),
)
main = ROW.main
