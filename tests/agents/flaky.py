"""An agent that fails its first attempt at a case and gets every later one right.

argv: STATE_FILE SESSIONS_PER_ATTEMPT PROMPT. Prompts whose first word is
``flaky`` are counted in STATE_FILE: the first SESSIONS_PER_ATTEMPT of them
answer ``0.00``, every later one, and every other prompt, answers with the
prompt's last word. A rerun that really runs the case again
therefore passes; one that replays the first attempt does not.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    state, per_attempt, prompt = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[-1]
    if prompt.split()[0] != "flaky":
        print(prompt.split()[-1], flush=True)
        return 0
    with state.open("a", encoding="utf-8") as handle:
        handle.write("session\n")
    sessions = len(state.read_text(encoding="utf-8").splitlines())
    print("0.00" if sessions <= per_attempt else prompt.split()[-1], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
