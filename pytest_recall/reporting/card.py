"""``pytest-recall card``: a report as a Markdown results card, to paste into a README or a paper.

The card gives the number with its interval, never alone, and the protocol
it was measured under, so a reader can tell whether it is comparable to
another. A pure function of the report. What it copies from the report (a
category name, the command) is escaped: a card pasted into a README renders
it as text, as the HTML page does.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from typing import Any

from pytest_recall.reporting.run_report import RunReport
from pytest_recall.reporting.wording import left_out_text


def results_card(report: RunReport) -> str:
    """The card: the headline, per category, the lift over the control, cost and time, and the protocol folded."""
    lines = [
        "## pytest-recall results",
        "",
        _headline(report),
        "",
        *_category_table(report),
        *_lift(report),
        *_spend(report),
        *_protocol(report),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


def _headline(report: RunReport) -> str:
    score = _percent(report.score)
    interval = report.confidence or {}
    level = interval.get("level")
    if "low" in interval:
        width = f" ({_level(level)} interval {_percent(interval['low'])} to {_percent(interval['high'])})"
    else:
        width = " (no interval: too few scored cases)"
    command = report.command
    agent = f" for `{_code(str(command))}`" if command else ""
    verdict = ""
    if isinstance(report.passed, bool):
        verdict = f": {'PASSED' if report.passed else 'FAILED'} at threshold {_percent(report.threshold)}"
    scored = report.n_total if report.n_scored is None else report.n_scored
    return f"**Score {score}{verdict}**{width} over {scored} scored cases{agent}."


def _category_table(report: RunReport) -> list[str]:
    by_category: Mapping[str, Any] = report.by_category or {}
    if not by_category:
        return []
    intervals: Mapping[str, Any] = report.by_category_confidence or {}
    rows = ["| category | score | interval |", "| --- | ---: | --- |"]
    for name, score in sorted(by_category.items()):
        interval = intervals.get(name) or {}
        shown = f"{_percent(interval['low'])} to {_percent(interval['high'])}" if "low" in interval else "–"
        rows.append(f"| {_cell(name)} | {_percent(score)} | {shown} |")
    return [*rows, ""]


def _lift(report: RunReport) -> list[str]:
    control = report.control
    if not isinstance(control, Mapping):
        return []
    test: Mapping[str, Any] = control.get("lift_test") or {}
    if not test:
        return ["Memory lift over the control: no case was scored both ways.", ""]
    return [
        f"**Memory lift over the control: {_points(test.get('delta', control.get('lift')))} points** "
        f"(with memory {_percent(test.get('new'))}, without {_percent(test.get('base'))}, "
        f"interval {_points(test.get('low'))} to {_points(test.get('high'))}, p = {_p(test.get('p_value'))}, "
        f"over {test.get('n', 0)} cases{left_out_text(control)}).",
        "",
    ]


def _spend(report: RunReport) -> list[str]:
    cost = report.cost_usd_total
    tokens_in, tokens_out = report.tokens_in_total, report.tokens_out_total
    return [
        "| cost | tokens in | tokens out | latency median | latency p95 |",
        "| ---: | ---: | ---: | ---: | ---: |",
        f"| {_dollars(cost)} | {_count(tokens_in)} | {_count(tokens_out)} | "
        f"{_seconds(report.latency_ms_median)} | {_seconds(report.latency_ms_p95)} |",
        "",
    ]


def _protocol(report: RunReport) -> list[str]:
    block = report.protocol
    if not isinstance(block, Mapping):
        return ["Protocol: not recorded (a report written before pytest-recall kept one).", ""]
    return [
        "<details>",
        "<summary>Protocol (data, scoring, judges, agent, run): compare only numbers with the same one</summary>",
        "",
        "```json",
        json.dumps(block, indent=2, sort_keys=False).replace("```", "` ` `"),
        "```",
        "",
        "</details>",
        "",
    ]


def _percent(value: Any) -> str:
    return f"{100 * value:.1f}%" if isinstance(value, (int, float)) else "–"


def _points(value: Any) -> str:
    return f"{100 * value:+.1f}" if isinstance(value, (int, float)) else "–"


def _level(level: Any) -> str:
    return f"{round(100 * level)}%" if isinstance(level, (int, float)) else "confidence"


def _p(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "–"


def _dollars(value: Any) -> str:
    return f"${value:.4f}" if isinstance(value, (int, float)) else "not reported"


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else "not reported"


def _seconds(value: Any) -> str:
    """Milliseconds as seconds, two decimals under ten seconds: a fast agent's 40 ms is not "0.0 s"."""
    if not isinstance(value, (int, float)):
        return "–"
    return f"{value / 1000:.2f} s" if value < 10_000 else f"{value / 1000:.1f} s"


def _cell(text: str) -> str:
    """A report's text as plain text in a table cell: every ASCII punctuation mark backslash-escaped, as CommonMark
    allows, so that no tag, link, image or emphasis in a category name renders (nor a pipe ends the cell), and a
    line break a space."""
    return "".join(f"\\{char}" if char in string.punctuation else char for char in " ".join(text.splitlines()))


def _code(text: str) -> str:
    """Inside a code span nothing renders, but a backtick ends it and a blank line ends the paragraph."""
    return " ".join(text.replace("`", "'").splitlines())
