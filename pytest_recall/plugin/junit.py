"""What the JUnit XML file says about a run, through pytest's public surface only.

Per-case figures travel as ``recall_*`` scalars in ``user_properties``.
Under ``junit_family=xunit1`` (or ``legacy``) pytest's writer copies them
onto each testcase as ``<property>`` elements, which that family allows.
Under the default ``xunit2`` a testcase may hold no ``<properties>``, so
they move into a ``key=value`` block in the testcase's ``<system-out>``,
and the file stays valid against the xunit2 schema. This module also adds
the run-level verdict to the ``<testsuite>`` properties (valid in every
family) and gives a failed case a short ``message`` attribute, its verdict,
while the element text keeps the whole report with the transcripts.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pytest

from pytest_recall.reporting import (
    JUNIT_CASE_FIELDS,
    JUNIT_JUDGE_PROPERTIES,
    CaseRecord,
    RunReport,
    fold_repeated_stderr,
    judge_run_properties,
    property_text,
    rate_limit_lines,
    stop_line,
)

# The first line of a testcase's <system-out> block of per-case figures under xunit2.
FIGURES_HEADER = "[pytest-recall]"
CASE_PROPERTY_NAMES = frozenset(f"recall_{name}" for name in JUNIT_CASE_FIELDS).union(JUNIT_JUDGE_PROPERTIES)
# Per-case figures named by what a run has: each other judge's score (several judges), the MCP tap's use.
CASE_PROPERTY_PREFIXES = ("recall_judge_", "recall_memory_")
# Characters XML 1.0 cannot hold at all; an agent may print them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


_WRITERS = pytest.StashKey[list[Any]]()


def junit_writers(config: pytest.Config) -> list[Any]:
    """pytest's JUnit writer, found by what it can do rather than by importing it; looked up once per run.

    Every report asks, and a walk over every plugin costs more than the rest of
    what a report does here; the writer is registered at configure time, before any.
    """
    writers = config.stash.get(_WRITERS, None)
    if writers is None:
        writers = [
            plugin
            for plugin in config.pluginmanager.get_plugins()
            if not isinstance(plugin, type) and callable(getattr(plugin, "add_global_property", None))
        ]
        config.stash[_WRITERS] = writers
    return writers


def run_properties(report: RunReport) -> list[tuple[str, str]]:
    """The run verdict as flat name/value pairs, named like the per-case ``recall_*`` ones; missing values left out."""
    properties: list[tuple[str, object]] = [
        ("recall_score", report.score),
        ("recall_passed", report.passed),
        ("recall_n_passed", report.n_passed),
        ("recall_n_total", report.n_total),
        ("recall_threshold", report.threshold),
        ("recall_stop", stop_line(report)),
        ("recall_rate_limits", "; ".join(rate_limit_lines(report)) or None),
    ]
    for category, score in sorted((report.by_category or {}).items()):
        properties.append((f"recall_category_{category}", score))
    properties += judge_run_properties(report)
    memory = report.memory
    if isinstance(memory, Mapping):
        # The MCP tap's figures (--recall-mcp): whether the memory was used, and retrieval against reasoning.
        names = {"cases": "cases", "unused_cases": "unused", "score_used": "score_used"}
        names |= {"control_calls": "control_calls", "evidence_recall": "evidence_recall"}
        names |= {"untapped_cases": "untapped_cases"}  # only when some server was reached by URL, untapped
        properties += [(f"recall_memory_{name}", memory.get(key)) for name, key in names.items()]
    return [(name, text) for name, value in properties if (text := property_text(value)) is not None]


def add_run_properties(config: pytest.Config, report: RunReport) -> None:
    """Called before the writer writes (the recorder's sessionfinish runs first)."""
    for writer in junit_writers(config):
        for name, value in run_properties(report):
            writer.add_global_property(name, value)


def is_case_figure(name: object) -> bool:
    """Whether a ``user_properties`` name is a case's JUnit figure, which xunit2 keeps out of ``<properties>``."""
    return name in CASE_PROPERTY_NAMES or (isinstance(name, str) and name.startswith(CASE_PROPERTY_PREFIXES))


def figures_block(properties: list[tuple[str, object]]) -> str:
    """The per-case figures as the xunit2 ``<system-out>`` block: a header, then ``name=value`` lines.

    Every field is always there, in a fixed order, empty when the record has
    no value, so a CI script can read it with a line split; a case the judge
    command judged (``--recall-judge-cmd``) has its verdict's lines after them,
    then the figures only some runs have (other judges' scores, memory use).
    """
    given = {str(name): str(value) for name, value in properties}
    names = [f"recall_{name}" for name in JUNIT_CASE_FIELDS]
    if given.keys() & set(JUNIT_JUDGE_PROPERTIES):
        names += JUNIT_JUDGE_PROPERTIES
    names += [name for name in given if name not in names]
    lines = [FIGURES_HEADER]
    for name in names:
        value = given.get(name, "")
        lines.append(f"{name}={_NOT_XML.sub('?', value).replace(chr(10), ' ').replace(chr(13), ' ')}")
    return "\n".join(lines) + "\n"


def parse_figures_block(text: str) -> dict[str, str]:
    """The figures of a ``<system-out>`` block, for CI scripts and the tests: the inverse of :func:`figures_block`."""
    lines = text.splitlines()
    start = lines.index(FIGURES_HEADER) + 1 if FIGURES_HEADER in lines else len(lines)
    figures = {}
    for line in lines[start:]:
        name, sep, value = line.partition("=")
        if not sep or not name.startswith("recall_"):
            break
        figures[name] = value
    return figures


def place_case_figures(config: pytest.Config, report: pytest.TestReport) -> None:
    """Under xunit2, move a case's ``recall_*`` properties into its ``<system-out>``, where the schema allows them.

    Called on the controller before pytest's writer sees the report. The
    properties leave every phase's report (the writer copies them from the
    last one); the block is written once, with the teardown report.
    """
    writers = [w for w in junit_writers(config) if getattr(w, "family", "xunit1") == "xunit2"]
    if not writers:
        return
    figures = [(n, v) for n, v in report.user_properties if is_case_figure(n)]
    if not figures:
        return
    report.user_properties = [(n, v) for n, v in report.user_properties if not is_case_figure(n)]
    if report.when != "teardown":
        return
    for writer in writers:
        node = ET.Element("system-out")
        node.text = figures_block(figures)
        writer.node_reporter(report).append(node)


def verdict_headline(record: CaseRecord) -> str:
    """The first lines of a failed case's report: verdict, expected, reported, category."""
    return replace(record, steps=()).failure_text(title=record.id, compact=False)


class VerdictRepr:
    """A failure whose crash message is the verdict and whose full text is the report.

    pytest's JUnit writer puts ``reprcrash.message`` in the ``message``
    attribute and ``str()`` in the element text; the terminal summary line
    shows the message's first line. Under xdist it travels as its ``str()``.
    """

    def __init__(self, text: str, message: str, location: str, shown: str | None = None) -> None:
        self.text = text
        self.reprcrash = CrashLine(location, message)
        # The terminal's copy may name a repeated stderr block instead of printing it; the JUnit file keeps all.
        self.shown = text if shown is None else shown

    def __str__(self) -> str:
        return self.text

    def toterminal(self, tw: Any) -> None:
        for line in self.shown.splitlines():
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


def shorten_failure(
    report: pytest.TestReport, record: CaseRecord, seen_stderr: dict[tuple[str, ...], str] | None = None
) -> None:
    """Give a judged, failed case the verdict as its message; other failures keep theirs."""
    if report.when == "call" and report.failed and isinstance(report.longrepr, str) and record.score is not None:
        location = report.nodeid.split("::", 1)[0]
        text = report.longrepr
        shown = fold_repeated_stderr(text, seen_stderr, location) if seen_stderr is not None else None
        report.longrepr = VerdictRepr(text, verdict_headline(record), location, shown)  # type: ignore[assignment]
