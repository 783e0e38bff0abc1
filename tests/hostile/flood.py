"""A hostile agent that floods stdout: BYTES of text lines, then the answer.

argv: BYTES PROMPT. The answer is the prompt's last word, printed after the
flood on a line of its own, so only a harness that keeps the tail of the
output can still judge it.
"""

from __future__ import annotations

import sys


def main() -> int:
    total, prompt = int(sys.argv[1]), sys.argv[-1]
    line = b"flood " + b"x" * 1017 + b"\n"
    block = line * 256
    out = sys.stdout.buffer
    written = 0
    while written < total:
        out.write(block)
        written += len(block)
    out.write(f"\n{prompt.split()[-1]}\n".encode())
    out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
