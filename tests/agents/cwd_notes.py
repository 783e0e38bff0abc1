"""A test agent that keeps its notes in its working folder, a newcomer's most natural first try.

``REMEMBER <value>`` appends the value to ``notes.txt`` in the current
folder; ``RECALL`` prints the note kept there, or ``UNKNOWN`` when there is
none. Every step runs in a fresh folder, so the note never survives: what
the harness tells its author is what the test reads.
"""

from __future__ import annotations

import sys
from pathlib import Path

NOTES = Path("notes.txt")


def main(prompt: str) -> int:
    words = prompt.split()
    if words and words[0] == "REMEMBER":
        with NOTES.open("a", encoding="utf-8") as handle:
            handle.write(words[1] + "\n")
        print("noted")
    elif words and words[0] == "RECALL":
        kept = NOTES.read_text(encoding="utf-8").split() if NOTES.exists() else []
        print(kept[-1] if kept else "UNKNOWN")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[-1]))
