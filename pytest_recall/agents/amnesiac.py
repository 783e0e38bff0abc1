"""The amnesiac: remembers nothing, ever. Any score above 0.0 against it is a harness bug."""

from __future__ import annotations


def main() -> int:
    print("UNKNOWN")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
