"""A test agent that remembers on its odd-numbered runs of a case and forgets on the even ones.

The harness never tells an agent which epoch it is in, so this agent counts
for itself: step 1 of each run bumps a per-case counter in
``$RECALL_TEST_COUNTER_DIR`` (outside any scope, set by the test), under a
lock because xdist workers may run two epochs of one case at once. Over k
runs exactly ceil(k/2) remember, whichever order the runs happen in.

Prompts: ``case ID remember VALUE`` (step 1) and ``case ID recall`` (last step).
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

MEMORY_FILE = "memory.txt"


def next_run(case_id: str) -> int:
    counter = Path(os.environ["RECALL_TEST_COUNTER_DIR"]) / f"{case_id}.count"
    with open(counter, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        run = int(handle.read() or 0) + 1
        handle.seek(0)
        handle.truncate()
        handle.write(str(run))
    return run


def main(prompt: str) -> int:
    _case, case_id, action, *rest = prompt.split()
    memory = Path(os.environ["RECALL_SCOPE_DIR"], MEMORY_FILE)
    if action == "remember":
        if next_run(case_id) % 2 == 1:
            memory.write_text(rest[0], encoding="utf-8")
        print("noted")
    else:
        print(memory.read_text(encoding="utf-8") if memory.exists() else "UNKNOWN")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[-1]))
