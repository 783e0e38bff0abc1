"""What the JUnit XML file says about a run, through pytest's public surface only.

Per-case properties need nothing here: they travel as ``recall_*`` scalars
in ``user_properties`` and pytest's writer copies them onto each testcase.
This module adds the run-level verdict to the ``<testsuite>`` and gives a
failed case a short ``message`` attribute, its verdict, while the element
text keeps the whole report with the transcripts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_recall.reporting.failure import verdict_report


def junit_writers(config: pytest.Config) -> list[Any]:
    """pytest's JUnit writer, found by what it can do rather than by importing it."""
    return [
        plugin
        for plugin in config.pluginmanager.get_plugins()
        if not isinstance(plugin, type) and callable(getattr(plugin, "add_global_property", None))
    ]


def run_properties(report: Mapping[str, Any]) -> list[tuple[str, object]]:
    """The run verdict as flat name/value pairs, named like the per-case ``recall_*`` ones."""
    properties: list[tuple[str, object]] = [
        ("recall_score", report.get("score")),
        ("recall_passed", report.get("passed")),
        ("recall_n_passed", report.get("n_passed")),
        ("recall_n_total", report.get("n_total")),
        ("recall_threshold", report.get("threshold")),
    ]
    for category, score in sorted((report.get("by_category") or {}).items()):
        properties.append((f"recall_category_{category}", score))
    return properties


def add_run_properties(config: pytest.Config, report: Mapping[str, Any]) -> None:
    """Called before the writer writes (the recorder's sessionfinish runs first)."""
    for writer in junit_writers(config):
        for name, value in run_properties(report):
            writer.add_global_property(name, value)


def verdict_headline(record: Mapping[str, Any]) -> str:
    """The first lines of a failed case's report: verdict, expected, reported, category."""
    expected = {"answer": record.get("expected"), "category": record.get("category")}
    return verdict_report(record, expected, (), title=str(record.get("id")))


class VerdictRepr:
    """A failure whose crash message is the verdict and whose full text is the report.

    pytest's JUnit writer puts ``reprcrash.message`` in the ``message``
    attribute and ``str()`` in the element text; the terminal summary line
    shows the message's first line. Under xdist it travels as its ``str()``.
    """

    def __init__(self, text: str, message: str, location: str) -> None:
        self.text = text
        self.reprcrash = CrashLine(location, message)

    def __str__(self) -> str:
        return self.text

    def toterminal(self, tw: Any) -> None:
        for line in self.text.splitlines():
            tw.line(line)


@dataclass(frozen=True, slots=True)
class CrashLine:
    """What ``--tb=line`` prints for a failed case, and the JUnit ``message``: where, then the verdict."""

    path: str
    message: str
    lineno: int | None = None

    def __str__(self) -> str:
        first = self.message.splitlines()[0] if self.message else ""
        return f"{self.path}: {first}"


def shorten_failure(report: pytest.TestReport, record: Mapping[str, Any]) -> None:
    """Give a judged, failed case the verdict as its message; other failures keep theirs."""
    if report.when == "call" and report.failed and isinstance(report.longrepr, str) and record.get("score") is not None:
        location = report.nodeid.split("::", 1)[0]
        report.longrepr = VerdictRepr(report.longrepr, verdict_headline(record), location)  # type: ignore[assignment]
