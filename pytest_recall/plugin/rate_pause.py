"""The glue of the run-wide rate-limit pause: one folder for the host, handed to every xdist worker.

The controller (or a plain run) makes the folder and draws the secret that
signs the pause file there (an agent can find the folder in default mode,
but cannot sign); both reach each worker in its ``workerinput``. Each
process's executor pauses and retries through
:class:`~pytest_recall.sessions.rate_limits.HostPause` on that file, and at
the end the controller says in the report how long new sessions were held
back, and the run's bound on that.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.plugin.config import CONFIG_KEY
from pytest_recall.plugin.xdist_handoff import PAUSE_FOLDER_INPUT
from pytest_recall.reporting import RateLimits
from pytest_recall.sessions import RUN_PAUSE_BUDGET_S, HostPause, made_folder, new_secret

PAUSE_KEY = pytest.StashKey[HostPause]()


class RatePause:
    """Controller only: makes the run's pause folder and reports the pause."""

    def __init__(self, config: pytest.Config) -> None:
        self.pause = _own_pause(config)
        self.attempts = config.stash[CONFIG_KEY].scale_out.rate_limit_attempts

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        # A worker on another host cannot see this folder; it pauses only its own sessions then.
        if getattr(getattr(node.gateway, "spec", None), "popen", False):
            node.workerinput[PAUSE_FOLDER_INPUT] = {"folder": str(self.pause.folder), "secret": self.pause.secret}

    def rate_limits(self) -> RateLimits | None:
        """What the report's ``rate_limits`` block says, or None when the model refused nothing."""
        state = self.pause.state()
        if not state.get("refusals"):
            return None
        return RateLimits(
            int(state["refusals"]), state["paused_s"], self.attempts, RUN_PAUSE_BUDGET_S, bool(state["budget_spent"])
        )


def host_pause(config: pytest.Config, handed: Any) -> HostPause:
    """This process's pause: the controller's, as handed to a worker, or its own when it runs apart."""
    if isinstance(handed, dict) and isinstance(handed.get("folder"), str) and isinstance(handed.get("secret"), str):
        return HostPause(Path(handed["folder"]), handed["secret"])
    return _own_pause(config)


def _own_pause(config: pytest.Config) -> HostPause:
    """The pause this process made (a new folder and secret the first time it is asked)."""
    found = config.stash.get(PAUSE_KEY, None)
    if found is None:
        folder = made_folder("pause")
        found = config.stash[PAUSE_KEY] = HostPause(folder, new_secret())
        config.add_cleanup(lambda: shutil.rmtree(str(folder), ignore_errors=True))
    return found
