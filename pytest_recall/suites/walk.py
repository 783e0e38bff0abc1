"""Every case under a folder, the way pytest would collect it, for commands that read suites outside pytest."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pytest_recall.cases import Case, is_case_dir, load_case_dir
from pytest_recall.suites.suite_file import is_suite_dir, suite_cases


def cases_under(path: Path) -> Iterator[Case]:
    """A case folder's case, a suite folder's generated cases, or those of every folder below, in name order.

    A malformed case raises :class:`~pytest_recall.cases.model.CaseError`, one line naming the file.
    """
    if is_suite_dir(path):
        yield from suite_cases(path, str(path))
    elif is_case_dir(path):
        yield load_case_dir(path, suite=path.parent.name, source=str(path), known_kinds=None)
    elif path.is_dir():
        for child in sorted(path.iterdir()):
            if child.is_dir() and not child.name.startswith((".", "_")):
                yield from cases_under(child)
