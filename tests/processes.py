"""The processes a test starts: found by markers in their command line or environment, or started killable."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def processes_with(*markers: str, parts: tuple[str, ...] = ("cmdline", "environ")) -> list[int]:
    """Live processes one of whose ``parts`` holds every marker (zombies hold none).

    A marker unique to the test keeps tests that run side by side under xdist apart.
    """
    wanted = [marker.encode() for marker in markers]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if any(all(marker in (entry / part).read_bytes() for marker in wanted) for part in parts):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def start_killable_run(cwd: Path, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``pytest cases ...`` in its own process group, so SIGKILL takes the controller and every worker at once."""
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider"],
        cwd=cwd,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_for(condition: Any, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the run never got there"
        time.sleep(0.05)
