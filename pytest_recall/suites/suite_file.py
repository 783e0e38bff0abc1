"""Generated suites declared by a ``suite.toml``: cases made on demand, never written to disk.

A suite file names a family and its parameters::

    family = "ledger"   # seed = 7, count = 256
    family = "audit"    # split = "eval", size = 256, version = 3
    family = "abilities"  # seed = 17, count = 224, haystack_bytes = 60000 (optional), version = 2
    family = "coding"     # seed = 29, count = 224, version = 2; workspace = "carry" runs every case carried

Every worker builds the same cases in the same order from those numbers
alone, so node ids are stable across runs and across xdist workers, and a
collected case is only its suite and index: it is built again, alone, when
it runs, so no case's prompts wait in memory from collection to the end. The
keys a case.toml uses for how sessions run (``timeout``, ``session``,
``ready_pattern``, ``ready_idle``) apply to every case of the suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from pytest_recall.cases import (
    PROTOCOL_KEYS,
    Case,
    CaseError,
    McpConfigError,
    read_toml,
    session_fields,
    settings_with_mcp,
)

SUITE_FILE = "suite.toml"
SESSION_KEYS = ("timeout", "session", "workspace", "ok_exit_codes", "mcp", *PROTOCOL_KEYS)
# A bound on the cases one suite file declares, so a typo cannot ask for a billion.
MAX_COUNT = 10_000


def is_suite_dir(path: Path) -> bool:
    return (path / SUITE_FILE).is_file()


def _whole(settings: Mapping[str, Any], key: str, source: str, *, low: int, high: int | None = None) -> int:
    value = settings.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise CaseError(f"{source}: '{key}' must be a whole number {bound}, not {value!r}")
    return value


# A family reads its parameters once and says how many cases they declare and how to build any one of them,
# so a collected case is its suite and its index, and is built again, alone, when it runs.
Family = Callable[[Mapping[str, Any], str, str], tuple[int, Callable[[int], Case]]]


def _ledger(settings: Mapping[str, Any], suite: str, source: str) -> tuple[int, Callable[[int], Case]]:
    from pytest_recall.suites import ledger

    seed = _whole(settings, "seed", source, low=0)
    count = _whole(settings, "count", source, low=1, high=MAX_COUNT)
    return count, partial(ledger.generate_one, seed, suite=suite)


def _audit(settings: Mapping[str, Any], suite: str, source: str) -> tuple[int, Callable[[int], Case]]:
    from pytest_recall.suites import audit, audit_v2

    split = settings.get("split")
    if split not in audit.SPLITS:
        raise CaseError(f"{source}: 'split' must be one of {', '.join(audit.SPLITS)}, not {split!r}")
    size = _whole(settings, "size", source, low=1, high=audit.MAX_SIZE)
    # A new suite gets the latest version; an older one by name keeps its cases byte for byte.
    version = _version(settings, source, (1, *audit_v2.VERSIONS), audit_v2.VERSION)
    return size, partial(_one_audit, str(split), suite, version)


def _one_audit(split: str, suite: str, version: int, index: int) -> Case:
    from pytest_recall.suites import audit, audit_v2

    if version == 1:
        return audit.generate_one(split, index, suite=suite)
    return audit_v2.generate_one(split, index, suite=suite, version=version)


def _abilities(settings: Mapping[str, Any], suite: str, source: str) -> tuple[int, Callable[[int], Case]]:
    from pytest_recall.suites import abilities

    seed = _whole(settings, "seed", source, low=0)
    count = _whole(settings, "count", source, low=1, high=MAX_COUNT)
    haystack = settings.get("haystack_bytes", abilities.DEFAULT_HAYSTACK_BYTES)
    haystack = _whole(
        {"haystack_bytes": haystack}, "haystack_bytes", source, low=1000, high=abilities.MAX_HAYSTACK_BYTES
    )
    version = _version(settings, source, abilities.VERSIONS, abilities.VERSION)
    return count, partial(abilities.generate_one, seed, suite=suite, haystack_bytes=haystack, version=version)


def _coding(settings: Mapping[str, Any], suite: str, source: str) -> tuple[int, Callable[[int], Case]]:
    from pytest_recall.suites import coding

    seed = _whole(settings, "seed", source, low=0)
    count = _whole(settings, "count", source, low=1)
    version = _version(settings, source, coding.VERSIONS, coding.VERSION)
    return count, partial(coding.generate_one, seed, suite=suite, version=version)


def _version(settings: Mapping[str, Any], source: str, known: tuple[int, ...], latest: int) -> int:
    """A suite file's ``version``: the latest by default, an older one by name, so old results stay comparable."""
    version = settings.get("version", latest)
    if isinstance(version, bool) or version not in known:
        raise CaseError(f"{source}: 'version' must be one of {', '.join(map(str, known))}, not {version!r}")
    return int(version)


FAMILIES: dict[str, Family] = {
    "ledger": _ledger,
    "audit": _audit,
    "abilities": _abilities,
    "coding": _coding,
}
# The parameters each family reads; any other key in a suite file is a typo, named rather than ignored.
FAMILY_KEYS: dict[str, tuple[str, ...]] = {
    "ledger": ("seed", "count"),
    "audit": ("split", "size", "version"),
    "abilities": ("seed", "count", "haystack_bytes", "version"),
    "coding": ("seed", "count", "version"),
}


@dataclass(frozen=True, slots=True)
class GeneratedSuite:
    """A suite file read once: how many cases it declares and how to build any one of them again.

    A collected case of a generated suite is this and its index, not its
    prompts: :meth:`case` builds it again, the same to the byte, when it runs.
    """

    count: int
    build: Callable[[int], Case]
    source: str
    # The suite file's session keys (timeout, session, ...), applied to every case.
    fields: Mapping[str, Any] = field(default_factory=dict)

    def case(self, index: int) -> Case:
        try:
            case = self.build(index)
        except ValueError as exc:
            raise CaseError(f"{self.source}: {exc}") from None
        return replace(case, **self.fields) if self.fields else case

    def __iter__(self) -> Iterator[Case]:
        return (self.case(index) for index in range(self.count))


def suite_cases(folder: Path, source: str) -> Iterator[Case]:
    """The cases a suite folder declares, built one at a time."""
    yield from generated_suite(folder, source)


def generated_suite(folder: Path, source: str) -> GeneratedSuite:
    """The suite a folder's suite file declares."""
    try:
        settings = settings_with_mcp(read_toml(folder / SUITE_FILE, source), folder, source)
    except McpConfigError as exc:
        raise CaseError(str(exc)) from None
    return family_suite(settings, suite=folder.name, source=source)


def family_cases(settings: Mapping[str, Any], *, suite: str, source: str) -> Iterator[Case]:
    """The cases ``family`` and its parameters declare: a suite file's table, or ``pytest-recall generate``'s flags."""
    yield from family_suite(settings, suite=suite, source=source)


def family_suite(settings: Mapping[str, Any], *, suite: str, source: str) -> GeneratedSuite:
    """The suite ``family`` and its parameters declare; a wrong parameter is refused here, before any case."""
    family = settings.get("family")
    build = FAMILIES.get(str(family))
    if build is None:
        raise CaseError(f"{source}: 'family' must be one of {', '.join(FAMILIES)}, not {family!r}")
    known = ("family", *FAMILY_KEYS.get(str(family), ()), *SESSION_KEYS)
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise CaseError(f"{source}: unknown {SUITE_FILE} key(s) {', '.join(unknown)}; allowed: {', '.join(known)}")
    session_keys = {key: settings[key] for key in SESSION_KEYS if key in settings}
    fields = session_fields(session_keys, source) if session_keys else {}
    try:
        count, one = build(settings, suite, source)
    except ValueError as exc:
        raise CaseError(f"{source}: {exc}") from None
    return GeneratedSuite(count, one, source, fields)
