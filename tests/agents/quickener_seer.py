"""An agent that notes which quickener processes its harness runs, then answers.

A quickener (``pytest_recall/sessions/cgroup.py``) is a child of the harness,
as the agent is: the agent lists its siblings whose command line holds the
quickener's program, and appends their pids to the file named by argv[1].
"""

from __future__ import annotations

import os
import sys

PROGRAM_MARK = b"select.select([0]"


def siblings_running_the_quickener() -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                command = handle.read()
        except (OSError, IndexError, ValueError):
            continue
        if parent == os.getppid() and PROGRAM_MARK in command:
            found.append(pid)
    return found


with open(sys.argv[1], "a", encoding="utf-8") as notes:
    notes.write(" ".join(siblings_running_the_quickener()) + "\n")
print("12345.67")
