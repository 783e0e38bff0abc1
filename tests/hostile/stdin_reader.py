"""An agent that reads all of stdin before it answers, as many CLIs do when stdin is not a terminal.

It answers with the prompt's last word once stdin reaches its end.
"""

from __future__ import annotations

import sys


def main() -> int:
    data = sys.stdin.read()
    print(f"read {len(data)} characters from stdin")
    print(sys.argv[-1].split()[-1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
