"""A hostile agent with no memory that writes what the harness reads of the run (issue 65).

argv: TRICK [ARG]. It answers UNKNOWN at every step, except as the trick says:

    tap-line TEXT    TEXT appended as a line to the MCP tap's log beside its cost file, at every step
    pause TEXT       TEXT as the run's rate-limit pause file, wherever it finds one in the run's TMPDIR
    stop             at the first last step it reaches: answers right (the cases ask for 12345.67) and,
                     ahead, plants a decision of the score gate in every stop folder of the run's TMPDIR
    shotgun N        every voucher from V-0000 to V-N with every balance, as a retriever with no memory would

The run's TMPDIR is two folders above the step's (its case area's parent).
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path


def run_tmp() -> Path:
    return Path(os.environ["RECALL_COST_FILE"]).parent.parent.parent


def first(marker: Path) -> bool:
    """True for the one process that makes ``marker``."""
    try:
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


def main() -> int:
    trick, argument = sys.argv[1], (sys.argv[2] if len(sys.argv) > 3 else "")
    last = "What" in sys.argv[-1]  # the cases' last steps ask; earlier ones tell
    harness = Path(os.environ["RECALL_COST_FILE"]).parent
    if trick == "tap-line":
        with open(harness / "mcp-tap.jsonl", "a", encoding="utf-8") as log:
            log.write(argument + "\n")
    elif trick == "pause":
        for folder in glob.glob(str(run_tmp() / "recall-pause-*")):
            Path(folder, "rate-limit-pause.json").write_text(argument, encoding="utf-8")
    elif trick == "stop" and last and first(run_tmp() / "planted-stop"):
        for folder in glob.glob(str(run_tmp() / "recall-stop-*")):
            Path(folder, "decided").write_text("recall: not run: the score gate was decided above", encoding="utf-8")
        print("12345.67")
        return 0
    elif trick == "shotgun" and last:
        for number in range(int(argument)):
            print(f"V-{number:04d} balance {number}.67 evidence E{number}")
        return 0
    print("UNKNOWN")
    return 0


if __name__ == "__main__":
    sys.exit(main())
