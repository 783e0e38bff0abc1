"""The amnesiac: remembers nothing, ever.

It says UNKNOWN, or NOT GIVEN where the prompt offers that answer: with an
empty memory, nothing was ever given to it. So it scores 1 on abstention
questions (the abilities suite's ``abstention`` category), which no memory
is needed to get right; any other score above 0.0 against it is a harness bug.
"""

from __future__ import annotations

import sys

NOT_GIVEN = "NOT GIVEN"


def main() -> int:
    prompt = sys.argv[-1] if len(sys.argv) > 1 else ""
    print(NOT_GIVEN if f"output exactly: {NOT_GIVEN}" in prompt else "UNKNOWN")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
