"""A hostile agent that tries to outrun the reaper, to keep a process alive past its session.

argv: MARKER MODE PROMPT. It answers with the prompt's last word, then:

- ``race``: leaves chains of processes that keep forking and calling ``setsid``,
  each parent exiting: a process forked after the reaper's look at /proc that
  leaves the group before the group is killed escapes both;
- ``uid``: leaves a ``setsid`` daemon that changes its uid to 65534 (nobody),
  keeping its environment and so its session token (needs root);
- ``cgroup-move``: leaves a ``setsid`` daemon that moves itself out of the
  session's cgroup into the root cgroup, where ``cgroup.kill`` cannot reach it
  (needs root and a cgroup v2 mount).

Every process carries MARKER in its command line (they are forks of this one).
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Callable

NOBODY = 65534
PR_SET_DUMPABLE = 4
CHAINS = 3
HOP_FOR_S = 2.0


def race() -> None:
    """Chains of processes that hop: each forks a child, which calls setsid, and exits.

    The live end of a chain is always newer than any list of pids the reaper
    took a moment ago, and never in the process group it kills.
    """
    for _ in range(CHAINS):
        if os.fork() == 0:
            break
    else:
        return
    deadline = time.monotonic() + HOP_FOR_S
    while time.monotonic() < deadline:
        try:
            if os.fork() != 0:
                os._exit(0)
        except OSError:
            pass
        os.setsid()
        time.sleep(0.0005)
    time.sleep(60)
    os._exit(0)


def daemon(become: Callable[[], None]) -> None:
    """A setsid daemon that does ``become`` and sleeps; the agent exits only once it has."""
    ready, done = os.pipe()
    if os.fork() != 0:
        os.close(done)
        os.read(ready, 1)
        return
    os.setsid()
    become()
    os.write(done, b"1")
    time.sleep(60)
    os._exit(0)


def nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    # Dumpable again, so its /proc files are owned by nobody rather than root.
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)


def root_cgroup() -> None:
    with open("/proc/self/mountinfo", encoding="utf-8") as mounts:
        root = next(line.split()[4] for line in mounts if " - cgroup2 " in line)
    with open(os.path.join(root, "cgroup.procs"), "w", encoding="ascii") as procs:
        procs.write(str(os.getpid()))


def main() -> int:
    mode, prompt = sys.argv[2], sys.argv[-1]
    print(prompt.split()[-1], flush=True)
    for stream in (0, 1, 2):
        os.close(stream)  # the session's pty and pipe see end of file only from the harness's side
    if mode == "race":
        race()
    else:
        daemon({"uid": nobody, "cgroup-move": root_cgroup}[mode])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
