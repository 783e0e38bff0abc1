"""The glue of the run-wide rate-limit pause: one folder for the host, handed to every xdist worker.

The controller (or a plain run) makes the folder; each process's executor
pauses and retries through :class:`~pytest_recall.sessions.rate_limits.HostPause`
on the file there, and at the end the controller says in the report how long
new sessions were held back.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.plugin.config import CONFIG_KEY
from pytest_recall.plugin.xdist_handoff import PAUSE_FOLDER_INPUT
from pytest_recall.reporting import RateLimits
from pytest_recall.sessions import HostPause, made_folder

PAUSE_FOLDER_KEY = pytest.StashKey[Path]()


class RatePause:
    """Controller only: makes the run's pause folder and reports the pause."""

    def __init__(self, config: pytest.Config) -> None:
        self.folder = made_folder("pause")
        config.add_cleanup(lambda: shutil.rmtree(str(self.folder), ignore_errors=True))
        config.stash[PAUSE_FOLDER_KEY] = self.folder
        self.attempts = config.stash[CONFIG_KEY].scale_out.rate_limit_attempts

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        # A worker on another host cannot see this folder; it pauses only its own sessions then.
        if getattr(getattr(node.gateway, "spec", None), "popen", False):
            node.workerinput[PAUSE_FOLDER_INPUT] = str(self.folder)

    def rate_limits(self) -> RateLimits | None:
        """What the report's ``rate_limits`` block says, or None when the model refused nothing."""
        state = HostPause(self.folder).state()
        if not state.get("refusals"):
            return None
        return RateLimits(int(state["refusals"]), state["paused_s"], self.attempts)


def pause_folder(config: pytest.Config, handed_folder: str | None) -> Path:
    """This process's pause folder: the controller's, or its own when it runs apart (another host)."""
    if handed_folder is not None:
        return Path(handed_folder)
    found = config.stash.get(PAUSE_FOLDER_KEY, None)
    if found is None:
        found = made_folder("pause")
        config.stash[PAUSE_FOLDER_KEY] = found
        config.add_cleanup(lambda: shutil.rmtree(str(found), ignore_errors=True))
    return found
