"""Issue 65, holes 8 and 9: a hostile report is one line from every command, and the card renders it as text.

A report is a file anyone can hand over: ``card``, ``report`` and
``--recall-epochs-from`` read it, and the card is pasted into READMEs and
pull requests, where GitHub renders its Markdown.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from pytest_recall.reporting.files import write_json_atomic
from pytest_recall.reporting.merge import report_of_rows

HUGE = int("1" + "0" * 400)
HOSTILE_NAMES = [
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "</details><script>alert(1)</script>",
    "![x](https://example.invalid/x.png)",
    "a|b\n\n<b>bold</b>",
]


def saved_report(path: Path, categories: list[str] | None = None, epochs: int = 1) -> dict[str, Any]:
    """A report as a run writes it, of two cases per category, each run ``epochs`` times (its protocol block names
    a hostile data maker)."""
    rows = [
        {"id": f"q{number}", "suite": "s", "nodeid": f"s/q{number}::recall[{epoch}]", "category": category,
         "score": 1.0, "error": None, "epoch": epoch, "control": False, "duration_s": 1.0, "cost_usd": 0.01,
         "content_hash": f"h{number}", "steps": []}
        for number, category in enumerate(2 * (categories or ["temporal"]))
        for epoch in range(1, epochs + 1)
    ]  # fmt: skip
    protocol = {
        "data": [{"suite": "s", "made_by": HOSTILE_NAMES[2], "sources": [{"sha256": "ab"}]}],
        "scoring": {"answer_judge": "answer"},
        "judges": {"answer_judge": "answer"},
        "agent": {"command": "agent", "adapter": None, "cli_version": None},
        "run": {"epochs": epochs},
        "harness_version": "0.1.0",
    }
    report = report_of_rows(rows, threshold=0.5, command="agent", protocol=protocol).as_json()
    write_json_atomic(path, report)
    return report


def pytest_recall(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_recall.cli", *map(str, args)], capture_output=True, text=True, timeout=60
    )


# -- hole 8: a hostile report ----------------------------------------------------------------------


@pytest.mark.parametrize("field", ["latency_ms_median", "latency_ms_total", "cost_usd_total", "tokens_in_total"])
@pytest.mark.parametrize("command", ["card", "report"])
def test_a_400_digit_figure_in_a_report_is_one_line_from_card_and_report(
    tmp_path: Path, command: str, field: str
) -> None:
    report = saved_report(tmp_path / "good.json")
    report[field] = HUGE
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(report), encoding="utf-8")
    done = pytest_recall(command, hostile)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.splitlines() == [
        f"pytest-recall {command}: {hostile}: not a pytest-recall report: "
        f"at {field}: an integer past any float is no number a report holds"
    ]


JUDGES_OF_NUMBERS = {
    "score_by": "a",
    "table": dict.fromkeys(["judges", "deterministic", "pairs", "spread", "flips"], 1),
}
WRONG_SHAPES = [
    ("card", {"control": {"lift_test": 5}}),
    ("report", {"control": {"lift_test": "abc"}}),
    ("report", {"control": {"lift": [1]}}),
    ("report", {"judges": JUDGES_OF_NUMBERS}),
]


@pytest.mark.parametrize(
    ("command", "blocks"), WRONG_SHAPES, ids=["card-lift-test", "report-lift-test", "report-lift", "report-judges"]
)
def test_a_loosely_typed_block_of_the_wrong_shape_is_one_line(
    tmp_path: Path, command: str, blocks: dict[str, Any]
) -> None:
    report = saved_report(tmp_path / "good.json") | blocks
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(report), encoding="utf-8")
    done = pytest_recall(command, hostile, *(["--html", tmp_path / "page.html"] if command == "report" else []))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"pytest-recall {command}: {hostile}: not a pytest-recall report: a value of the wrong")
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize(
    "change", [{"scores": [[1], [1]]}, {"suite": None}, {"scores": "11"}], ids=["list-scores", "no-suite", "a-string"]
)
def test_epochs_from_a_report_with_malformed_epochs_is_a_usage_error(
    pytester: pytest.Pytester, change: dict[str, Any]
) -> None:
    report = saved_report(pytester.path / "good.json", epochs=2)
    case = report["per_case"][0]
    case.update(change)
    if case["suite"] is None:
        del case["suite"]
    hostile = pytester.path / "hostile.json"
    hostile.write_text(json.dumps(report), encoding="utf-8")
    result = pytester.runpytest_subprocess("--recall-epochs=2", f"--recall-epochs-from={hostile}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()
    said = "per_case[0] is not a case's epochs (its suite, its id and a list of scores)"
    result.stderr.fnmatch_lines([f"ERROR: --recall-epochs-from: {said}; give the report of an earlier run"])


# -- hole 9: the card's Markdown -------------------------------------------------------------------


def test_the_card_renders_hostile_category_names_as_text(tmp_path: Path) -> None:
    saved_report(tmp_path / "report.json", HOSTILE_NAMES)
    card = pytest_recall("card", tmp_path / "report.json")
    assert card.returncode == 0, card.stderr
    markdown = MarkdownIt("commonmark").enable("table")
    tokens = markdown.parse(card.stdout)
    inline = [child.type for token in tokens for child in token.children or []]
    assert not {"html_inline", "link_open", "image"} & set(inline), inline
    assert [token.content.split("\n")[0] for token in tokens if token.type == "html_block"] == [
        "<details>",
        "</details>",
    ]
    page = markdown.render(card.stdout)
    for name in HOSTILE_NAMES:
        assert f"<td>{html.escape(' '.join(name.splitlines()), quote=False)}</td>" in page, name
