"""Generated suites declared by a ``suite.toml``: cases made on demand, never written to disk.

A suite file names a family and its parameters::

    family = "ledger"   # seed = 7, count = 256
    family = "audit"    # split = "eval", size = 32

Every worker builds the same cases in the same order from those numbers
alone, so node ids are stable across runs and across xdist workers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_recall.case import Case, CaseError, read_toml

SUITE_FILE = "suite.toml"


def is_suite_dir(path: Path) -> bool:
    return (path / SUITE_FILE).is_file()


def _whole(settings: Mapping[str, Any], key: str, source: str, *, low: int, high: int | None = None) -> int:
    value = settings.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise CaseError(f"{source}: '{key}' must be a whole number {bound}, not {value!r}")
    return value


def _ledger(settings: Mapping[str, Any], suite: str, source: str) -> Iterator[Case]:
    from pytest_recall.suites import ledger

    seed = _whole(settings, "seed", source, low=0)
    count = _whole(settings, "count", source, low=1)
    for index in range(count):
        yield ledger.generate_one(seed, index, suite=suite)


def _audit(settings: Mapping[str, Any], suite: str, source: str) -> Iterator[Case]:
    from pytest_recall.suites import audit

    split = settings.get("split")
    if split not in audit.SPLITS:
        raise CaseError(f"{source}: 'split' must be one of {', '.join(audit.SPLITS)}, not {split!r}")
    size = _whole(settings, "size", source, low=1, high=audit.MAX_SIZE)
    for index in range(size):
        yield audit.generate_one(split, index, suite=suite)


FAMILIES: dict[str, Callable[[Mapping[str, Any], str, str], Iterator[Case]]] = {
    "ledger": _ledger,
    "audit": _audit,
}


def suite_cases(folder: Path, source: str) -> Iterator[Case]:
    """The cases a suite folder declares, built one at a time."""
    settings = read_toml(folder / SUITE_FILE, source)
    family = settings.get("family")
    build = FAMILIES.get(str(family))
    if build is None:
        raise CaseError(f"{source}: 'family' must be one of {', '.join(FAMILIES)}, not {family!r}")
    try:
        yield from build(settings, folder.name, source)
    except ValueError as exc:
        raise CaseError(f"{source}: {exc}") from None
