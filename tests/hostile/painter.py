"""An agent that paints on the harness's terminal through its stderr, then answers wrong.

argv: PROMPT. It writes, to stderr, a screen clear, a window title, an OSC 52
clipboard write and a green fake "8 passed" line, then answers ``0.00``.
Whatever of this reaches pytest's terminal raw would act on the user's screen.
"""

from __future__ import annotations

import sys

PAINT = (
    b"\x1b[2J\x1b[H"  # clear the screen, cursor home
    b"\x1b]0;pwned title\x07"  # window title
    b"\x1b]52;c;ZWNobyBwd25lZA==\x07"  # OSC 52: put text on the clipboard
    b"\x1b[32m======= 8 passed in 0.01s =======\x1b[0m\n"
)


def main() -> int:
    sys.stderr.buffer.write(PAINT)
    sys.stderr.flush()
    print("0.00", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
