"""An agent that looks for descriptors the harness let it inherit.

argv: PROMPT. It lists its open descriptors above 2 on stderr as
``FDS 3,4`` (or ``FDS -``), then answers with the prompt's last word.
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    # listdir's own descriptor is closed again before the list is used; only fds that stay open count.
    names = sorted(int(name) for name in os.listdir("/proc/self/fd"))
    open_fds = [fd for fd in names if fd > 2 and _is_open(fd)]
    print("FDS " + (",".join(map(str, open_fds)) or "-"), file=sys.stderr, flush=True)
    print(sys.argv[-1].split()[-1], flush=True)
    return 0


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
