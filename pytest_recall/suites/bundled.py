"""The suites that ship with pytest-recall, wherever it is installed.

A wheel carries the repository's ``cases/`` as ``pytest_recall/bundled_cases``
(see the hatch ``force-include`` in ``pyproject.toml``); a checkout, editable
or not, has them beside the package. Either way a user can find a suite's
folder and hand it to pytest, without the repository.
"""

from __future__ import annotations

import difflib
import functools
import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
WHEEL_CASES = PACKAGE_DIR / "bundled_cases"
CHECKOUT_CASES = PACKAGE_DIR.parent / "cases"


def bundled_root() -> Path | None:
    """Where the bundled suites are: the wheel's copy first, since a checkout's sibling may be anything."""
    for candidate in (WHEEL_CASES, CHECKOUT_CASES):
        if candidate.is_dir():
            return candidate
    return None


def bundled_suites() -> dict[str, Path]:
    """Suite name -> its folder, in name order."""
    root = bundled_root()
    if root is None:
        return {}
    return {
        path.name: path for path in sorted(root.iterdir()) if path.is_dir() and not path.name.startswith((".", "_"))
    }


def wheel_nodeid(path: Path) -> str | None:
    """The test id of a folder in the wheel's copy, from the suite's name down.

    Run from an installed wheel, a suite lies deep in site-packages, and
    pytest would name every case by that path (``.venv/lib/python3.11/...``)
    in test ids, the report and JUnit class names.
    """
    real = _real_path(os.fspath(path))
    wheel = os.fspath(WHEEL_CASES)
    if real == wheel or not real.startswith(wheel + os.sep):
        return None
    return Path(real[len(wheel) + 1 :]).as_posix()


def _real_path(path: str) -> str:
    """``os.path.realpath``, with the folder above taken from a cache: collection asks for every case
    folder in turn, and a full resolve checks each part of a long path for a link each time."""
    if os.path.islink(path):
        return os.path.realpath(path)
    head, _, name = path.rpartition(os.sep)
    if not head or name in ("", ".", ".."):
        return os.path.realpath(path)
    return f"{_real_folder(head)}{os.sep}{name}"


@functools.lru_cache(maxsize=256)
def _real_folder(folder: str) -> str:
    return os.path.realpath(folder)


def suite_path(name: str) -> Path:
    """The folder of one bundled suite; a one-line ValueError names the choices."""
    suites = bundled_suites()
    if name in suites:
        return suites[name]
    if not suites:
        raise ValueError("this installation carries no bundled suites; reinstall pytest-recall from its wheel")
    close = difflib.get_close_matches(name, suites, n=1)
    guess = f"did you mean {close[0]}? " if close else ""
    raise ValueError(f"no bundled suite named {name!r}; {guess}choose one of: {', '.join(suites)}")
