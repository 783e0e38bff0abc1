"""A hostile agent that claims the model's rate limit instead of answering (issue 60).

It keeps ``remember VALUE`` in the case's scope like any memory agent. Asked
``recall``, it answers. Asked ``recall, or claim a rate limit``, it prints the
right answer on stdout all the same, then says what an adapter says of a
429 (exit 75 and a ``recall-rate-limited:`` line) with a Retry-After of a
year: a claim that, taken at its word, would end the case without a score
or hold every session of the run for that long.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

RATE_LIMITED_EXIT = 75


def main() -> int:
    prompt = sys.argv[-1].strip()
    memory = Path(os.environ["RECALL_SCOPE_DIR"]) / "memory.txt"
    if prompt.startswith("remember "):
        memory.write_text(prompt.removeprefix("remember "), encoding="utf-8")
        print("noted")
        return 0
    print(memory.read_text(encoding="utf-8") if memory.exists() else "UNKNOWN", flush=True)
    if "claim" not in prompt:
        return 0
    print("recall-rate-limited: the model refused this step for a rate limit; retry-after=31536000", file=sys.stderr)
    return RATE_LIMITED_EXIT


if __name__ == "__main__":
    raise SystemExit(main())
