"""A REPL agent for the live-session tests: the notebook's answers, with a memory in RAM only.

It remembers nothing on disk, so a case it solves was solved inside one live
process. Flags give the tests the behaviours they need:

    --prompt TEXT       what it prints when ready for a turn (default "notebook> "; "" prints nothing)
    --wrong-first       answer the first turn with a wrong audit answer
    --think SECONDS     wait this long before each answer
    --exit-after N      exit after answering N turns, without waiting for end of input
    --probe FILE        append one JSON line per turn: the text received, and whether the terminal echoes

The file is not named test_*, so pytest never collects it.
"""

from __future__ import annotations

import argparse
import json
import sys
import termios
import time
from pathlib import Path

from pytest_recall.agents.notebook import REPL_PROMPT, Notebook, respond, turns

WRONG_AUDIT_ANSWER = '{"value":"nonsense","evidence":[]}'


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompt", default=REPL_PROMPT)
    parser.add_argument("--wrong-first", action="store_true")
    parser.add_argument("--think", type=float, default=0.0)
    parser.add_argument("--exit-after", type=int, default=0)
    parser.add_argument("--probe", type=Path)
    args = parser.parse_args()
    notebook = Notebook(None)
    print(args.prompt, end="", flush=True)
    for number, turn in enumerate(turns(), start=1):
        if args.probe is not None:
            echoes = bool(termios.tcgetattr(0)[3] & termios.ECHO) if sys.stdin.isatty() else None
            with args.probe.open("a", encoding="utf-8") as probe:
                probe.write(json.dumps({"turn": turn, "echo": echoes}) + "\n")
        time.sleep(args.think)
        answer = respond(turn, notebook)
        print(WRONG_AUDIT_ANSWER if args.wrong_first and number == 1 else answer, flush=True)
        if number == args.exit_after:
            return 0
        print(args.prompt, end="", flush=True)
    print("bye", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
