"""The imported suites through the harness: recall-retrieval against the amnesiac, the control, and case groups."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.cli import main

DATA = Path(__file__).resolve().parent / "data"
RETRIEVAL = shlex.join([sys.executable, "-m", "pytest_recall.agents.retrieval"])
AMNESIAC = shlex.join([sys.executable, "-m", "pytest_recall.agents.amnesiac"])


def imported(pytester: pytest.Pytester) -> None:
    assert (
        main(["import", "longmemeval", str(DATA / "longmemeval_tiny.json"), "--out", str(pytester.path / "lme")]) == 0
    )
    assert main(["import", "locomo", str(DATA / "locomo_tiny.json"), "--out", str(pytester.path / "loc")]) == 0


def run(pytester: pytest.Pytester, suite: str, command: str, *options: str) -> dict[str, Any]:
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        suite, f"--recall-cmd={command}", f"--recall-report={report}", *options, timeout=300
    )
    kind = "LEXICAL judge" if suite == "lme" else "the paper's token F1"
    result.stdout.fnmatch_lines([f"*{kind}*haystack sessions per step: 1"])
    loaded: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return loaded


def by_category(report: dict[str, Any], control: bool = False) -> dict[str, float]:
    scores: dict[str, list[float]] = {}
    for record in report["cases"]:
        if record["control"] == control:
            scores.setdefault(record["category"], []).append(record["score"])
    return {category: sum(values) / len(values) for category, values in scores.items()}


@pytest.mark.slow
def test_retrieval_beats_the_amnesiac_on_longmemeval_and_the_control_gives_the_lift(pytester):
    imported(pytester)
    retrieval = run(pytester, "lme", RETRIEVAL, "--recall-control", "--recall-concurrency=4")
    amnesiac = run(pytester, "lme", AMNESIAC, "--recall-concurrency=4")
    remembered, control = by_category(retrieval), by_category(retrieval, control=True)
    forgot = by_category(amnesiac)
    # The amnesiac scores only where declining is right.
    assert forgot == {category: (1.0 if category == "abstention" else 0.0) for category in forgot}
    for category in ("single-session-user", "single-session-assistant", "temporal-reasoning"):
        assert remembered[category] == 1.0 and control[category] == 0.0
    assert retrieval["score"] >= amnesiac["score"] + 0.2
    record = next(r for r in retrieval["cases"] if r["id"] == "e47becba" and not r["control"])
    assert record["metric"] == "longmemeval_lexical" and record["question_id"] == "e47becba"
    assert record["expected"] == "Business Administration" and record["question_type"] == "single-session-user"
    assert record["sessions_per_step"] == 1 and len(record["steps"]) == 4
    # The lexical judge is called lexical wherever its figures are shown: the summary and the HTML page.
    html = pytester.path / "lme.html"
    assert main(["report", str(pytester.path / "report.json"), "--html", str(html)]) == 0
    assert "LEXICAL judge (not the benchmark&#39;s official LLM judge)" in html.read_text(encoding="utf-8")


@pytest.mark.slow
def test_retrieval_beats_the_amnesiac_on_locomo_in_every_answerable_category(pytester):
    imported(pytester)
    retrieval = run(pytester, "loc", RETRIEVAL, "--recall-control")
    amnesiac = run(pytester, "loc", AMNESIAC)
    remembered, control, forgot = by_category(retrieval), by_category(retrieval, True), by_category(amnesiac)
    assert set(forgot.values()) == {0.0}
    for category in ("multi-hop", "temporal", "open-domain", "single-hop"):
        assert remembered[category] > 0.05 and control[category] == 0.0, category
    record = next(r for r in retrieval["cases"] if r["id"] == "conv-26-q005" and not r["control"])
    assert record["metric"] == "locomo_f1" and record["locomo_category"] == 4 and record["expected"] == "mental health"
    assert 0 < record["score"] < 1 and record["outcome"] == "partial"
    # Each conversation's sessions ran once: 3 + 2 ingest steps, and one session per question.
    runs = [r for r in retrieval["cases"] if not r["control"]]
    assert sum(len(r["steps"]) for r in runs) == 3 + 2 + 12
    assert [len(r["steps"]) for r in runs if r["id"].startswith("conv-26")] == [4] + [1] * 7
    # The control asks every question with an empty memory: one session each, no ingest.
    assert all(len(r["steps"]) == 1 for r in retrieval["cases"] if r["control"])


def without_timing(document: Any) -> Any:
    if isinstance(document, dict):
        return {k: without_timing(v) for k, v in document.items() if "duration" not in k and "latency" not in k}
    if isinstance(document, list):
        return [without_timing(v) for v in document]
    return document


@pytest.mark.slow
def test_a_group_is_ingested_once_the_same_serially_under_xdist_and_concurrently(pytester):
    imported(pytester)
    reports = {}
    for mode in (("-n", "0"), ("-n", "2"), ("--recall-concurrency=4",), ("-n", "2", "--recall-concurrency=3")):
        report = run(pytester, "loc", RETRIEVAL, *mode)
        assert sum(len(r["steps"]) for r in report["cases"]) == 17, mode
        cases = sorted(report["cases"], key=lambda r: r["id"])
        keep = ("id", "score", "reported", "outcome", "category", "metric", "group")
        reports[mode] = (report["score"], report["by_category"], [{k: r.get(k) for k in keep} for r in cases])
    first = next(iter(reports.values()))
    for mode, seen in reports.items():
        assert seen == first, mode
