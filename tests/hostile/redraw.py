"""A hostile agent that streams its answer the way aider does: drawn, erased and redrawn in place.

Step 1 keeps the prompt's last word in the scope. Step 2 streams a reply in
fragments: after each fragment it moves the cursor back up over what it
drew, erases it and draws the longer text again, so the raw output holds
every partial copy and a draft figure that the final screen no longer shows.
Then a status line with another figure is shown and erased. A person reading
the screen sees the remembered answer on the last line and nothing else
that looks like money; the bytes hold three different figures.
"""

from __future__ import annotations

import os
import sys
import time

DRAFT = "Draft total: 99,999.99 (checking)"
STATUS = "Tokens: 2,417 sent, cost 55,555.55"


def stream(answer: str) -> bytes:
    """The bytes the agent writes on step 2."""
    final = ["Looking at my notes from the first session.", "The closing balance was:", answer]
    drafts = [["Looking at"], ["Looking at my notes"], ["Looking at my notes from the first session.", DRAFT]]
    out = bytearray()
    drawn = 0
    for lines in [*drafts, final]:
        if drawn:
            out += b"\x1b[%dA\r\x1b[J" % drawn  # back up over the last frame and erase to the end
        for line in lines:
            out += line.encode() + b"\r\n"
        drawn = len(lines)
    out += STATUS.encode() + b"\r\x1b[2K"  # a status line, shown and wiped
    return bytes(out)


def main() -> int:
    prompt = sys.argv[-1]
    memory = os.path.join(os.environ["RECALL_SCOPE_DIR"], "memory.txt")
    if os.environ.get("RECALL_STEP") == "1":
        with open(memory, "w", encoding="utf-8") as handle:
            handle.write(prompt.split()[-1])
        print("noted")
        return 0
    with open(memory, encoding="utf-8") as handle:
        answer = handle.read()
    data = stream(answer)
    for start in range(0, len(data), 7):  # small writes, as a stream arrives
        os.write(sys.stdout.fileno(), data[start : start + 7])
        time.sleep(0.001)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
