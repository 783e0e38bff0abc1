"""The checks of a ``files`` answer: what each one says, and the spelling answer.json must use.

A ``files`` answer is ``{"checks": [...]}``; each check names a ``path``
relative to the workspace (a trailing ``/`` names a folder) and exactly one
test:

- ``{"exists": true}`` / ``{"absent": true}``
- ``{"contains": "text"}`` / ``{"not_contains": "text"}``
- ``{"matches": "regex", "flags": "ims"}`` (``flags`` optional: i, m, s, x)
- ``{"unchanged": true}``: as the judged step found it (a folder: every file in it)
- ``{"json": "a.b.0", "equals": value}`` / ``{"toml": "tool.ruff.line-length", "equals": 97}``
  (a key path is dotted text, or a list when a key holds a dot)

The checks are parsed here, below the judge, so that a malformed one is
refused when the case is collected, with the spelling that works.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TESTS = ("exists", "absent", "contains", "not_contains", "matches", "unchanged", "json", "toml")
FLAG_BITS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}
_OPTIONAL = {"matches": {"flags"}, "json": {"equals"}, "toml": {"equals"}}
_HOW = 'a files answer must be an object like {"checks": [{"path": "src/app.py", "contains": "text"}]}'


@dataclass(frozen=True, slots=True)
class FileCheck:
    """One check on one path; ``value`` is the test's operand, ``equals`` the value a key path must hold."""

    path: str
    test: str
    value: Any
    flags: str = ""
    equals: Any = None

    @property
    def is_dir(self) -> bool:
        return self.path.endswith("/")

    @property
    def key_path(self) -> tuple[str | int, ...]:
        if isinstance(self.value, list):
            return tuple(self.value)
        return tuple(int(part) if part.isdigit() else part for part in str(self.value).split("."))

    def describe(self) -> str:
        """The check as a reader says it, for a failure reason."""
        if self.test in ("exists", "absent", "unchanged"):
            return f"{self.path} {self.test}"
        if self.test in ("json", "toml"):
            return f"{self.path} {self.test} {'.'.join(map(str, self.key_path))} equals {_shown(self.equals)}"
        flags = f" (flags {self.flags})" if self.flags else ""
        return f"{self.path} {self.test.replace('_', ' ')} {_shown(self.value)}{flags}"

    def pattern(self) -> re.Pattern[str]:
        bits = 0
        for letter in self.flags:
            bits |= FLAG_BITS[letter]
        return re.compile(str(self.value), bits)


def parse_checks(answer: Any) -> tuple[FileCheck, ...]:
    """The checks of a ``files`` answer; raises ValueError with the reason when one is malformed."""
    if not isinstance(answer, Mapping) or set(answer) != {"checks"}:
        raise ValueError(f"{_HOW}, not {_shown(answer)}")
    raw = answer["checks"]
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{_HOW}; its checks must be a non-empty list")
    return tuple(_parse_one(index, item) for index, item in enumerate(raw, start=1))


def files_answer_error(answer: Any) -> str | None:
    """Why a ``files`` answer can never be judged, with how to write it; None when it is fine."""
    try:
        parse_checks(answer)
    except ValueError as exc:
        return str(exc)
    return None


def _parse_one(index: int, item: Any) -> FileCheck:
    where = f"files check {index}"
    if not isinstance(item, Mapping):
        raise ValueError(f"{where} must be an object with a path and one test, not {_shown(item)}")
    path = item.get("path")
    if not isinstance(path, str) or not path or path.startswith("/") or ".." in path.split("/"):
        raise ValueError(f"{where}: path must be a relative path inside the workspace, not {_shown(path)}")
    tests = [name for name in TESTS if name in item]
    if len(tests) != 1:
        raise ValueError(f"{where} ({path}) must have exactly one of {', '.join(TESTS)}; it has {len(tests)}")
    test = tests[0]
    unknown = sorted(set(item) - {"path", test} - _OPTIONAL.get(test, set()))
    if unknown:
        raise ValueError(f"{where} ({path}): unknown key(s) {', '.join(unknown)}")
    value = item[test]
    if test in ("exists", "absent", "unchanged") and value is not True:
        raise ValueError(f'{where} ({path}): write "{test}": true')
    if test in ("contains", "not_contains", "matches") and (not isinstance(value, str) or not value):
        raise ValueError(f"{where} ({path}): {test} takes a non-empty string, not {_shown(value)}")
    flags = item.get("flags", "")
    if test == "matches":
        if not isinstance(flags, str) or set(flags) - set(FLAG_BITS):
            raise ValueError(f"{where} ({path}): flags is a string of {''.join(FLAG_BITS)}, not {_shown(flags)}")
        try:
            FileCheck(path, test, value, flags).pattern()
        except re.error as exc:
            raise ValueError(f"{where} ({path}): matches is not a valid regular expression ({exc})") from None
    if test in ("json", "toml"):
        if "equals" not in item:
            raise ValueError(f"{where} ({path}): a {test} check needs equals, the value its key path must hold")
        well_formed = (isinstance(value, str) and value) or (
            isinstance(value, list) and value and all(isinstance(k, (str, int)) for k in value)
        )
        if not well_formed:
            raise ValueError(f'{where} ({path}): {test} takes a key path like "tool.ruff.line-length"')
    return FileCheck(path, test, value, flags, item.get("equals"))


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
