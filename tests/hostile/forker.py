"""A hostile agent that leaves processes behind: children in its group, and a ``setsid`` daemon.

argv: MARKER MODE PROMPT. Every process it starts carries MARKER in its
command line, so a test can look for survivors. MODE ``plain`` leaves the
daemon its environment (and so the session token); ``scrub`` starts it with
an empty environment, the one thing the default mode cannot follow.
The agent then answers with the prompt's last word and exits at once.
"""

from __future__ import annotations

import subprocess
import sys

SLEEP = "import sys, time; time.sleep(300)"


def main() -> int:
    marker, mode, prompt = sys.argv[1], sys.argv[2], sys.argv[-1]
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    for _ in range(2):
        subprocess.Popen([sys.executable, "-c", SLEEP, f"{marker}-child"], **quiet)
    env = {} if mode == "scrub" else None
    subprocess.Popen([sys.executable, "-c", SLEEP, f"{marker}-daemon"], start_new_session=True, env=env, **quiet)
    print(prompt.split()[-1], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
