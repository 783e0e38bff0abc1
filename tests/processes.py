"""Finding the processes a test started, by markers it put in their command line or environment."""

from __future__ import annotations

import os
from pathlib import Path


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
