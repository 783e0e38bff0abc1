"""One self-contained HTML page that shows a recall report to a person.

The page is read offline, attached to CI runs and e-mailed around, so it
carries everything inline: CSS in a ``<style>``, charts as SVG drawn here,
and a Content-Security-Policy that blocks any remote load and every script
but the page's own (allowed by its hash, see ``reporting.html_script``).
The summary (verdict, charts, tables by category) is markup; the case tables
are drawn by that script from data in the page, a page of rows at a time,
so a run of 100,000 cases still gives a page a browser opens at once.

The page is written as a stream of pieces (:func:`html_chunks`): the case
records are read one at a time, twice (once for the few scalars the summary
draws, once for the rows), and never all held at once.

Agent output is hostile by assumption: every string is cleaned of characters
HTML forbids (``reporting.html_text``) and escaped before it reaches the page.
Escaping is a type, not a convention: every piece of markup is a
``markupsafe.Markup``, and any plain string that meets one is escaped on the
way in, so raw text can never be mistaken for markup.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from markupsafe import Markup

from pytest_recall.reporting.html_cases import case_table_section, data_blocks
from pytest_recall.reporting.html_judge import judge_html_section, judges_html_section
from pytest_recall.reporting.html_script import SCRIPT, SCRIPT_HASH
from pytest_recall.reporting.html_tables import epoch_section, help_harm_section, p_value
from pytest_recall.reporting.html_text import clean, table_row
from pytest_recall.reporting.html_text import number as _number
from pytest_recall.reporting.html_text import percent as _percent
from pytest_recall.reporting.html_text import seconds as _seconds
from pytest_recall.reporting.html_text import usd as _usd
from pytest_recall.reporting.protocol import protocol_rows
from pytest_recall.reporting.run_report import RunReport
from pytest_recall.reporting.spool import CaseSummary, summary_of_row
from pytest_recall.reporting.summary import (
    BENCHMARK_METRICS,
    benchmark_lines,
    memory_lines,
    rate_limit_lines,
    run_unit,
    stop_line,
)
from pytest_recall.reporting.wording import counted, left_out_text
from pytest_recall.scoring import summarize

__all__ = ["clean", "html_chunks", "render_html"]

SUMMARY_KEYS = ("epochs", "confidence", "by_category_confidence", "pass_at_k", "pass_all_k", "per_case", "control")
LABEL_W, PLOT_W, VALUE_W, ROW_H, AXIS_H = 200, 420, 200, 28, 26
MAX_HISTOGRAM_BINS = 20
# A lift smaller than this reads as "no lift" rather than "too few cases to tell".
NEGLIGIBLE_LIFT = 0.1
CASES_HINT = (
    "Worst first, 100 runs a page. Filter by outcome or category, search by case id; "
    "unfold a row's evidence to see every step's prompt and output."
)
PROTOCOL_HINT = "What this number depends on; pytest-recall compare lists any field two reports differ in."
CONTROL_HINT = "Only the last step, in a fresh scope: what the agent scores without memory."


def render_html(report: RunReport) -> str:
    """The whole page as a string; the same report always gives the same bytes."""
    return "".join(html_chunks(report))


def html_chunks(report: RunReport) -> Iterator[str]:
    """The page in pieces, for writing straight to a file: the case records are streamed, never all held."""
    cases = report.cases or []
    runs, controls, durations, feeds = _scan(cases)
    stats = _summary(report, cases)
    sections = [
        _verdict_section(report, stats),
        _category_section(report, stats, benchmark_lines(feeds, (report.run_mode or {}).get("answer_judge"))),
        _lift_section(stats),
        help_harm_section(report),
        judge_html_section(report),
        judges_html_section(report),
        _memory_section(report),
        _latency_section(report, durations),
        _protocol_section(report),
        epoch_section(stats),
        case_table_section("Cases", CASES_HINT, runs, control=False),
        case_table_section("Control runs", CONTROL_HINT, controls, control=True),
    ]
    body = Markup("\n").join(s for s in sections if s)
    title = f"pytest-recall: {'PASS' if report.passed else 'FAIL'} {_percent(_number(report.score))}"
    yield str(
        Markup(
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src '{}'; img-src data:\">\n"
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<link rel="icon" href="data:,">\n'
            "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n<main>\n{}\n</main>\n"
        ).format(SCRIPT_HASH, title, Markup(CSS), body)
    )
    if runs or controls:
        yield from data_blocks((record for record in cases if isinstance(record, Mapping)), SCRIPT)
    yield "</body>\n</html>\n"


def _scan(cases: Iterable[Any]) -> tuple[int, int, list[float], list[CaseSummary]]:
    """One pass for what the summary draws: how many runs and control runs, the runs' durations,
    and the public-benchmark kinds among them with how their haystacks were fed."""
    runs = controls = 0
    durations = []
    feeds: dict[tuple[Any, Any], CaseSummary] = {}
    for record in cases:
        if not isinstance(record, Mapping):
            continue
        if record.get("answer_kind") in BENCHMARK_METRICS and not record.get("control"):
            key = (record.get("answer_kind"), record.get("sessions_per_step"))
            feeds.setdefault(key, summary_of_row({"answer_kind": key[0], "sessions_per_step": key[1]}))
        if record.get("control"):
            controls += 1
            continue
        runs += 1
        duration = _number(record.get("duration_s"))
        if duration is not None:
            durations.append(duration)
    durations.sort()
    return runs, controls, durations, list(feeds.values())


def _summary(report: RunReport, cases: Iterable[Any]) -> dict[str, Any]:
    """The statistics the plugin stored, or computed here so that older reports render too.

    Only a report written before the statistics existed has its records read
    into memory for them; the plugin's reports always carry them.
    """
    if report.epochs is not None:
        return {key: getattr(report, key) for key in SUMMARY_KEYS}
    return summarize([summary_of_row(row) for row in cases if isinstance(row, Mapping)])


def _points(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:+.1f}"


def _interval_text(interval: Mapping[str, Any] | None) -> str:
    if not interval:
        return "no interval (nothing scored)"
    # Both methods count case folders: Wilson is used only when every case ran once.
    unit = "case" if interval.get("n") == 1 else "cases"
    level = round(100 * (_number(interval.get("level")) or 0.95))
    low, high = _number(interval.get("low")), _number(interval.get("high"))
    return (
        f"{level}% interval {_percent(low)} – {_percent(high)} ({interval.get('method')}, {interval.get('n')} {unit})"
    )


# What a tile's count means where its name alone cannot say it; shown on hover and read by screen readers.
TILE_NOTES = {
    "unscored": "runs with no score (n_skipped_no_gold): no expected answer to judge against, or an agent that could "
    "not start (counted again under errors); they are left out of the score",
}


def _verdict_section(report: RunReport, stats: Mapping[str, Any]) -> Markup:
    passed = bool(report.passed)
    score, threshold = _number(report.score), _number(report.threshold)
    interval = stats.get("confidence")
    # Threshold 0 gates nothing (a measurement run): a big green PASS over 0.0% would read as a result.
    verdict = "MEASURED" if threshold == 0 else "PASS" if passed else "FAIL"
    notes = [
        _threshold_sentence(passed, score, threshold),
        *_warnings(replace(report, epochs=stats.get("epochs")), interval, threshold),
        stop_line(report, as_percent=True),
        *rate_limit_lines(report),
    ]
    gauge_row = _Bar("score", score, *_bounds(interval), _percent(score))
    tiles = [
        # With epochs these count runs (case × epoch), and the page must not call them cases.
        ("runs passed" if (stats.get("epochs") or 1) > 1 else "cases passed", _passed_of_total(report)),
        ("scored", _count_text(report.n_scored)),
        ("errors", _count_text(report.n_errors)),
        ("unscored", _count_text(report.n_skipped_no_gold)),
        ("epochs", str(stats.get("epochs") or 1)),
        ("latency median", _seconds(_ms(report.latency_ms_median))),
        ("latency p95", _seconds(_ms(report.latency_ms_p95))),
        ("total time", _seconds(_ms(report.latency_ms_total))),
        ("cost", _usd(_number(report.cost_usd_total))),
    ]
    head = Markup(
        '<header class="verdict {}">\n<div class="badge">{}</div>\n<div>\n'
        '<h1>Recall score {}</h1>\n<p class="interval">{}</p>\n'
    ).format(verdict.lower(), verdict, _percent(score), clean(_interval_text(interval)))
    return (
        head
        + Markup("").join(Markup("<p>{}</p>\n").format(clean(note)) for note in notes if note)
        + Markup("</div>\n</header>\n")
        + _bars_svg([gauge_row], domain=(0.0, 1.0), threshold=threshold, label="Score with its interval and threshold")
        + Markup('\n<dl class="tiles">')
        + Markup("").join(
            Markup('<div title="{}"><dt>{}</dt><dd>{}</dd></div>').format(
                TILE_NOTES.get(name, ""), clean(name), clean(value)
            )
            if name in TILE_NOTES
            else Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(clean(name), clean(value))
            for name, value in tiles
        )
        + Markup('</dl>\n<p class="command">Command: <code>{}</code></p>').format(clean(report.command or "–"))
    )


def _passed_of_total(report: RunReport) -> str:
    return f"{report.n_passed} / {report.n_total}"


def _count_text(count: int | None) -> str:
    """A count, or a dash where a report from before the count existed has none."""
    return "–" if count is None else str(count)


def _threshold_sentence(passed: bool, score: float | None, threshold: float | None) -> str:
    if score is None or threshold is None:
        return ""
    if threshold == 0:
        return "Threshold 0: this run measures, and gates nothing."
    meets = score >= threshold
    sentence = f"The score {'meets' if meets else 'is below'} the threshold of {_percent(threshold)}"
    if meets == passed:
        return sentence + "."
    return sentence + f", but the run is marked {'failed' if meets else 'passed'}; see the warnings and errors."


def _warnings(report: RunReport, interval: Mapping[str, Any] | None, threshold: float | None) -> list[str]:
    """What could make a reader misjudge the verdict, said next to it."""
    notes = []
    if report.interrupted:
        notes.append("⚠ The run was interrupted: the score covers only the cases that finished.")
    errors = report.n_errors
    if isinstance(errors, int) and errors > 0:
        errored = counted(errors, run_unit(report))
        notes.append(f"⚠ {errored} errored, with no score counted; see the rows marked ERROR.")
    low, high = _bounds(interval)
    if threshold is not None and low is not None and high is not None and low < threshold <= high:
        notes.append(
            "⚠ The interval straddles the threshold: a rerun could flip the verdict. More cases or epochs help."
        )
    return notes


def _bounds(interval: Mapping[str, Any] | None) -> tuple[float | None, float | None]:
    return (_number(interval.get("low")), _number(interval.get("high"))) if interval else (None, None)


def _ms(value: Any) -> float | None:
    milliseconds = _number(value)
    return None if milliseconds is None else milliseconds / 1000


@dataclass(frozen=True, slots=True)
class _Bar:
    """One row of a bar chart: a bar from zero to ``value`` with an optional whisker."""

    label: str
    value: float | None
    low: float | None
    high: float | None
    text: str
    tone: str = "neutral"


def _tag(name: str, content: Markup | str = "", **attributes: str | float) -> Markup:
    """One element; attribute values are escaped and numbers rounded so output is stable and safe.

    A trailing underscore lets ``class_`` through Python's keywords and other
    underscores become dashes, so ``text_anchor`` writes ``text-anchor``.
    """
    attrs = Markup("").join(
        Markup(' {}="{}"').format(key.rstrip("_").replace("_", "-"), _attribute(value))
        for key, value in attributes.items()
    )
    if content or name not in _EMPTY_ELEMENTS:
        return Markup("<{0}{1}>{2}</{0}>").format(name, attrs, content)
    return Markup("<{}{}/>").format(name, attrs)


_EMPTY_ELEMENTS = frozenset({"line", "rect", "path"})


def _attribute(value: str | float) -> Markup | str:
    if isinstance(value, float):
        return f"{value:.1f}"
    return clean(value) if isinstance(value, str) else str(value)


def _svg(width: int, height: int, label: str, parts: Sequence[Markup]) -> Markup:
    title = _tag("title", clean(label))
    return _tag(
        "svg",
        title + Markup("").join(parts),
        class_="chart",
        viewBox=f"0 0 {width} {height}",
        width=width,
        height=height,
        role="img",
        aria_label=label,
    )


MEMORY_HINT = (
    "What the tap between the agent's CLI and its MCP servers saw (--recall-mcp): whether each case used its memory "
    "(a write before the last step, a read in it), and where cases know their evidence, whether the memory returned "
    "it: a wrong answer with the evidence retrieved is a reasoning failure, without it a retrieval failure."
)


def _memory_section(report: RunReport) -> Markup:
    """The MCP tap's figures, as the terminal summary words them; nothing on a run without --recall-mcp."""
    lines = memory_lines(report)
    if not lines:
        return Markup("")
    items = Markup("").join(Markup("<li>{}</li>").format(line.strip()) for line in lines)
    listing = Markup('<ul id="memory-use">{}</ul>').format(items)
    return _section("Memory use", MEMORY_HINT, listing + _retrieval_table(report.memory or {}))


def _retrieval_table(memory: Mapping[str, Any]) -> Markup:
    """Retrieval against a right answer as the 2x2 table it is, not a sentence: where the memory failed
    (nothing retrieved) is told from where the model did (retrieved, then answered wrong)."""
    table = memory.get("retrieval_table")
    if not isinstance(table, Mapping):
        return Markup("")
    rows = [
        ["evidence retrieved", str(table.get("retrieved_right", 0)), str(table.get("retrieved_wrong", 0))],
        ["not retrieved", str(table.get("missed_right", 0)), str(table.get("missed_wrong", 0))],
    ]
    body = Markup("").join(table_row("td", row) for row in rows)
    return Markup(
        '<table id="retrieval-table"><thead><tr><th>cases</th><th>answered right</th>'
        "<th>answered wrong</th></tr></thead><tbody>{}</tbody></table>"
    ).format(body)


def _section(title: str, hint: str, content: Markup) -> Markup:
    return Markup('<section>\n<h2>{}</h2>\n<p class="hint">{}</p>\n{}\n</section>').format(
        clean(title), clean(hint), content
    )


def _bars_svg(rows: Sequence[_Bar], *, domain: tuple[float, float], threshold: float | None, label: str) -> Markup:
    """Horizontal bars with interval whiskers; shared by the score gauge, categories and lift."""
    width, height = LABEL_W + PLOT_W + VALUE_W, AXIS_H + ROW_H * len(rows) + 6
    start, end = domain

    def x(value: float) -> float:
        return LABEL_W + PLOT_W * (min(max(value, start), end) - start) / (end - start)

    parts = []
    for i in range(5):
        tick = start + (end - start) * i / 4
        text = _percent(tick, 0) if start >= 0 else f"{100 * tick:+.0f}".replace("+0", "0")
        parts.append(_tag("line", class_="grid", x1=x(tick), y1=AXIS_H - 6, x2=x(tick), y2=height))
        parts.append(_tag("text", text, class_="tick", x=x(tick), y=AXIS_H - 10, text_anchor="middle"))
    parts += [_bar_row(row, AXIS_H + ROW_H * i + ROW_H / 2, x) for i, row in enumerate(rows)]
    for line_class, at in (("threshold", threshold), ("zero", 0.0 if start < 0 else None)):
        if at is not None:
            parts.append(_tag("line", class_=line_class, x1=x(at), y1=AXIS_H - 4, x2=x(at), y2=height))
    return _svg(width, height, label, parts)


def _bar_row(row: _Bar, y: float, x: Callable[[float], float]) -> Markup:
    name = row.label if len(row.label) <= 26 else row.label[:25] + "…"
    out = [
        _tag(
            "text",
            _tag("title", clean(row.label)) + clean(name),
            class_="label",
            x=LABEL_W - 8,
            y=y + 4,
            text_anchor="end",
        )
    ]
    if row.value is not None:
        left, right = sorted((x(0.0), x(row.value)))
        out.append(_tag("rect", class_=f"bar {row.tone}", x=left, y=y - 7, width=max(right - left, 1.5), height=14))
    if row.low is not None and row.high is not None:
        lo, hi = x(row.low), x(row.high)
        path = f"M{lo:.1f} {y:.1f}H{hi:.1f}M{lo:.1f} {y - 6:.1f}V{y + 6:.1f}M{hi:.1f} {y - 6:.1f}V{y + 6:.1f}"
        out.append(_tag("path", class_="whisker", d=path))
    out.append(_tag("text", clean(row.text), class_="value", x=LABEL_W + PLOT_W + 10, y=y + 4))
    return Markup("").join(out)


def _category_section(report: RunReport, stats: Mapping[str, Any], notes: Iterable[str] = ()) -> Markup:
    intervals: Mapping[str, Any] = stats.get("by_category_confidence") or {}
    scores: Mapping[str, Any] = report.by_category or {}
    rows = []
    for category in sorted(set(scores) | set(intervals)):
        interval = intervals.get(category)
        score = _number(scores.get(category))
        if score is None and interval:
            score = _number(interval.get("estimate"))
        low, high = _bounds(interval)
        count = f" · n={interval.get('n')}" if interval else ""
        text = f"{_percent(score)} [{_percent(low, 0)}–{_percent(high, 0)}]{count}"
        rows.append(_Bar(str(category), score, low, high, text))
    if not rows:
        return Markup("")
    chart = _bars_svg(rows, domain=(0.0, 1.0), threshold=_number(report.threshold), label="Score by category")
    hint = " ".join(
        ["Bars are scores, whiskers their intervals, the dashed line the threshold.", *(n.strip() + "." for n in notes)]
    )
    return _section("By category", hint, chart)


def _lift_section(stats: Mapping[str, Any]) -> Markup:
    control = stats.get("control")
    if not control:
        return Markup("")
    lift = _number(control.get("lift"))
    significant = bool(control.get("lift_significant"))
    test: Mapping[str, Any] = control.get("lift_test") or {}
    rows = [_lift_bar("overall", test)] if test else []
    rows += [_lift_bar(str(c), entry) for c, entry in sorted((control.get("by_category_lift") or {}).items())]
    detail = (
        f"Over {test.get('n', 0)} cases run both ways: with memory {_percent(_number(test.get('new')))}, "
        f"without {_percent(_number(test.get('base')))}; lift {_points(lift)} points, interval "
        f"{_points(_number(test.get('low')))} to {_points(_number(test.get('high')))}, "
        f"p = {p_value(test.get('p_value'))} ({test.get('method', '–')}){left_out_text(control)}. "
        "* marks a significant lift."
    )
    tone = "good" if significant and (lift or 0) > 0 else "warn"
    lead = Markup('<p class="lead {}">{}</p>').format(tone, clean(_lift_message(test, significant)))
    chart = (
        _bars_svg(rows, domain=(-1.0, 1.0), threshold=None, label="Memory lift by category, in points")
        if rows
        else Markup("")
    )
    return _section("Memory lift", detail, lead + chart)


def _lift_message(test: Mapping[str, Any], significant: bool) -> str:
    """Tell "memory does not help" apart from "too few cases to tell"; both are not significant."""
    lift, without = _number(test.get("delta")), _number(test.get("base"))
    if lift is None or without is None:
        return "No case was scored both with and without memory, so the lift cannot be measured."
    if significant:
        direction = "higher" if lift > 0 else "lower"
        return f"Memory matters: the agent scores {abs(100 * lift):.1f} points {direction} with it than without."
    if abs(lift) >= NEGLIGIBLE_LIFT:
        return (
            f"A lift of {_points(lift)} points, but not significant: too few cases to tell. More cases or epochs help."
        )
    if without >= 0.5:
        return (
            f"No memory lift: the agent scores {_percent(without)} without memory, about as well as with it; "
            "the suite may be answerable by guessing."
        )
    return f"No memory lift: the agent scores about the same with and without memory ({_percent(without)} without)."


def _lift_bar(label: str, entry: Mapping[str, Any]) -> _Bar:
    lift, low, high = _number(entry.get("delta")), _number(entry.get("low")), _number(entry.get("high"))
    significant = bool(entry.get("significant"))
    tone = ("good" if (lift or 0) > 0 else "bad") if significant else "neutral"
    text = f"{_points(lift)} [{_points(low)}, {_points(high)}]{' *' if significant else ''}"
    return _Bar(label, lift, low, high, text, tone)


def _latency_section(report: RunReport, durations: Sequence[float]) -> Markup:
    """The runs' durations, sorted, as a histogram with the median and p95 marked."""
    if not durations:
        return Markup("")
    median, p95 = _ms(report.latency_ms_median), _ms(report.latency_ms_p95)
    caption = (
        f"{len(durations)} runs · median {_seconds(median)} · p95 {_seconds(p95)} · slowest {_seconds(durations[-1])}"
    )
    return _section("Latency", caption, _histogram_svg(durations, {"median": median, "p95": p95}))


def _protocol_section(report: RunReport) -> Markup:
    """The protocol block as it is in the report, folded: what this number may be compared with."""
    block = report.protocol
    if not isinstance(block, Mapping):
        return Markup("")
    text = json.dumps(block, indent=2)
    rows = Markup("").join(table_row("td", [clean(field), clean(value)]) for field, value in protocol_rows(block))
    content = Markup(
        '<table class="protocol"><thead><tr><th>field</th><th>value</th></tr></thead><tbody>{}</tbody></table>'
        '<details><summary>the block as the report holds it (JSON)</summary><pre class="mono">{}</pre></details>'
    )
    return _section("Protocol", PROTOCOL_HINT, content.format(rows, clean(text)))


def _histogram_svg(values: Sequence[float], markers: Mapping[str, float | None]) -> Markup:
    """Sorted durations binned on [0, slowest]: the shape shows timeouts and stragglers at a glance."""
    bins = min(MAX_HISTOGRAM_BINS, max(1, math.ceil(math.sqrt(len(values)))))
    top = max(values[-1], 1e-9)
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, int(bins * value / top))] += 1
    width, height, left, bottom = LABEL_W + PLOT_W + VALUE_W, 170, 40, 140
    plot_w, plot_h, bin_w = width - left - 20, bottom - 32, (width - left - 20) / bins
    parts = [_tag("line", class_="axis", x1=left, y1=bottom, x2=left + plot_w, y2=bottom)]
    for i, count in enumerate(counts):
        bar_h, x0 = plot_h * count / max(counts), left + bin_w * i
        title = _tag("title", f"{top * i / bins:.2f}–{top * (i + 1) / bins:.2f} s: {count} run(s)")
        parts.append(
            _tag("rect", title, class_="bar neutral", x=x0 + 1, y=bottom - bar_h, width=bin_w - 2, height=bar_h)
        )
        if count:
            parts.append(
                _tag("text", str(count), class_="tick", x=x0 + bin_w / 2, y=bottom - bar_h - 4, text_anchor="middle")
            )
    # Sub-second runs need two decimals, or the ticks read "0.1 s, 0.1 s".
    digits = 1 if top >= 4 else 2
    for i in range(5):
        tick_x = left + plot_w * i / 4
        tick = f"{top * i / 4:.{digits}f} s"
        parts.append(_tag("text", tick, class_="tick", x=tick_x, y=bottom + 16, text_anchor="middle"))
    for name, seconds in sorted(markers.items()):
        if seconds is not None and 0 <= seconds <= top:
            marker_x = left + plot_w * seconds / top
            parts.append(_tag("line", class_="threshold", x1=marker_x, y1=14, x2=marker_x, y2=bottom))
            # A marker near the right edge (p95 of a tight run) labels to its left, so it is not clipped.
            right_edge = marker_x > left + plot_w - 60
            anchor = {"x": marker_x - 3, "text_anchor": "end"} if right_edge else {"x": marker_x + 3}
            parts.append(_tag("text", name, class_="tick", y=12, **anchor))
    return _svg(width, height, "Histogram of run durations in seconds", parts)


CSS = """
:root{color-scheme:light;--good:#1a7f37;--bad:#cf222e;--warn:#9a6700;--muted:#6e7781;--ink:#1f2328;--line:#d0d7de;
--accent:#0969da}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:#f6f8fa}
main{max-width:1000px;margin:0 auto;padding:24px;background:#fff;min-height:100vh}
h1{margin:0;font-size:28px}h2{margin:32px 0 4px;font-size:20px;border-bottom:1px solid var(--line)}
h4{margin:10px 0 2px;font-size:13px;color:var(--muted)}
.verdict{display:flex;gap:20px;align-items:center;padding:16px;border-radius:8px;border:2px solid}
.verdict.pass{border-color:var(--good);background:#dafbe1}.verdict.fail{border-color:var(--bad);background:#ffebe9}
.verdict p{margin:2px 0}
.badge{font-size:36px;font-weight:800;letter-spacing:2px;padding:6px 18px;border-radius:6px;color:#fff}
.pass .badge{background:var(--good)}.fail .badge{background:var(--bad)}
.verdict.measured{border-color:var(--muted);background:#f6f8fa}.measured .badge{background:var(--muted)}
.interval{font-weight:600}
.tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:8px;margin:16px 0}
.tiles div{border:1px solid var(--line);border-radius:6px;padding:6px 10px}
.tiles dt{font-size:12px;color:var(--muted)}.tiles dd{margin:0;font-size:18px;font-weight:600}
.hint{color:var(--muted);font-size:13px;margin:4px 0 8px}.lead{font-weight:600;margin:8px 0 0}
.lead.good{color:var(--good)}.lead.warn{color:var(--warn)}
.command code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px;
word-break:break-all}
.chart{display:block;max-width:100%;height:auto;margin:8px 0}
.chart text{font-size:12px;fill:var(--ink)}.chart .tick{fill:var(--muted);font-size:11px}
.chart .grid{stroke:#eaeef2}.chart .axis{stroke:var(--muted)}
.chart .threshold{stroke:var(--ink);stroke-dasharray:4 3}.chart .zero{stroke:var(--ink)}
.chart .whisker{stroke:var(--ink);stroke-width:1.5;fill:none}
.bar.neutral{fill:#54aeff}.bar.good{fill:var(--good)}.bar.bad{fill:var(--bad)}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
tr.evidence td{border-bottom:2px solid var(--line);padding-top:0}
.suite,.cases tr:not(.evidence) td:nth-child(n+8){white-space:nowrap}
.cases tr:not(.evidence) td:nth-child(n+5):nth-child(-n+7){overflow-wrap:anywhere;min-width:9ch}
.cases .mono{word-break:normal}.cases .word{white-space:nowrap}
.table-scroll{overflow-x:auto}
.pill{display:inline-block;padding:0 6px;border-radius:10px;font-weight:700;font-size:12px;color:#fff;
white-space:nowrap}
.pill.good{background:var(--good)}.pill.bad{background:var(--bad)}.pill.warn{background:var(--warn)}
.pill.muted{background:var(--muted)}
summary{cursor:pointer;color:var(--accent)}
.controls{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;margin:4px 0 8px;font-size:13px}
.controls[hidden]{display:none}
.controls select,.controls input,.controls button{font:inherit;font-size:13px}
.pager{display:flex;gap:4px;align-items:center}.pager .page{padding:0 6px;color:var(--muted)}
.shown{margin:0;color:var(--muted);flex-basis:100%}
details.step{margin:4px 0 4px 16px}
pre{white-space:pre-wrap;word-break:break-all;max-height:24em;overflow:auto;background:#f6f8fa;
border:1px solid var(--line);border-radius:4px;padding:6px;margin:0;font-size:12px}
"""
