"""An agent that takes its time, and leaves a double-forked daemon behind while it does.

argv: MARKER PIDFILE PROMPT. It starts a child that starts a grandchild in a
session of its own (``setsid``) and exits at once, so the grandchild is
nobody's child and in no group of the agent's. The grandchild writes its pid
to PIDFILE, then sleeps; the agent sleeps too. Both carry MARKER in their
command lines, so a test can look for survivors.
"""

from __future__ import annotations

import subprocess
import sys
import time

DAEMON = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(300)"
MIDDLE = (
    "import subprocess, sys\n"
    "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2], sys.argv[3]], start_new_session=True,\n"
    "                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
)


def main() -> int:
    marker, pidfile = sys.argv[1], sys.argv[2]
    subprocess.run([sys.executable, "-c", MIDDLE, DAEMON, pidfile, f"{marker}-daemon"], check=True)
    time.sleep(300)
    print(sys.argv[-1].split()[-1], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
