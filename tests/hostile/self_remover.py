"""A hostile agent with no memory that removes its own program after its first step.

Run as a copy of itself (the test copies it and adds a ``#!`` line): every
step answers UNKNOWN, and step 1 then deletes the program, or with argv
``chmod`` takes its execute bits away, so the next step cannot start.
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    if os.environ["RECALL_STEP"] == "1":
        if sys.argv[1] == "chmod":
            os.chmod(sys.argv[0], 0o644)
        else:
            os.unlink(sys.argv[0])
    print("UNKNOWN")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
