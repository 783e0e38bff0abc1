"""The HTML report in a real browser: headless Chromium loads it offline, logs no error, and draws the charts.

Chromium comes from the system's packages (``.ci/run`` installs Debian's
``chromium``); nothing is downloaded. It is driven over the DevTools
protocol on a pipe (``--remote-debugging-pipe``: JSON messages ended by NUL
on file descriptors 3 and 4), so the test needs no websocket, no port and
no third-party client. Screenshots are decoded with zlib alone.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.reporting.files import write_chunks_atomic
from pytest_recall.reporting.html import html_chunks, render_html
from pytest_recall.reporting.merge import report_of_rows
from pytest_recall.testing.chromium import AFTER_FIRST_PAINT, CHROMIUM, Chromium, evaluate, headless_chromium
from pytest_recall.testing.synthetic import synthetic_record, synthetic_report

pytestmark = pytest.mark.browser

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium); .ci/run installs it"
)
WIDTH, HEIGHT = 1200, 2000
# The bar colour of the charts (.bar.neutral in html_report.CSS), and the pass badge's green.
CHART_BLUE = (0x54, 0xAE, 0xFF)
PASS_GREEN = (0x1A, 0x7F, 0x37)


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[Chromium]:
    with headless_chromium(tmp_path / "chromium-profile", WIDTH, HEIGHT) as browser:
        yield browser


@dataclass(frozen=True)
class PageLoad:
    errors: list[str]
    requests: list[str]
    layout: dict[str, Any]
    screenshot: bytes


def load_page(browser: Chromium, page: Path) -> PageLoad:
    url = page.resolve().as_uri()
    # Only a load that follows this navigation counts, not about:blank's from the start.
    before = len(browser.events)
    browser.send("Page.navigate", {"url": url})
    browser.wait_for_event("Page.loadEventFired", after=before)
    layout_script = """const main = document.querySelector('main');
    const edge = main ? main.getBoundingClientRect().right - parseFloat(getComputedStyle(main).paddingRight) : 0;
    JSON.stringify({
        charts: [...document.querySelectorAll('svg.chart')].map(e => {
            const r = e.getBoundingClientRect();
            return {label: e.getAttribute('aria-label'), x: r.x, y: r.y + scrollY, width: r.width, height: r.height};
        }),
        pageWidth: document.documentElement.scrollWidth,
        overflowing: main ? [...main.querySelectorAll('table, svg, dl, pre')]
            .filter(e => e.getBoundingClientRect().right > edge + 0.5).map(e => e.outerHTML.slice(0, 60)) : [],
        pageHeight: document.documentElement.scrollHeight,
        resources: performance.getEntriesByType('resource').map(e => e.name),
        fonts: [...document.fonts].map(f => f.family),
        href: location.href,
    })"""
    evaluated = browser.send("Runtime.evaluate", {"expression": layout_script, "returnByValue": True})
    layout = json.loads(evaluated["result"]["value"])
    assert layout["href"] == url, "the page under test, not about:blank, was measured"
    shot = browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False})
    errors = [
        f"console.{p.get('type')}: {p.get('args')}"
        for p in browser.event_params("Runtime.consoleAPICalled")
        if p.get("type") in ("error", "assert", "warning")
    ]
    errors += [f"uncaught: {p.get('exceptionDetails')}" for p in browser.event_params("Runtime.exceptionThrown")]
    errors += [
        f"log {p['entry'].get('source')}: {p['entry'].get('text')}"
        for p in browser.event_params("Log.entryAdded")
        if p.get("entry", {}).get("level") in ("error", "warning")
    ]
    requests = [p["request"]["url"] for p in browser.event_params("Network.requestWillBeSent")]
    return PageLoad(errors, requests, layout, base64.b64decode(shot["data"]))


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    rows: list[bytes]  # RGB, 3 bytes a pixel

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        r, g, b = self.rows[y][3 * x : 3 * x + 3]
        return (r, g, b)

    def colours(self, box: tuple[int, int, int, int] | None = None) -> set[tuple[int, int, int]]:
        left, top, right, bottom = box or (0, 0, self.width, self.height)
        xs, ys = range(left, min(right, self.width)), range(top, min(bottom, self.height))
        return {self.pixel(x, y) for y in ys for x in xs}


def decode_png(data: bytes) -> Image:
    """Enough of PNG for Chromium's screenshots: 8-bit RGB or RGBA, not interlaced, all five filters."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, idat, header = 8, b"", b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind, body = data[position + 4 : position + 8], data[position + 8 : position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour_type in (2, 6) and interlace == 0, (depth, colour_type, interlace)
    channels = 3 if colour_type == 2 else 4
    stride = width * channels
    raw = zlib.decompress(idat)
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            up_left = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                estimate = left + up - up_left
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - up_left)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 0xFF
        previous = line
        rgb = bytes(line) if channels == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3)
        rows.append(rgb)
    return Image(width, height, rows)


def near(colour: tuple[int, int, int], wanted: tuple[int, int, int], tolerance: int = 4) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(colour, wanted, strict=True))


def record(case: int, epoch: int, score: float | None, *, control: bool = False) -> dict[str, Any]:
    category = ("closing_balance", "vendor_names", "due_dates", "a_rather_long_category_name_for_layout")[case % 4]
    return {
        "id": f"case_{case:02d}",
        "suite": "session-memory-recall",
        "nodeid": f"cases/session-memory-recall/case_{case:02d}::{'control' if control else 'recall'}[epoch{epoch}]",
        "category": category,
        "answer_kind": "money",
        "expected": "27436.42",
        "score": score,
        "reason": "matched" if score == 1.0 else ("agent crashed" if score is None else "reported 0.00"),
        "reported": "27436.42" if score == 1.0 else "0.00",
        "n_candidates": 1,
        "error": "agent exited 1 in step 2" if score is None else None,
        "epoch": epoch,
        "control": control,
        "duration_s": 0.8 + (case * 7 + epoch * 3) % 11 * 0.35 + (9.0 if case == 5 and epoch == 2 else 0.0),
        "cost_usd": 0.0125 if case % 3 else None,
        "content_hash": f"hash{case}",
        "command": "recall-notebook",
        "steps": [
            {"step": 1, "exit_code": 0, "signal": None, "timed_out": False, "duration_s": 0.4, "prompt": "Remember"},
            {"step": 2, "exit_code": 0, "signal": None, "timed_out": False, "duration_s": 0.4, "prompt": "Recall"},
        ],
    }


def showcase_report() -> dict[str, Any]:
    """Twelve cases, three epochs and a control: every section of the page has something to draw."""
    records = []
    for case in range(12):
        for epoch in (1, 2, 3):
            score = 0.0 if (case + epoch) % 5 == 0 else (0.5 if case == 9 else 1.0)
            if (case, epoch) == (7, 1):
                score = None  # one error, so the page shows its ERROR row and its warning
            records.append(record(case, epoch, score))
            records.append(record(case, epoch, 1.0 if case == 2 else 0.0, control=True))
    return report_of_rows(records, threshold=0.7, command="pytest cases --recall-cmd=recall-notebook")


def screenshot_dir(tmp_path: Path) -> Path:
    """Where screenshots go: $RECALL_SCREENSHOT_DIR when CI wants them as artifacts, else the test's tmp dir."""
    folder = Path(os.environ.get("RECALL_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@needs_chromium
def test_the_report_renders_offline_without_errors_and_draws_its_charts(chromium: Chromium, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(showcase_report()), encoding="utf-8")
    loaded = load_page(chromium, page)
    assert loaded.errors == []
    assert loaded.requests == [page.resolve().as_uri()], "the page must load nothing but itself"
    assert loaded.layout["resources"] == []
    assert loaded.layout["fonts"] == [], "no web fonts: the page uses the system's"
    assert loaded.layout["pageWidth"] <= WIDTH, "nothing may overflow sideways"
    assert loaded.layout["overflowing"] == [], "no table or chart may stick out of the page column"
    labels = [chart["label"] for chart in loaded.layout["charts"]]
    assert labels[:2] == ["Score with its interval and threshold", "Score by category"]
    assert "Memory lift by category, in points" in labels and "Histogram of run durations in seconds" in labels
    assert all(chart["width"] > 300 and chart["height"] > 40 for chart in loaded.layout["charts"])

    png = screenshot_dir(tmp_path) / "report.png"
    png.write_bytes(loaded.screenshot)
    image = decode_png(loaded.screenshot)
    assert (image.width, image.height) == (WIDTH, HEIGHT)
    assert len(loaded.screenshot) > 20_000
    assert len(image.colours()) > 50, "a screenshot of one colour is a blank page"
    categories = next(c for c in loaded.layout["charts"] if c["label"] == "Score by category")
    assert categories["y"] + categories["height"] <= HEIGHT, "the category chart is in the screenshot"
    box = (
        int(categories["x"]),
        int(categories["y"]),
        int(categories["x"] + categories["width"]),
        int(categories["y"] + categories["height"]),
    )
    chart_colours = image.colours(box)
    assert any(near(colour, CHART_BLUE) for colour in chart_colours), "the category bars are drawn"
    assert any(near(colour, (0x1F, 0x23, 0x28), 24) for colour in chart_colours), "labels and whiskers are drawn"
    verdict_band = image.colours((0, 0, WIDTH, 200))
    assert any(near(colour, PASS_GREEN) for colour in verdict_band), "the PASS badge is at the top"


@needs_chromium
def test_the_page_a_real_run_writes_loads_without_errors(chromium: Chromium, tmp_path: Path, recall_suite: Any) -> None:
    for name in ("alpha", "beta", "gamma"):
        recall_suite.add(name, ["remember 12345.67", "recall"], category=f"kind_{name}")
    html = tmp_path / "run.html"
    recall_suite.run("--recall-epochs=2", "--recall-control", f"--recall-html={html}").assert_outcomes(passed=12)
    loaded = load_page(chromium, html)
    assert loaded.errors == []
    assert loaded.requests == [html.resolve().as_uri()]
    assert len(loaded.layout["charts"]) >= 4
    (screenshot_dir(tmp_path) / "run.png").write_bytes(loaded.screenshot)


@needs_chromium
def test_the_error_check_does_see_a_console_error(chromium: Chromium, tmp_path: Path) -> None:
    """The detector itself: a page that logs an error and loads a missing image must not look clean."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><title>x</title><script>console.error('boom')</script><img src='missing.png'>",
        encoding="utf-8",
    )
    loaded = load_page(chromium, page)
    assert any("boom" in error for error in loaded.errors)
    assert any("missing.png" in error or "ERR_FILE_NOT_FOUND" in error for error in loaded.errors)


# What the case table shows, once the page has painted (so the paint entries exist).
TABLE_STATE = (
    AFTER_FIRST_PAINT
    + """.then(() => {
    const section = document.querySelector('section.case-table');
    const rows = [...section.querySelectorAll('tbody > tr:not(.evidence)')];
    const paint = Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime]));
    const navigation = performance.getEntriesByType('navigation')[0];
    const mark = performance.getEntriesByName('recall-first-rows')[0];
    return JSON.stringify({
        heading: section.querySelector('h2').textContent,
        total: section.dataset.total, rendered: section.dataset.rendered,
        shown: section.querySelector('.shown').textContent,
        page: section.querySelector('.pager .page').textContent,
        ids: rows.map(r => r.cells[1].querySelector('b').textContent),
        labels: rows.map(r => r.cells[0].textContent),
        firstPaint: paint['first-paint'], firstContentfulPaint: paint['first-contentful-paint'],
        firstRows: mark ? mark.startTime : null,
        domContentLoaded: navigation.domContentLoadedEventEnd, load: navigation.loadEventEnd,
    });
})"""
)


def set_control(browser: Chromium, selector: str, value: str, event: str) -> dict[str, Any]:
    """Set a filter the way a person would (value, then the event the page listens to); the table after."""
    script = f"""(() => {{ const input = document.querySelector('section.case-table {selector}');
        input.value = {json.dumps(value)}; input.dispatchEvent(new Event('{event}')); }})()"""
    evaluate(browser, script)
    state: dict[str, Any] = evaluate(browser, TABLE_STATE)
    return state


@needs_chromium
def test_the_case_table_pages_filters_searches_and_unfolds(chromium: Chromium, tmp_path: Path) -> None:
    page = tmp_path / "cases.html"
    write_chunks_atomic(page, html_chunks(synthetic_report(450)))
    loaded = load_page(chromium, page)
    assert loaded.errors == [], "the page's script runs under its own Content-Security-Policy"
    assert loaded.requests == [page.resolve().as_uri()]
    assert loaded.layout["overflowing"] == []
    state = evaluate(chromium, TABLE_STATE)
    assert state["heading"] == "Cases (450)" and state["total"] == "450" and state["rendered"] == "100"
    assert state["shown"] == "1–100 of 450 runs" and state["page"] == "page 1 of 5"
    # Worst first: the three errors (cases 0, 211, 422), then the failures (every 37th case).
    assert state["labels"][:3] == ["ERROR"] * 3 and state["ids"][:3] == [
        "ledger_000000",
        "ledger_000211",
        "ledger_000422",
    ]
    assert state["labels"][3:15] == ["FAIL 0.00"] * 12 and state["labels"][15] == "PASS 1.00"

    failing = set_control(chromium, "select.outcome", "1", "change")
    assert failing["shown"] == "1–12 of 12 runs (filtered from 450)" and set(failing["labels"]) == {"FAIL 0.00"}
    both = set_control(chromium, "select.category", "vendor_names", "change")
    assert both["ids"] == ["ledger_000037", "ledger_000185", "ledger_000333"], "filters combine"
    set_control(chromium, "select.outcome", "", "change")
    set_control(chromium, "select.category", "", "change")
    found = set_control(chromium, "input.search", "LEDGER_00030", "input")
    assert found["ids"] == [f"ledger_{i:06d}" for i in range(300, 310)], "search by id, any case"
    nothing = set_control(chromium, "input.search", "no such case", "input")
    assert nothing["ids"] == [] and nothing["shown"] == "no run matches (filtered from 450)"
    set_control(chromium, "input.search", "", "input")

    evaluate(chromium, "document.querySelector('section.case-table .pager button.last').click()")
    last = evaluate(chromium, TABLE_STATE)
    assert last["shown"] == "401–450 of 450 runs" and last["page"] == "page 5 of 5" and len(last["ids"]) == 50
    unfold = """new Promise(done => {
        const details = document.querySelector('section.case-table tr.evidence details');
        details.addEventListener('toggle', () => setTimeout(done, 0), {once: true});
        details.open = true;
    }).then(() => {
        const details = document.querySelector('section.case-table tr.evidence details');
        return JSON.stringify({
            steps: [...details.querySelectorAll('details.step > summary')].map(s => s.textContent),
            where: details.querySelector('p.mono').textContent,
            prompts: [...details.querySelectorAll('details.step > pre')].map(p => p.textContent),
        });
    })"""
    evidence = evaluate(chromium, unfold)
    first = int(last["ids"][0].removeprefix("ledger_"))
    half = synthetic_record(first)["steps"][0]["duration_s"]
    assert evidence["steps"] == [f"step 1 · exit 0 · {half:.2f} s", f"step 2 · exit 0 · {half:.2f} s"]
    assert evidence["where"] == f"cases/ledger/{last['ids'][0]}::recall · content hash {first:064x}"
    assert evidence["prompts"][0].startswith("Remember this value: ")
    assert evaluate(chromium, "JSON.stringify(performance.getEntriesByType('resource').length)") == 0


@needs_chromium
def test_cases_without_a_category_can_be_chosen_apart_from_all(chromium: Chromium, tmp_path: Path) -> None:
    records = [synthetic_record(i) for i in range(6)]
    records[2]["category"] = records[4]["category"] = None
    report = replace(synthetic_report(6), cases=records)
    page = tmp_path / "uncategorised.html"
    write_chunks_atomic(page, html_chunks(report))
    assert load_page(chromium, page).errors == []

    uncategorised = set_control(chromium, "select.category", "\u0000", "change")

    assert sorted(uncategorised["ids"]) == ["ledger_000002", "ledger_000004"]
    assert len(set_control(chromium, "select.category", "", "change")["ids"]) == 6


@needs_chromium
@pytest.mark.slow
def test_a_page_of_100000_cases_draws_its_first_page_of_rows(chromium: Chromium, tmp_path: Path) -> None:
    """The page of a 100,000-case run opens: it paints, and draws 100 rows of a table that counts 100,000.

    The paint and first-rows times are printed, not asserted: this machine is shared. bench/html_scale.py
    measures them at 1,000, 10,000 and 100,000 cases.
    """
    page = tmp_path / "100k.html"
    write_chunks_atomic(page, html_chunks(synthetic_report(100_000)))
    loaded = load_page(chromium, page)
    assert loaded.errors == []
    assert loaded.requests == [page.resolve().as_uri()]
    state = evaluate(chromium, TABLE_STATE)
    size_mb = page.stat().st_size / 1e6
    print(
        f"\n100,000 cases: page {size_mb:.1f} MB, first contentful paint {state['firstContentfulPaint']:.0f} ms, "
        f"first rows {state['firstRows']:.0f} ms, load {state['load']:.0f} ms"
    )
    assert state["heading"] == "Cases (100000)" and state["total"] == "100000"
    assert state["rendered"] == "100" and len(state["ids"]) == 100
    assert state["shown"] == "1–100 of 100,000 runs" and state["page"] == "page 1 of 1,000"
    assert state["labels"][0] == "ERROR" and state["ids"][0] == "ledger_000000", "the worst cases come first"
    assert state["firstContentfulPaint"] is not None and state["firstRows"] is not None


EPOCHS_STATE = """JSON.stringify((() => {
    const section = document.querySelector('section.epoch-table');
    const rows = [...section.querySelectorAll('tbody > tr')];
    return {
        total: section.dataset.total, rendered: section.dataset.rendered,
        shown: section.querySelector('.shown').textContent,
        page: section.querySelector('.pager .page').textContent,
        ids: rows.map(r => r.cells[0].querySelector('b').textContent),
        cells: rows.map(r => [...r.cells].slice(1, 6).map(c => c.textContent)),
        pills: rows.map(r => [...r.cells[6].querySelectorAll('.pill')].map(p => p.textContent + ' ' + p.className)),
    };
})())"""
# Opens every folded list of names, then reads the helped and harmed table as a reader sees it.
HELP_HARM_STATE = """(() => {
    const section = document.querySelector('section.help-harm');
    const read = () => JSON.stringify([...section.querySelectorAll('tbody > tr')].map(r => ({
        category: r.cells[0].textContent, p: r.cells[3].textContent,
        lead: [r.cells[1].firstChild.textContent, r.cells[2].firstChild.textContent],
        more: [...r.querySelectorAll('details.more > summary')].map(s => s.textContent),
        helped: [...r.cells[1].querySelectorAll('code')].map(c => c.textContent),
        harmed: [...r.cells[2].querySelectorAll('code')].map(c => c.textContent),
    })));
    const folded = read();
    const opened = [...section.querySelectorAll('details.more')].map(d => new Promise(done => {
        d.addEventListener('toggle', () => setTimeout(done, 0), {once: true});
        d.open = true;
    }));
    return Promise.all(opened).then(() => JSON.stringify({folded: JSON.parse(folded), opened: JSON.parse(read())}));
})()"""


@needs_chromium
def test_the_epochs_table_and_the_helped_and_harmed_lists_are_drawn_from_data(
    chromium: Chromium, tmp_path: Path
) -> None:
    records = []
    for case in range(150):
        harmed = case % 10 == 3  # memory fails where the control passes
        for epoch in (1, 2):
            records.append(record(case, epoch, 0.0 if harmed else (0.5 if case == 7 and epoch == 2 else 1.0)))
            records.append(record(case, epoch, 1.0 if harmed else 0.0, control=True))
    report = report_of_rows(records, threshold=0.7, command="pytest cases --recall-cmd=recall-notebook")
    page = tmp_path / "epochs.html"
    html = render_html(report)
    assert html.count("<code>") == 1 and "<b>case_07" not in html, "no list or row is markup, only the command"
    page.write_text(html, encoding="utf-8")
    loaded = load_page(chromium, page)
    assert loaded.errors == []
    assert loaded.layout["overflowing"] == []

    epochs = evaluate(chromium, EPOCHS_STATE)
    assert (epochs["total"], epochs["rendered"]) == ("150", "100")
    assert epochs["shown"] == "1–100 of 150 cases" and epochs["page"] == "page 1 of 2"
    assert epochs["ids"][:8] == [f"case_{i:02d}" for i in range(8)]
    assert epochs["cells"][7] == ["a_rather_long_category_name_for_layout", "75.0%", "yes", "no", "50%"]
    assert epochs["pills"][7] == ["1.00 pill good", "0.50 pill warn"]
    assert epochs["pills"][3] == ["0.00 pill bad", "0.00 pill bad"]
    search = """(() => { const input = document.querySelector('section.epoch-table input.search');
        input.value = 'CASE_14'; input.dispatchEvent(new Event('input')); })()"""
    evaluate(chromium, search)
    found = evaluate(chromium, EPOCHS_STATE)
    assert found["ids"] == ["case_14", *(f"case_{i}" for i in range(140, 150))]
    assert found["shown"] == "1–11 of 11 cases (filtered from 150)"

    lists = evaluate(chromium, HELP_HARM_STATE)
    by_category = (report.help_harm or {})["by_category"]
    assert [row["category"] for row in lists["opened"]] == sorted(by_category)
    for folded, opened in zip(lists["folded"], lists["opened"], strict=True):
        entry = by_category[opened["category"]]
        helped, harmed = entry["helped"], entry["harmed"]
        assert len(helped) > 20, "enough names that some are folded"
        assert folded["lead"] == [f"{len(helped)}: ", f"{len(harmed)}: " if harmed else "–"]
        assert folded["helped"] == helped[:20] and folded["more"] == [f"and {len(helped) - 20} more"]
        assert opened["helped"] == helped and opened["harmed"] == harmed
        assert opened["p"] == f"{entry['p_value']:.3f}"


# In a narrow page, where cells break lines: a category only after a '_' or a '-', an expected answer
# only at a space (its voucher ids whole).
CATEGORY_BREAKS = r"""JSON.stringify((() => {
    document.querySelector('main').style.maxWidth = '640px';
    const broken = [];
    const rows = 'section.case-table tr:not(.evidence)';
    for (const [column, between] of [[3, "_-"], [5, " "]]) for (const cell of document.querySelectorAll(
            `${rows} td:nth-child(${column})`)) {
        const text = cell.textContent;
        const range = document.createRange();
        let top = null, at = 0;
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (let i = 0; i < node.length; i++, at++) {
                if (/\s/.test(text[at])) continue;  // a space at a line's end may be drawn on either line
                range.setStart(node, i);
                range.setEnd(node, i + 1);
                const line = Math.round(range.getBoundingClientRect().top);
                if (top !== null && line !== top && !between.includes(text[at - 1])) broken.push(text.slice(0, at + 1));
                top = line;
            }
        }
    }
    // A table too wide for so narrow a column scrolls in its own box; the page never does.
    const main = document.querySelector('main');
    const edge = main.getBoundingClientRect().right;
    const wide = [...main.querySelectorAll('.table-scroll')].filter(e => e.getBoundingClientRect().right > edge + 0.5);
    const cells = document.querySelectorAll('section.case-table tr:not(.evidence) td:nth-child(3)').length;
    return {broken, wide: wide.length, pageWidth: document.documentElement.scrollWidth, cells};
})())"""


@needs_chromium
def test_a_locomo_run_keeps_its_case_table_in_the_page_and_its_category_names_whole(
    chromium: Chromium, tmp_path: Path, pytester: pytest.Pytester
) -> None:
    """Issue 55: on the LoCoMo import the case table ran past the page, and 'largest_debit_vo/ucher' broke mid-word."""
    from pytest_recall.cli import main

    data = Path(__file__).resolve().parent / "data" / "locomo_tiny.json"
    assert main(["import", "locomo", str(data), "--out", str(pytester.path / "loc")]) == 0
    ledger = pytester.path / "loc-ledger" / "case_01"
    ledger.mkdir(parents=True)
    (ledger / "step1.txt").write_text("remember 12345.67", encoding="utf-8")
    (ledger / "step2.txt").write_text("recall", encoding="utf-8")
    expected = {
        "id": "case_01",
        "category": "largest_debit_voucher",
        "answer": "AR-2026-0042",
        "answer_kind": "voucher",
    }
    (ledger / "answer.json").write_text(json.dumps(expected), encoding="utf-8")
    html = tmp_path / "locomo.html"
    retrieval = f"{sys.executable} -m pytest_recall.agents.retrieval"
    result = pytester.runpytest_subprocess(
        "loc",
        "loc-ledger",
        f"--recall-cmd={retrieval}",
        f"--recall-html={html}",
        "--recall-transcripts=all",
        timeout=300,
    )
    assert html.is_file(), result.stdout.str()
    loaded = load_page(chromium, html)
    (screenshot_dir(tmp_path) / "locomo.png").write_bytes(loaded.screenshot)
    assert loaded.errors == []
    assert loaded.layout["pageWidth"] <= WIDTH, "nothing may overflow sideways"
    assert loaded.layout["overflowing"] == [], "no table may stick out of the page column"
    narrow = evaluate(chromium, CATEGORY_BREAKS)
    assert narrow["cells"] >= 13
    assert narrow["broken"] == [], "a category name or an answer broke inside a word"
    assert narrow["wide"] == 0 and narrow["pageWidth"] <= WIDTH, "in a narrow column the table scrolls, not the page"
