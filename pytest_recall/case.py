"""Cases, and how a case folder on disk becomes one.

A case is plain data: the prompts of its steps and the answer expected from
the last one. Every source of cases (a case folder, a generated suite, a
trap-task directory) produces the same frozen :class:`Case`, so the runner,
the judge and the report never need to know where a case came from.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

ANSWER_FILE = "answer.json"
SETTINGS_FILE = "case.toml"
REQUIRED_ANSWER_KEYS = ("id", "category", "answer", "answer_kind")
SESSION_MODES = ("fresh", "continue")
_STEP_FILE = re.compile(r"^step(\d+)\.txt$")
# Settings a case.toml may carry; anything else is a typo worth reporting.
KNOWN_SETTINGS = frozenset({"timeout", "category", "session", "ready_pattern", "ready_idle"})


class CaseError(Exception):
    """A case that cannot be loaded. The message is one line that names the file."""


@dataclass(frozen=True, slots=True)
class Step:
    """One session's prompt.

    ``feedback`` is set on a step that must first tell the agent how its
    previous answer was judged (the audit suite's rehearsal): it holds the
    expectation the previous step's stdout is judged against.
    """

    number: int
    prompt: str
    feedback: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Case:
    """Everything needed to run and judge one case, and nothing about how."""

    case_id: str
    suite: str
    steps: tuple[Step, ...]
    expected: Mapping[str, Any]
    source: str
    timeout_s: float | None = None
    session: str = "fresh"
    ready_pattern: str | None = None
    ready_idle_s: float | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def category(self) -> str | None:
        category = self.expected.get("category")
        return str(category) if category is not None else None

    @property
    def answer_kind(self) -> str:
        return str(self.expected.get("answer_kind", "money"))

    @property
    def content_hash(self) -> str:
        """A digest of everything that decides the verdict.

        Resume compares it, so a case edited since a log was written is run
        again rather than silently reusing a stale score.
        """
        payload = {
            "steps": [[s.number, s.prompt, _plain(s.feedback)] for s in self.steps],
            "expected": _plain(self.expected),
            "session": self.session,
            "timeout": self.timeout_s,
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def is_case_dir(path: Path) -> bool:
    return (path / ANSWER_FILE).is_file()


def make_case(
    *,
    case_id: str,
    suite: str,
    prompts: list[str] | tuple[str, ...],
    expected: Mapping[str, Any],
    source: str,
    settings: Mapping[str, Any] | None = None,
    known_kinds: frozenset[str] | None = None,
) -> Case:
    """Validate and build a case from plain parts; every source goes through here."""
    __tracebackhide__ = True
    settings = dict(settings or {})
    if len(prompts) < 2:
        what = "no steps" if not prompts else "only one step"
        raise CaseError(f"{source}: {what}; a case needs step1.txt and step2.txt at least")
    missing = [k for k in REQUIRED_ANSWER_KEYS if k not in expected]
    if missing:
        raise CaseError(f"{source}: {ANSWER_FILE} lacks key(s) {', '.join(missing)}")
    kind = str(expected["answer_kind"])
    if known_kinds is not None and kind not in known_kinds:
        kinds = ", ".join(sorted(known_kinds))
        raise CaseError(f"{source}: unknown answer_kind {kind!r}; use one of: {kinds}")
    unknown = sorted(set(settings) - KNOWN_SETTINGS)
    if unknown:
        allowed = ", ".join(sorted(KNOWN_SETTINGS))
        raise CaseError(f"{source}: unknown {SETTINGS_FILE} key(s) {', '.join(unknown)}; allowed: {allowed}")
    expected = dict(expected)
    if "category" in settings:
        expected["category"] = str(settings["category"])
    session = str(settings.get("session", "fresh"))
    if session not in SESSION_MODES:
        raise CaseError(f"{source}: session must be one of {', '.join(SESSION_MODES)}, not {session!r}")
    timeout = settings.get("timeout")
    if timeout is not None:
        timeout = parse_positive_seconds(timeout, f"{source}: timeout")
    ready_idle = settings.get("ready_idle")
    if ready_idle is not None:
        ready_idle = parse_positive_seconds(ready_idle, f"{source}: ready_idle")
    ready_pattern = settings.get("ready_pattern")
    if ready_pattern is not None:
        try:
            re.compile(str(ready_pattern))
        except re.error as exc:
            raise CaseError(f"{source}: ready_pattern is not a valid regular expression ({exc})") from None
    steps = tuple(Step(number=i, prompt=p) for i, p in enumerate(prompts, start=1))
    return Case(
        case_id=case_id,
        suite=suite,
        steps=steps,
        expected=MappingProxyType(expected),
        source=source,
        timeout_s=timeout,
        session=session,
        ready_pattern=str(ready_pattern) if ready_pattern is not None else None,
        ready_idle_s=ready_idle,
    )


def parse_positive_seconds(value: Any, what: str) -> float:
    """Seconds from a user; one line of error rather than a ValueError traceback."""
    __tracebackhide__ = True
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise CaseError(f"{what} must be a number of seconds, not {value!r}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise CaseError(f"{what} must be a positive number of seconds, not {value!r}")
    return seconds


def read_step_prompts(folder: Path, source: str) -> list[str]:
    """The prompts of ``step1.txt``, ``step2.txt``, ... in order, refusing gaps."""
    numbered: dict[int, Path] = {}
    for entry in folder.iterdir():
        match = _STEP_FILE.match(entry.name)
        if match:
            numbered[int(match.group(1))] = entry
    if not numbered:
        return []
    expected_numbers = list(range(1, len(numbered) + 1))
    if sorted(numbered) != expected_numbers:
        gap = next(n for n in expected_numbers if n not in numbered)
        raise CaseError(f"{source}: step{gap}.txt is missing; steps must be numbered 1, 2, 3 ... without gaps")
    prompts = []
    for number in expected_numbers:
        try:
            prompts.append(numbered[number].read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise CaseError(f"{source}/step{number}.txt is not UTF-8 text") from None
    return prompts


def read_json(path: Path, source: str) -> Any:
    __tracebackhide__ = True
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaseError(f"{source}: {path.name} is not valid JSON ({exc})") from None


def read_toml(path: Path, source: str) -> dict[str, Any]:
    __tracebackhide__ = True
    try:
        settings: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
        return settings
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CaseError(f"{source}: {path.name} is not valid TOML ({exc})") from None


def load_case_dir(folder: Path, *, suite: str, source: str, known_kinds: frozenset[str] | None) -> Case:
    """Load a case folder: ``stepN.txt`` files, ``answer.json`` and an optional ``case.toml``."""
    __tracebackhide__ = True
    expected = read_json(folder / ANSWER_FILE, f"{source}")
    if not isinstance(expected, dict):
        raise CaseError(f"{source}: {ANSWER_FILE} must hold a JSON object")
    settings_path = folder / SETTINGS_FILE
    settings = read_toml(settings_path, source) if settings_path.is_file() else {}
    prompts = read_step_prompts(folder, source)
    return make_case(
        case_id=str(expected.get("id") or folder.name),
        suite=suite,
        prompts=prompts,
        expected=expected,
        source=source,
        settings=settings,
        known_kinds=known_kinds,
    )
