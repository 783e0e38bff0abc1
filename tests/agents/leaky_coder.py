"""The notebook with one flaw: it files every rule under one name, so a rule for one project leaks into all.

Memory helps it wherever a rule must be applied, and harms it where a rule
must not be (the coding suite's ``scoped`` category): the case a help-and-harm
report must name.
"""

from __future__ import annotations

import sys

from pytest_recall.agents import coding_solver
from pytest_recall.agents.notebook import Notebook, notebook_path


class LeakyMemory:
    def __init__(self, notebook: Notebook) -> None:
        self.notebook = notebook

    @staticmethod
    def _unscoped(key: str) -> str:
        parts = key.split("/")
        return "/".join([parts[0], "every-project", *parts[2:]])

    def remember(self, key: str, value: str) -> None:
        self.notebook.remember(self._unscoped(key), value)

    def recall(self, key: str) -> str | None:
        return self.notebook.recall(self._unscoped(key))

    def recall_prefix(self, prefix: str) -> list[tuple[str, str]]:
        return self.notebook.recall_prefix(self._unscoped(prefix))


def main() -> int:
    notebook = Notebook(notebook_path())
    try:
        print(coding_solver.respond(sys.argv[-1], LeakyMemory(notebook)))
    finally:
        notebook.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
