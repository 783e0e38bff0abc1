"""A hostile agent that kills the process that started it: under xdist, its worker.

When its prompt says ``kill`` it sends SIGKILL to its parent and exits;
otherwise it answers with the prompt's last word.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> int:
    prompt = sys.argv[-1]
    if "kill" in prompt.split():
        os.kill(os.getppid(), signal.SIGKILL)
        return 0
    print(prompt.split()[-1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
