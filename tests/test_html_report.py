"""The HTML report: one offline file, well formed, escaped against hostile agent output, stable."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from html.parser import HTMLParser
from typing import Any

import pytest
from report_docs import run_report

from pytest_recall.reporting import html
from pytest_recall.reporting.spool import summary_of_row
from pytest_recall.scoring.stats import summarize

HOSTILE = "ok <script>alert(1)</script>\x00\x1b[31mred\x1b[0m bell\x07 \ud800\U0001fffe \U0001f600 done\r\nnext line\r"
VOID_ELEMENTS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"})


def case_record(case: int, score: float | None, *, epoch: int = 1, control: bool = False) -> dict[str, Any]:
    return {
        "id": f"case_{case:02d}",
        "suite": "session-memory-recall",
        "nodeid": f"cases/session-memory-recall/case_{case:02d}::recall",
        "category": "closing_balance" if case % 2 else "<b>names</b>",
        "answer_kind": "money",
        "expected": {"amount": "27436.42", "note": "<i>"} if case == 0 else "27436.42",
        "score": score,
        "reason": "matched" if score == 1.0 else "mismatch",
        "reported": "27436.42" if score == 1.0 else "<img src=x onerror=alert(2)>",
        "error": "agent crashed" if score is None else None,
        "epoch": epoch,
        "control": control,
        "duration_s": 1.5 + case + epoch / 10,
        "cost_usd": 0.01 if case % 3 else None,
        "content_hash": "abc",
        "command": "recall-notebook",
        "steps": [
            {
                "step": 1,
                "exit_code": 0,
                "timed_out": False,
                "duration_s": 1.1,
                "prompt": "Remember: 27436.42",
                "stdout": HOSTILE,
                "stderr": "",
                "truncated": False,
                "cost_usd": None,
            },
            {
                "step": 2,
                "exit_code": 1,
                "timed_out": True,
                "duration_s": 2.2,
                "prompt": "What was it?",
                "stdout": "27436.42",
                "stderr": "</pre></details></td></tr></table>",
                "truncated": True,
                "cost_usd": None,
            },
        ],
    }


def render_html(document: Mapping[str, Any]) -> str:
    """The page of a report made here as JSON, read as a report file is."""
    return html.render_html(run_report(document))


def html_chunks(document: Mapping[str, Any]) -> Iterator[str]:
    return html.html_chunks(run_report(document))


def make_report(*, epochs: int = 1, control: bool = True, passed: bool = True) -> dict[str, Any]:
    scores = [1.0, 1.0, 0.25, None, 1.0, 0.0]
    cases = [case_record(i, s, epoch=e) for i, s in enumerate(scores) for e in range(1, epochs + 1)]
    if control:
        cases += [case_record(i, 0.0, control=True) for i in range(len(scores))]
    return {
        "schema_version": 1,
        "passed": passed,
        "score": 0.65,
        "n_passed": 3,
        "n_total": 6,
        "n_scored": 5,
        "n_skipped_no_gold": 0,
        "n_errors": 1,
        "threshold": 0.6,
        "by_category": {"closing_balance": 0.667, "<b>names</b>": 0.625},
        "latency_ms_median": 3500.0,
        "latency_ms_p95": 6400.0,
        "latency_ms_total": 21000.0,
        "cost_usd_total": 0.04,
        "command": "pytest --recall-agent='<script>x</script>'",
        "interrupted": False,
        "cases": cases,
    }


class TagBalance(HTMLParser):
    """Records every mismatched or unclosed element; SVG's self-closing tags arrive as startendtag."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        # (type attribute, text) of every <script>: the page's data blocks and its one script.
        self.scripts: list[tuple[str | None, str]] = []
        self._in_script: str | bool | None = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += attrs
        if tag == "script":
            self._in_script = dict(attrs).get("type")
            self.scripts.append((self._in_script, ""))
        if tag not in VOID_ELEMENTS:
            self.stack.append(tag)

    def handle_data(self, data: str) -> None:
        if self._in_script is not False:
            kind, text = self.scripts[-1]
            self.scripts[-1] = (kind, text + data)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += attrs

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def parse(page: str) -> TagBalance:
    parser = TagBalance()
    parser.feed(page)
    parser.close()
    return parser


def case_data(page: str) -> tuple[list[list[Any]], list[list[Any]]]:
    """The case rows and their evidence, as the page's script reads them."""
    scripts = dict(parse(page).scripts)
    rows = json.loads(scripts["application/json"])
    evidence = [json.loads(line) for line in scripts["application/x-ndjson"].split("\n")]
    return rows, evidence


@pytest.mark.parametrize("epochs", [1, 3])
def test_every_element_is_closed_in_order(epochs: int) -> None:
    parsed = parse(render_html(make_report(epochs=epochs)))
    assert parsed.problems == []
    assert parsed.stack == []
    assert {"html", "head", "body", "main", "header", "section", "table", "select", "input", "svg"} <= set(parsed.tags)


def test_the_page_loads_nothing_and_runs_only_its_own_script() -> None:
    page = render_html(make_report())
    parsed = parse(page)
    assert "http://" not in page
    assert "https://" not in page
    assert not [value for name, value in parsed.attributes if name in {"src", "srcset", "action", "xlink:href"}]
    assert [value for name, value in parsed.attributes if name == "href"] == ["data:,"]
    assert not [name for name, _ in parsed.attributes if name.startswith("on")]
    # Two data blocks no browser runs, and one script, allowed by its hash and by nothing else.
    assert [kind for kind, _ in parsed.scripts] == ["application/json", None, "application/x-ndjson"]
    code = parsed.scripts[1][1]
    digest = base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()
    policy = re.search(r'Content-Security-Policy" content="([^"]*)"', page)
    assert policy is not None
    assert "default-src 'none'" in policy.group(1)
    assert f"script-src 'sha256-{digest}'" in policy.group(1)
    assert "innerHTML" not in code and "eval(" not in code


def test_charts_are_inline_svg() -> None:
    page = render_html(make_report())
    assert page.count("<svg") >= 4  # score gauge, categories, lift, latency


def test_hostile_agent_output_is_escaped_and_cleaned() -> None:
    page = render_html(make_report())
    assert "<script>alert(1)</script>" not in page
    assert page.count("</script>") == 3, "nothing in the data closes its block"
    assert "<img src=x" not in page
    assert "</pre></details>" not in page
    assert "<b>names</b>" not in page
    assert "&lt;b&gt;names&lt;/b&gt;" in page
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", page)
    assert "[31m" not in page
    assert "\U0001fffe" not in page and "\U0001f600" in page
    page.encode("utf-8")  # a lone surrogate from the agent would make this raise
    rows, evidence = case_data(page)
    assert {row[8] for row in rows} == {"27436.42", "<img src=x onerror=alert(2)>"}, "text for textContent"
    stdout = evidence[0][1][0][2]
    assert "<script>alert(1)</script>" in stdout and "\\x00" in stdout and "\\x07" in stdout
    assert "[31m" not in stdout and "done\nnext line\n" in stdout
    assert "\U0001fffe" not in stdout and "\U0001f600" in stdout
    assert evidence[0][1][1][3] == "</pre></details></td></tr></table>"


def test_the_verdict_is_the_first_thing_on_the_page() -> None:
    passing = render_html(make_report(passed=True))
    failing = render_html(make_report(passed=False))
    assert '<header class="verdict pass">' in passing and '<div class="badge">PASS</div>' in passing
    assert '<header class="verdict fail">' in failing and '<div class="badge">FAIL</div>' in failing
    assert passing.index("badge") < passing.index("<section>")
    assert "Recall score 65.0%" in passing
    assert "95% interval" in passing


def test_evidence_is_folded_by_default() -> None:
    page = render_html(make_report())
    assert "<details open" not in page and "'open'" not in page
    rows, evidence = case_data(page)
    assert len(rows) == len(evidence) == 12
    assert sum(len(steps) for _, steps in evidence) == 2 * 12
    assert [row[-1] for row in rows] == [2] * 12, "each row says how many steps it unfolds to"


def test_every_run_is_a_row_and_the_tables_count_them() -> None:
    page = render_html(make_report(epochs=3))
    rows, _ = case_data(page)
    assert len(rows) == 6 * 3 + 6
    assert sum(row[13] for row in rows) == 6, "control runs are marked, for their own table"
    assert "<h2>Cases (18)</h2>" in page and "<h2>Control runs (6)</h2>" in page
    assert {row[1] for row in rows} >= {"PASS 1.00", "PARTIAL 0.25", "ERROR", "FAIL 0.00"}


class CountedCases(Sequence[Mapping[str, Any]]):
    """Records read lazily, as the plugin's spool gives them: counts passes, refuses indexing."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records, self.passes, self.live = records, 0, 0

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: Any) -> Any:
        raise AssertionError("the page reads records in order, never by index")

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        self.passes += 1
        for record in self.records:
            yield dict(record)


def test_the_page_streams_its_records_in_two_passes() -> None:
    report = make_report(epochs=2)
    streamed = CountedCases(report["cases"])
    chunks = html_chunks({**report, **summarize([summary_of_row(row) for row in report["cases"]]), "cases": streamed})
    first = next(chunks)
    assert first.startswith("<!DOCTYPE html>") and "<h2>Cases (12)</h2>" in first
    assert streamed.passes == 1, "the summary's scalars take one pass"
    rest = "".join(chunks)
    assert streamed.passes == 2, "the rows and their evidence take one more"
    assert first + rest == render_html({**report, **summarize([summary_of_row(row) for row in report["cases"]])})


def test_memory_lift_is_shown_only_when_there_was_a_control_run() -> None:
    assert "Memory lift" in render_html(make_report(control=True))
    assert "Memory lift" not in render_html(make_report(control=False))


def section_rows(page: str, kind: str) -> list[Any]:
    """The rows a section carries for the page's script to draw."""
    found = re.search(f'<section class="{kind}">(.*?)</section>', page, re.S)
    assert found is not None, f"no {kind} section"
    assert "<tr><td" not in found.group(1), "the rows are data, not markup"
    block = re.search(r'<script type="application/json" class="rows">(.*?)</script>', found.group(1), re.S)
    assert block is not None
    rows: list[Any] = json.loads(block.group(1))
    return rows


def test_epochs_get_a_consistency_table_drawn_from_data() -> None:
    page = render_html(make_report(epochs=3))
    assert "pass@3" in page
    rows = section_rows(page, "epoch-table")
    assert [row[0] for row in rows] == [f"case_{i:02d}" for i in range(6)]
    assert rows[2][3:] == ["25.0%", "no", "no", "0%", [["0.25", "warn"]] * 3]
    assert "pass@" not in render_html(make_report(epochs=1))


def test_the_same_report_renders_the_same_bytes() -> None:
    report = make_report(epochs=2)
    assert render_html(report) == render_html(report)


def test_a_report_without_statistics_gets_them_computed() -> None:
    report = make_report(epochs=2)
    with_statistics = {**report, **summarize([summary_of_row(row) for row in report["cases"]])}
    assert render_html(report) == render_html(with_statistics)


def test_a_nearly_empty_report_still_renders() -> None:
    parsed = parse(render_html({"passed": False}))
    assert parsed.problems == [] and parsed.stack == []


def test_escaping_is_a_type_so_plain_text_is_escaped_wherever_it_lands():
    from markupsafe import Markup

    from pytest_recall.reporting import html

    section = html._section("<script>alert(1)</script>", "hint", Markup("<b>kept</b>"))
    assert isinstance(section, Markup)
    assert "&lt;script&gt;" in section and "<b>kept</b>" in section
    label = html._tag("text", "<tspan onload=x>")
    assert "<tspan" not in label and "&lt;tspan" in label
