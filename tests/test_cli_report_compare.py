"""``pytest-recall report`` and ``pytest-recall compare`` on saved reports, run as the command a user runs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.reporting.document import load_report
from pytest_recall.reporting.files import write_json_atomic
from pytest_recall.reporting.html import render_html
from pytest_recall.reporting.merge import report_of_rows


def saved_report(folder: Path, name: str, scores: Sequence[float | None], **fields: Any) -> Path:
    """A report as the plugin writes it, case i scoring ``scores[i]``; categories alternate."""
    records = [
        {
            "id": f"case_{i:02d}",
            "suite": "suite",
            "nodeid": f"cases/suite/case_{i:02d}::recall",
            "category": ("names", "dates")[i % 2],
            "score": score,
            "error": None if score is not None else "agent exited 1",
            "epoch": 1,
            "control": False,
            "duration_s": 1.0 + i / 10,
            "cost_usd": None,
            "content_hash": f"h{i}",
            "steps": [],
        }
        for i, score in enumerate(scores)
    ]
    report = report_of_rows(records, threshold=0.5, command="my-agent").as_json()
    report.update(fields)
    path = folder / name
    write_json_atomic(path, report)
    return path


def pytest_recall(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_recall.cli", *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_a_significant_regression_exits_one(tmp_path: Path) -> None:
    base = saved_report(tmp_path, "base.json", [1.0] * 10)
    new = saved_report(tmp_path, "new.json", [0.0] * 8 + [1.0] * 2)
    result = pytest_recall("compare", base, new)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "pytest-recall compare: new - base over 10 paired cases (McNemar exact test, alpha 0.05)"
    assert any(line.startswith("overall") and line.endswith("REGRESSION") for line in lines)
    assert any(line.startswith("dates ") for line in lines) and any(line.startswith("names ") for line in lines)
    assert lines[-1] == "Verdict: REGRESSION (-80.0 points, p = 0.008)."


def test_a_significant_improvement_exits_zero(tmp_path: Path) -> None:
    base = saved_report(tmp_path, "base.json", [0.0] * 10)
    new = saved_report(tmp_path, "new.json", [1.0] * 10)
    result = pytest_recall("compare", base, new)
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == "Verdict: improvement (+100.0 points, p = 0.002)."


def test_no_change_exits_zero(tmp_path: Path) -> None:
    scores = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    base = saved_report(tmp_path, "base.json", scores)
    new = saved_report(tmp_path, "new.json", scores)
    result = pytest_recall("compare", base, new)
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == "Verdict: no significant change (+0.0 points, p = 1.000)."


def test_alpha_decides_whether_a_borderline_drop_fails_the_gate(tmp_path: Path) -> None:
    # Six cases went from 1 to 0 and none the other way: McNemar p = 2 / 2**6 = 0.031.
    base = saved_report(tmp_path, "base.json", [1.0] * 6 + [0.0] * 2)
    new = saved_report(tmp_path, "new.json", [0.0] * 8)
    assert pytest_recall("compare", base, new, "--alpha", "0.05").returncode == 1
    strict = pytest_recall("compare", base, new, "--alpha", "0.01")
    assert strict.returncode == 0
    assert strict.stdout.splitlines()[-1] == "Verdict: no significant change (-75.0 points, p = 0.031)."


def test_compare_can_save_the_comparison_as_json(tmp_path: Path) -> None:
    base = saved_report(tmp_path, "base.json", [1.0] * 10)
    new = saved_report(tmp_path, "new.json", [0.0] * 8 + [1.0] * 2)
    out = tmp_path / "diff" / "comparison.json"
    assert pytest_recall("compare", base, new, "--json", out).returncode == 1
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert (saved["regression"], saved["n_paired"], saved["overall"]["worsened"]) == (True, 10, 8)
    assert set(saved["by_category"]) == {"names", "dates"}


def test_compare_reports_cases_only_one_side_has(tmp_path: Path) -> None:
    base = saved_report(tmp_path, "base.json", [1.0] * 6)
    new = saved_report(tmp_path, "new.json", [1.0] * 8)
    result = pytest_recall("compare", base, new)
    assert result.returncode == 0
    assert "Only in new (2): suite/case_06, suite/case_07" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["compare", "missing.json", "missing.json"],
            "pytest-recall compare: *No such file or directory: 'missing.json'",
        ),
        (["compare", "not_a_report.json", "not_a_report.json"], "pytest-recall compare: *not a pytest-recall report*"),
        (["report", "not_a_report.json"], "pytest-recall report: *not a pytest-recall report*"),
        (["compare", "a.json", "b.json", "--alpha", "5"], "*--alpha: must be a number between 0 and 1*"),
    ],
)
def test_unreadable_input_exits_two_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "not_a_report.json").write_text('{"score": 1}', encoding="utf-8")
    result = pytest_recall(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    last_line = result.stderr.strip().splitlines()[-1]
    assert pytest.LineMatcher([last_line]).fnmatch_lines([message]) is None


def test_report_prints_the_summary_and_rebuilds_the_html_page(tmp_path: Path) -> None:
    path = saved_report(tmp_path, "report.json", [1.0, 1.0, 0.0, 1.0, None, 1.0])
    page = tmp_path / "pages" / "report.html"
    result = pytest_recall("report", path, "--html", page)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "recall: PASSED  score 0.800  (threshold 0.5)  4/6 cases passed, 1 error",
        "  95% interval [0.376, 0.964] (wilson, 5 cases)",
        "  dates  1.000  |####################|  [0.439, 1.000]",
        "  names  0.500  |##########          |  [0.095, 0.905]",
        "  latency per case: median 1.30s, p95 1.50s, total 7.50s;  cost: not reported",
        f"  html: {page}",
    ]
    assert page.read_text(encoding="utf-8") == render_html(load_report(path))
    assert sorted(p.name for p in page.parent.iterdir()) == ["report.html"]


def test_report_reads_reports_written_before_the_statistics_existed(tmp_path: Path) -> None:
    path = saved_report(tmp_path, "old.json", [1.0, 0.0])
    old = json.loads(path.read_text(encoding="utf-8"))
    for key in ("epochs", "confidence", "by_category_confidence", "pass_at_k", "pass_all_k", "per_case", "control"):
        del old[key]
    path.write_text(json.dumps(old), encoding="utf-8")
    result = pytest_recall("report", path, "--html", tmp_path / "old.html")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "recall: PASSED  score 0.500  (threshold 0.5)  1/2 cases passed"
    assert "95% interval" in (tmp_path / "old.html").read_text(encoding="utf-8")
