"""BEAM and MemoryAgentBench suites through the harness: a real agent process, case groups, and their metrics."""

from __future__ import annotations

import json
import shlex
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_recall.cli import main

DATA = Path(__file__).resolve().parent / "data"
RETRIEVAL = shlex.join([sys.executable, "-m", "pytest_recall.agents.retrieval"])
AMNESIAC = shlex.join([sys.executable, "-m", "pytest_recall.agents.amnesiac"])


def run(pytester: pytest.Pytester, suite: str, command: str, *options: str) -> dict[str, Any]:
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        suite, f"--recall-cmd={command}", f"--recall-report={report}", *options, timeout=300
    )
    assert result.ret in (0, 1), result.stdout.str()[-2000:]  # 1: a case failed, which a baseline may
    loaded: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    schema = resources.files("pytest_recall.reporting").joinpath("report.schema.json").read_text(encoding="utf-8")
    jsonschema.validate(loaded, json.loads(schema))  # the new metrics are the published schema's
    return loaded


def by_category(report: dict[str, Any]) -> dict[str, float]:
    scores: dict[str, list[float]] = {}
    for record in report["cases"]:
        if not record["control"]:
            scores.setdefault(record["category"], []).append(record["score"])
    return {category: sum(values) / len(values) for category, values in scores.items()}


def same_but_the_agent(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Two runs of one import by two agents: their protocol blocks differ in the agent's command only."""
    one, other = (dict(report["protocol"]) for report in (first, second))
    return one.pop("agent") != other.pop("agent") and one == other


@pytest.mark.slow
def test_beam_retrieval_and_the_amnesiac_differ_by_ability_and_the_chat_is_ingested_once(pytester):
    options = ["--ability", "information_extraction", "--ability", "knowledge_update", "--ability", "abstention"]
    out = pytester.path / "beam"
    assert main(["import", "beam", str(DATA / "beam_tiny" / "100K"), "--out", str(out), *options]) == 0
    retrieval, amnesiac = run(pytester, "beam", RETRIEVAL), run(pytester, "beam", AMNESIAC)
    remembered, forgot = by_category(retrieval), by_category(amnesiac)
    assert remembered["information_extraction"] == 1.0 and forgot["information_extraction"] == 0.0
    assert remembered["knowledge_update"] > forgot["knowledge_update"] == 0.0
    # The amnesiac declines everything, which is right only where the conversation never said it.
    assert forgot["abstention"] == 1.0 and remembered["abstention"] == 0.0
    record = next(r for r in retrieval["cases"] if r["id"] == "100K-1-information_extraction-1")
    assert record["metric"] == "beam_rubric_lexical" and record["sample_id"] == "100K-1"
    assert record["question_id"] == "100K-1-information_extraction-1"
    # One ingest step for the group, run once, and one session per question.
    assert sum(len(r["steps"]) for r in retrieval["cases"]) == 1 + 3
    # The protocol names the metric the verdicts carry, says what it computes, and which abilities only a judge scores.
    scoring = retrieval["protocol"]["scoring"]["benchmarks"]["beam"]
    assert scoring["metric"] == record["metric"] and "tau-b" in scoring["definition"]
    assert scoring["judge_only"] == ["instruction_following", "preference_following"]
    assert same_but_the_agent(retrieval, amnesiac)


@pytest.mark.slow
def test_memoryagentbench_retrieval_scores_by_substring_match_and_the_amnesiac_does_not(pytester):
    out = pytester.path / "mab"
    assert main(["import", "memoryagentbench", str(DATA / "memoryagentbench_tiny.jsonl"), "--out", str(out)]) == 0
    retrieval, amnesiac = run(pytester, "mab", RETRIEVAL), run(pytester, "mab", AMNESIAC)
    remembered, forgot = by_category(retrieval), by_category(amnesiac)
    assert set(forgot.values()) == {0.0}
    assert remembered["Accurate_Retrieval"] == 1.0 > forgot["Accurate_Retrieval"]
    # A keyword memory finds the first of two facts about Zorbia's capital: the one the later fact overrode.
    assert remembered["Conflict_Resolution"] == 0.5
    record = next(r for r in retrieval["cases"] if r["id"] == "ruler_qa1_0_q0")
    assert record["metric"] == "mab_substring_exact_match" and record["score"] == 1.0
    assert record["sample_id"] == "ruler_qa1_197K-0000" and record["question_id"] == "ruler_qa1_0_q0"
    assert sum(len(r["steps"]) for r in retrieval["cases"]) == 2 + 4
    # The protocol holds the tables the verdicts were reached by: each sub-dataset's metric and competency.
    scoring = retrieval["protocol"]["scoring"]["benchmarks"]["memoryagentbench"]
    assert f"mab_{scoring['metric_by_source']['ruler_qa']}" == record["metric"]
    assert scoring["category_map"]["ruler_"] == record["category"] and "substring" in scoring["definition"]
    assert same_but_the_agent(retrieval, amnesiac)


JUDGE = "import json, sys; json.load(sys.stdin); print(json.dumps({'score': 1, 'reason': 'the rubric is met'}))"
SUMMARY_ROW = {
    "context": "Chapter 1. Mara Quell sails from Kesh to Varn Island.\nChapter 2. She rebuilds the lighthouse there.",
    "questions": ["Summarise the book."],
    "answers": [["Mara Quell sails to Varn Island and rebuilds its lighthouse."]],
    "metadata": {"source": "infbench_sum_eng_shots2"},
}


@pytest.mark.slow
def test_questions_only_a_judge_can_score_refuse_a_run_without_one_in_one_line_and_the_judge_scores_them(pytester):
    beam = ["--ability", "instruction_following", "--ability", "information_extraction"]
    assert main(["import", "beam", str(DATA / "beam_tiny" / "100K"), "--out", str(pytester.path / "beam"), *beam]) == 0
    rows = pytester.path / "Long_Range_Understanding.jsonl"
    rows.write_text(json.dumps(SUMMARY_ROW) + "\n", encoding="utf-8")
    assert main(["import", "memoryagentbench", str(rows), "--out", str(pytester.path / "mab")]) == 0

    report = pytester.path / "refused.json"
    refused = pytester.runpytest_subprocess("beam", "mab", f"--recall-cmd={RETRIEVAL}", f"--recall-report={report}")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [text for text in refused.stderr.lines if text.strip()]
    assert line.startswith("ERROR: 2 imported question(s) only a judge command can score (")
    assert "beam/100K-1-instruction_following-1" in line and "mab/" in line
    assert "--recall-judge-cmd=" in line and "-k 'not infbench_sum_eng_shots2 and not instruction_following'" in line
    assert not report.exists()  # refused before any agent session was spent

    # Left out as the line says, the rest runs; given a judge, its word is their score.
    left_out = run(pytester, "beam", RETRIEVAL, "-k", "not instruction_following")
    assert [r["category"] for r in left_out["cases"]] == ["information_extraction"]
    judge = f"--recall-judge-cmd={shlex.join([sys.executable, '-c', JUDGE])}"
    for suite, category in (("beam", "instruction_following"), ("mab", "Long_Range_Understanding")):
        judged = run(pytester, suite, RETRIEVAL, judge)
        record = next(r for r in judged["cases"] if r["category"] == category)
        assert record["score"] == 1.0 and record["error"] is None, record
