"""A test agent for the run log and resume: it remembers, counts its calls, and can hang.

``REMEMBER <value> ...`` keeps the value in the case's scope; ``RECALL ...``
prints it. Every call appends one JSON line to ``$RESUME_TEST_CALLS``: the
prompt's first line and how many lines ``$RESUME_TEST_LOG`` held at that
moment, so a test can see which cases ran and what was already on disk.
A prompt that contains ``$RESUME_TEST_BLOCK_ON`` blocks like a stuck paid
session, until its harness is gone.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

MEMORY = "memory.txt"


def log_lines() -> int:
    log = os.environ.get("RESUME_TEST_LOG")
    if not log or not os.path.exists(log):
        return 0
    with open(log, "rb") as handle:
        return handle.read().count(b"\n")


def block_until_orphaned() -> None:
    """Wait as a slow agent would; end once the harness that started us is killed."""
    parent = os.getppid()
    deadline = time.monotonic() + 120
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.05)


def main(prompt: str) -> int:
    calls = os.environ.get("RESUME_TEST_CALLS")
    if calls:
        line = json.dumps({"prompt": prompt.splitlines()[0], "log_lines": log_lines()})
        with open(calls, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    blocker = os.environ.get("RESUME_TEST_BLOCK_ON")
    if blocker and blocker in prompt:
        Path(os.environ["RESUME_TEST_CALLS"] + ".blocked").write_text(prompt)
        block_until_orphaned()
        return 1
    memory = Path(os.environ["RECALL_SCOPE_DIR"], MEMORY)
    words = prompt.split()
    if words[0] == "REMEMBER":
        memory.write_text(words[1])
        print("noted")
    else:
        print(memory.read_text() if memory.exists() else "UNKNOWN")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[-1]))
