"""The HTML page at 1,000, 10,000 and 100,000 cases: its size, the time to write it, and how soon it paints.

Each size is a synthetic report (``pytest_recall.testing.synthetic``: the
records a run writes, made as they are read). The page is written as the
plugin writes it (``html_chunks`` into ``write_chunks_atomic``), side by
side with the JSON report of the same records (``write_json_atomic``): the
ratio is page time over report time. Then headless Chromium (the system's
``chromium``) opens the page from disk, and the page itself says when it
first painted (``performance.getEntriesByType('paint')``) and when its
script had drawn the first 100 rows (the ``recall-first-rows`` mark).
Times are the best of ``--repeat``; the machine is shared, so the ratios
mean more than the milliseconds.

    python bench/html_scale.py                  # 1,000, 10,000 and 100,000 cases
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path
from typing import Any

from _common import ROOT, Row, best_times, parse_args, print_table, scratch, secs, timed

sys.path.insert(0, str(ROOT))
from pytest_recall.reporting.files import write_chunks_atomic, write_json_atomic
from pytest_recall.reporting.html import html_chunks
from pytest_recall.testing.chromium import AFTER_FIRST_PAINT, CHROMIUM, Chromium, evaluate, headless_chromium
from pytest_recall.testing.synthetic import synthetic_report

COUNTS = (1_000, 10_000, 100_000)
QUICK_COUNTS = (200,)
# What the page says of itself once it has painted.
PAGE_TIMES = (
    AFTER_FIRST_PAINT
    + """.then(() => {
    const section = document.querySelector('section.case-table');
    const paint = Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime]));
    const mark = (name) => (performance.getEntriesByName(name)[0] || {}).startTime ?? null;
    return JSON.stringify({
        fcp: paint['first-contentful-paint'] ?? null, scriptStart: mark('recall-script-start'),
        firstRows: mark('recall-first-rows'), load: performance.getEntriesByType('navigation')[0].loadEventEnd,
        rendered: section ? Number(section.dataset.rendered) : 0, total: section ? Number(section.dataset.total) : 0,
    });
})"""
)


def open_page(browser: Chromium, page: Path) -> dict[str, Any]:
    before = len(browser.events)
    browser.send("Page.navigate", {"url": page.resolve().as_uri()})
    browser.wait_for_event("Page.loadEventFired", after=before)
    times: dict[str, Any] = evaluate(browser, PAGE_TIMES)
    return times


def measure(root: Path, count: int, repeat: int) -> Row:
    report = synthetic_report(count)
    page, document = root / f"page-{count}.html", root / f"report-{count}.json"
    best = best_times(
        {
            "page": lambda: timed(lambda: write_chunks_atomic(page, html_chunks(report))),
            "report": lambda: timed(lambda: write_json_atomic(document, report.as_json(), line_each="cases")),
        },
        repeat,
    )
    size_mb = page.stat().st_size / 1e6
    what = f"{count} cases: page {size_mb:.1f} MB ({size_mb * 1000 / count:.2f} KB/case)"
    baseline = (f"write {secs(best['report'])} ({document.stat().st_size / 1e6:.1f} MB)",)
    if CHROMIUM is None:
        harness = f"write {secs(best['page'])}; no chromium to open it"
        return Row(what, harness, baseline, "page/report write", best["page"] / best["report"])
    warm_up = root / "warm-up.html"
    warm_up.write_text("<!DOCTYPE html><title>warm-up</title><p>warm-up</p>", encoding="utf-8")
    opened: list[dict[str, Any]] = []
    for attempt in range(repeat):
        with headless_chromium(root / f"profile-{count}-{attempt}", 1200, 2000) as browser:
            # A fresh browser's first page also pays for starting its compositor; that is not the page's cost.
            open_page(browser, warm_up)
            opened.append(open_page(browser, page))
    assert all(o["rendered"] == min(100, count) and o["total"] == count for o in opened), opened
    fcp = min(o["fcp"] for o in opened)
    first_rows = min(o["firstRows"] for o in opened)
    load = min(o["load"] for o in opened)
    harness = f"write {secs(best['page'])}; paint {fcp:.0f} ms, first rows {first_rows:.0f} ms, load {load:.0f} ms"
    return Row(what, harness, baseline, "page/report write", best["page"] / best["report"])


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    counts = QUICK_COUNTS if args.quick else COUNTS
    with scratch("html") as root:
        rows = [measure(root, count, args.repeat) for count in counts]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000
    print_table(f"html page, best of {args.repeat} (this process peaked at {peak:.0f} MB)", ("JSON report",), rows)


if __name__ == "__main__":
    main()
