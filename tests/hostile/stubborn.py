"""A hostile agent that will not stop: it ignores SIGTERM, so does its child, and it never answers.

argv: MARKER PROMPT; its child carries MARKER in its command line.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"


def main() -> int:
    marker = sys.argv[1]
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen([sys.executable, "-c", STUBBORN, f"{marker}-child"])
    print("thinking...", flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    raise SystemExit(main())
