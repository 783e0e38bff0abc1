"""The amnesiac: remembers nothing, ever.

It says UNKNOWN, or NOT GIVEN where the prompt offers that answer: with an
empty memory, nothing was ever given to it. So it scores 1 on abstention
questions (the abilities suite's ``abstention`` category), which no memory
is needed to get right; any other score above 0.0 against it is a harness bug.

Given a coding-suite task it does the task as a capable agent without memory
would: it applies what this prompt says and nothing an earlier session said.
So it passes the ``scoped`` category, where the right thing is to apply no
rule from elsewhere, and fails the others.
"""

from __future__ import annotations

import sys

from pytest_recall.agents import coding_solver
from pytest_recall.agents.notebook import Notebook

NOT_GIVEN = "NOT GIVEN"


def main() -> int:
    prompt = sys.argv[-1] if len(sys.argv) > 1 else ""
    if coding_solver.is_session(prompt):
        notebook = Notebook(None)  # in memory: gone when this session ends
        print(coding_solver.respond(prompt, notebook))
        notebook.close()
        return 0
    print(NOT_GIVEN if f"output exactly: {NOT_GIVEN}" in prompt else "UNKNOWN")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
