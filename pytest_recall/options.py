"""Every ``--recall-*`` flag with its ini twin, and the settings read from them.

Each option is declared once here; the flag and the ini key share one help
text, and a flag given on the command line wins over the ini value.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.case import CaseError, parse_positive_seconds
from pytest_recall.case_run import DEFAULT_GRACE_S, DEFAULT_TIMEOUT_S
from pytest_recall.grader import DEFAULT_THRESHOLD
from pytest_recall.output import DEFAULT_MAX_OUTPUT_BYTES


@dataclass(frozen=True, slots=True)
class Option:
    name: str  # the ini key; the flag is --recall-<name with dashes>
    help: str
    default: str | None = None
    kind: str = "string"

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


OPTIONS = (
    Option(
        "recall_cmd",
        "Agent command to test, e.g. 'myagent --flag'. Each step runs as this command, shell-split, "
        "plus the step's prompt as one final argument.",
    ),
    Option(
        "recall_timeout",
        f"Seconds one agent session may run before its process group is killed and the case scores 0 "
        f"(default {DEFAULT_TIMEOUT_S:g}). A case.toml 'timeout' overrides it per case.",
        str(DEFAULT_TIMEOUT_S),
    ),
    Option(
        "recall_grace",
        f"Seconds between SIGTERM and SIGKILL when a session times out (default {DEFAULT_GRACE_S:g}).",
        str(DEFAULT_GRACE_S),
    ),
    Option(
        "recall_threshold",
        f"Run-level pass mark: the run passes when its mean score reaches this (default {DEFAULT_THRESHOLD}).",
        str(DEFAULT_THRESHOLD),
    ),
    Option("recall_report", "Write the run report as one JSON document to this path at session end."),
    Option(
        "recall_max_output",
        f"Bytes of each stream kept per session (default {DEFAULT_MAX_OUTPUT_BYTES}). Beyond it the head and the "
        "tail are kept, so the final line is still judged, and the record notes the truncation.",
        str(DEFAULT_MAX_OUTPUT_BYTES),
    ),
    Option(
        "recall_concurrency",
        "Cases run at once inside one pytest process (default 1). Agents mostly wait on I/O, so this can far "
        "exceed the core count; it is cheaper than as many xdist workers. Ignored inside xdist workers.",
        "1",
    ),
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("recall", "pytest-recall: does the agent remember across sessions?")
    for option in OPTIONS:
        group.addoption(option.flag, dest=option.name, default=None, metavar="VALUE", help=option.help)
        parser.addini(option.name, option.help, type="string", default=option.default)


def raw_value(config: pytest.Config, name: str) -> str | None:
    """The flag if given, else the ini value, else None."""
    value = config.getoption(name)
    if value is None:
        ini: Any = config.getini(name)
        value = ini if ini not in ("", None) else None
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class Settings:
    """The options after validation; a bad value is one UsageError line."""

    command: str | None
    argv: tuple[str, ...]
    timeout_s: float
    grace_s: float
    threshold: float
    report_path: Path | None
    max_output_bytes: int
    concurrency: int

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        __tracebackhide__ = True
        command = raw_value(config, "recall_cmd")
        try:
            argv = tuple(shlex.split(command)) if command else ()
        except ValueError as exc:
            raise pytest.UsageError(f"--recall-cmd cannot be split like a shell command line: {exc}") from None
        if command is not None and not argv:
            raise pytest.UsageError("--recall-cmd is empty: give the command that starts your agent")
        if argv and os.sep in argv[0] and not os.path.isabs(argv[0]):
            # Sessions run in directories of their own, where a relative path means nothing.
            argv = (os.path.abspath(argv[0]), *argv[1:])
        report = raw_value(config, "recall_report")
        return cls(
            command=command,
            argv=argv,
            timeout_s=_seconds(config, "recall_timeout"),
            grace_s=_seconds(config, "recall_grace"),
            threshold=_fraction(config, "recall_threshold"),
            report_path=Path(os.path.abspath(report)) if report else None,
            max_output_bytes=_whole(config, "recall_max_output", minimum=1024),
            concurrency=_whole(config, "recall_concurrency", minimum=1),
        )


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _seconds(config: pytest.Config, name: str) -> float:
    __tracebackhide__ = True
    try:
        return parse_positive_seconds(raw_value(config, name), _flag(name))
    except CaseError as exc:
        raise pytest.UsageError(str(exc)) from None


def _fraction(config: pytest.Config, name: str) -> float:
    __tracebackhide__ = True
    value = raw_value(config, name)
    try:
        number = float(value) if value is not None else -1.0
    except ValueError:
        number = -1.0
    if not 0.0 <= number <= 1.0:
        raise pytest.UsageError(f"{_flag(name)} must be a number from 0 to 1, not {value!r}")
    return number


def _whole(config: pytest.Config, name: str, *, minimum: int) -> int:
    __tracebackhide__ = True
    value = raw_value(config, name)
    try:
        number = int(value) if value is not None else minimum - 1
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise pytest.UsageError(f"{_flag(name)} must be a whole number of at least {minimum}, not {value!r}")
    return number
