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


# Put back at their default actions in a run a test starts, since the test sends them (see with_signals_at_default).
SIGNALS_A_TEST_SENDS = ("SIGINT", "SIGTERM", "SIGHUP")
_AT_DEFAULT_THEN_EXEC = (
    "import os, signal, sys\n"
    f"for name in {SIGNALS_A_TEST_SENDS!r}:\n"
    "    signal.signal(getattr(signal, name), signal.SIG_DFL)\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)


def with_signals_at_default(argv: list[str]) -> list[str]:
    """``argv`` started with SIGINT, SIGTERM and SIGHUP at their default actions, whatever this process ignores.

    A run inherits the signals its starter ignores: a shell ignores SIGINT in
    what it starts in the background without job control, and ``nohup``
    ignores SIGHUP. The plugin keeps a signal ignored as it found it (the
    user's choice), so a run started so would never get the signal a test
    sends it, and the test would time out for the way it was launched.
    ``argv[0]`` must be a path; the run keeps the starter's pid (``execv``).
    """
    return [sys.executable, "-c", _AT_DEFAULT_THEN_EXEC, *argv]


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
