"""Typed reads of the ``--recall-*`` options: each bad value is one usage line that names its flag.

Values are checked as they are parsed, the way pytest's ``junitxml`` does:
a mode against its choices (from the option table, so from its ``Literal``),
a number against its range, a path made absolute, a ``--recall-env`` entry
against the placeholders a session fills in.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.cases import CaseError, parse_positive_seconds
from pytest_recall.plugin.option_model import flag_of
from pytest_recall.plugin.options import OPTION_BY_NAME, raw_value
from pytest_recall.sessions import HomeCopy, HomeMode, check_env_template


class OptionReader:
    """The options of one pytest config, read by type."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def text(self, name: str) -> str | None:
        return raw_value(self.config, name)

    def seconds(self, name: str, *, zero_ok: bool = False) -> float:
        __tracebackhide__ = True
        try:
            return parse_positive_seconds(self.text(name), flag_of(name), zero_ok=zero_ok)
        except CaseError as exc:
            raise pytest.UsageError(str(exc)) from None

    def optional_seconds(self, name: str) -> float | None:
        """Seconds when given; None leaves the choice to each case."""
        __tracebackhide__ = True
        return self.seconds(name) if self.text(name) else None

    def fraction(self, name: str) -> float:
        __tracebackhide__ = True
        value = self.text(name)
        try:
            number = float(value) if value is not None else -1.0
        except ValueError:
            number = -1.0
        if not 0.0 <= number <= 1.0:
            raise pytest.UsageError(f"{flag_of(name)} must be a number from 0 to 1, not {value!r}")
        return number

    def dollars(self, name: str) -> float | None:
        """An amount of US dollars (a leading ``$`` allowed); unset or blank is None, no limit."""
        __tracebackhide__ = True
        value = self.text(name)
        if value is None or not value.strip():
            return None
        try:
            number = float(value.strip().lstrip("$"))
        except ValueError:
            number = -1.0
        if not 0.0 <= number < float("inf"):
            raise pytest.UsageError(f"{flag_of(name)} must be an amount of US dollars, like 25 or 2.50, not {value!r}")
        return number

    def whole(self, name: str, *, minimum: int) -> int:
        __tracebackhide__ = True
        value = self.text(name)
        try:
            number = int(value) if value is not None else minimum - 1
        except ValueError:
            number = minimum - 1
        if number < minimum:
            raise pytest.UsageError(f"{flag_of(name)} must be a whole number of at least {minimum}, not {value!r}")
        return number

    def switch(self, name: str) -> bool:
        """A flag that only switches on; its ini twin says true or false."""
        __tracebackhide__ = True
        if self.config.getoption(name):
            return True
        try:
            return bool(self.config.getini(name))
        except (ValueError, pytest.UsageError) as exc:  # pytest 9 raises UsageError, older ones ValueError
            raise pytest.UsageError(f"{name} in your pytest configuration must be true or false: {exc}") from None

    def choice(self, name: str) -> Any:
        """A mode's value, one of its option's choices; unset, its default (None for an optional mode).

        Typed ``Any`` so that it lands in a field of the mode's ``Literal`` type: the check is here.
        """
        __tracebackhide__ = True
        option = OPTION_BY_NAME[name]
        given = self.text(name)
        value = given.strip() if given else option.default
        if value is not None and value not in option.choices:
            raise pytest.UsageError(f"{flag_of(name)} must be one of {', '.join(option.choices)}, not {value!r}")
        return value

    def path(self, name: str) -> Path | None:
        value = self.text(name)
        return Path(os.path.abspath(os.path.expanduser(value))) if value else None

    def paths(self, name: str) -> tuple[Path, ...]:
        """A comma-separated list of paths, each made absolute."""
        value = self.text(name) or ""
        return tuple(Path(os.path.abspath(os.path.expanduser(p.strip()))) for p in value.split(",") if p.strip())

    def lines(self, name: str) -> list[str]:
        """A repeatable flag, else its ini twin's lines, stripped, blanks dropped."""
        given = self.config.getoption(name) or self.config.getini(name) or []
        return [entry for entry in (str(item).strip() for item in given) if entry]


def parse_home_copy(value: str | None, home: HomeMode) -> tuple[HomeCopy, ...]:
    """``SRC[:DEST]`` entries; each SRC must exist now, not fail in every case later."""
    __tracebackhide__ = True
    entries = [entry.strip() for entry in (value or "").split(",") if entry.strip()]
    if entries and home != "case":
        raise pytest.UsageError("--recall-home-copy needs --recall-home=case: it seeds each case's own HOME")
    real_home = Path(os.environ.get("HOME") or os.path.expanduser("~"))
    return tuple(_home_copy(entry, real_home) for entry in entries)


def _home_copy(entry: str, real_home: Path) -> HomeCopy:
    __tracebackhide__ = True
    source_text, _, dest = entry.partition(":")
    source = Path(os.path.expanduser(source_text))
    source = source if source.is_absolute() else real_home / source
    if not source.exists():
        raise pytest.UsageError(f"--recall-home-copy: {source} does not exist; create it or drop it")
    if not dest:
        if not source.is_relative_to(real_home):
            raise pytest.UsageError(
                f"--recall-home-copy: {source} is outside your HOME, so say where it goes: {source_text}:DEST, "
                "with DEST relative to the case HOME"
            )
        dest = source.relative_to(real_home).as_posix()
    dest = dest.strip("/")
    if not dest or os.path.isabs(dest) or ".." in Path(dest).parts:
        raise pytest.UsageError(f"--recall-home-copy: {entry!r}: DEST must be a path inside the case HOME")
    return HomeCopy(source, dest)


def parse_env(entries: list[str]) -> tuple[tuple[str, str | None], ...]:
    """``--recall-env``: NAME=VALUE templates and -NAME unsets, checked now rather than in every case."""
    __tracebackhide__ = True
    settings: list[tuple[str, str | None]] = []
    for entry in entries:
        if entry.startswith("-"):
            name, value = entry[1:], None
        else:
            name, sep, template = entry.partition("=")
            if not sep:
                raise pytest.UsageError(f"--recall-env: {entry!r} must be NAME=VALUE, or -NAME to unset NAME")
            value = template
            problem = check_env_template(template)
            if problem is not None:
                raise pytest.UsageError(f"--recall-env: {entry!r}: {problem}")
        if not name or "\0" in name or "=" in name:
            raise pytest.UsageError(f"--recall-env: {entry!r} names no variable")
        settings.append((name, value))
    return tuple(settings)
