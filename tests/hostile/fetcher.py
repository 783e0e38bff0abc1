"""An agent that answers with what a URL on the host's loopback says: a stand-in for a local model server.

argv: URL PROMPT. Prints the body of URL, or the error.
"""

from __future__ import annotations

import sys
import urllib.request


def main() -> int:
    try:
        with urllib.request.urlopen(sys.argv[1], timeout=10) as response:
            print(response.read().decode())
    except OSError as exc:
        print(f"unreachable: {exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
