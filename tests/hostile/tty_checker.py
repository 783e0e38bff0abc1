"""An agent that behaves like a program written for people when it finds a terminal.

On a terminal it draws a coloured spinner that rewrites its line, then asks
"press enter to continue" on /dev/tty and waits for an answer there. Then
(or at once, without a terminal) it answers with the prompt's last word.
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    answer = sys.argv[-1].split()[-1]
    if sys.stdout.isatty():
        for frame in "|/-\\":
            sys.stdout.write(f"\r\x1b[36m{frame} thinking\x1b[0m")
            sys.stdout.flush()
        sys.stdout.write("\r\x1b[2K")
        try:
            tty = os.open("/dev/tty", os.O_RDWR)
        except OSError:
            pass
        else:
            os.write(tty, b"press enter to continue ")
            os.read(tty, 100)  # end of file, if the harness says there is no one to press it
            os.close(tty)
    print(answer, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
