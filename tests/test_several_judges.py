"""Several judges in one run (issue 56): ``--recall-judge-cmd`` given more than once, one of them scoring.

The judges are the strict and lenient scripts of tests/test_rejudge.py,
whose verdicts are known in advance and which log every request they read;
the agent is counted at each start. The run's judges table must be the very
one ``pytest-recall rejudge`` prints for the same report and judges.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_rejudge import add_open, cli, counting_agent, judge

from conftest import RecallSuite


@pytest.fixture
def four_answers(recall_suite: RecallSuite) -> RecallSuite:
    """Three free answers (right, a hedge, a decline), one LongMemEval answer, one money case no judge takes."""
    add_open(recall_suite, "case_01_right", "We chose Postgres")
    add_open(recall_suite, "case_02_hedge", "Postgres or MySQL")
    add_open(recall_suite, "case_03_declines", "I don't know")
    add_open(recall_suite, "case_04_lme", "Postgres", kind="longmemeval")
    recall_suite.add("case_05_money", ["remember 12345.67\nsay noted", "recall"])
    return recall_suite


@pytest.mark.slow
def test_two_judges_in_one_run_the_named_one_scores_and_the_table_is_rejudges(four_answers: RecallSuite) -> None:
    folder = four_answers.pytester.path
    command, counter = counting_agent(folder)
    strict, lenient = judge(folder, "strict"), judge(folder, "lenient")
    html, junit = folder / "report.html", folder / "junit.xml"
    result = four_answers.run(
        f"--recall-judge-cmd=strict={strict}",
        f"--recall-judge-cmd=lenient={lenient}",
        "--recall-judge-score=lenient",
        "--recall-concurrency=4",
        f"--recall-html={html}",
        f"--junitxml={junit}",
        command=command,
    )

    # The lenient judge scores: the hedge passes, which the strict judge alone would fail.
    result.assert_outcomes(passed=4, failed=1)
    assert len(counter.read_text().splitlines()) == 10, "a second judge ran an agent again"
    for mode in ("strict", "lenient"):
        assert len((folder / f"{mode}.jsonl").read_text().splitlines()) == 4, mode
    records = four_answers.records()
    hedge = records["case_02_hedge"]
    assert hedge["score"] == 1.0 and hedge["llm_judge"]["score"] == 1 and hedge["llm_judge"]["decides"]
    assert hedge["llm_judges"]["strict"]["score"] == 0 and hedge["llm_judges"]["strict"]["reason"] == "strict"
    assert "llm_judges" not in records["case_05_money"]
    report = four_answers.report()
    block = report["judges"]
    assert block["score_by"] == "lenient" and list(block["table"]["judges"]) == ["strict", "lenient"]
    assert block["table"]["spread"] == 0.25 and block["table"]["pairs"][0]["kappa"] == 0.5
    assert [flip["case"] for flip in block["table"]["flips"]] == ["suite/case_02_hedge"]
    listed = report["protocol"]["judges"]["llm_judge"]
    assert [entry["name"] for entry in listed["judges"]] == ["strict", "lenient"] and listed["score_by"] == "lenient"
    assert listed["command"] == lenient and listed["judges"][0]["command"] == strict
    assert all(len(entry["files_sha256"]) for entry in listed["judges"])
    result.stdout.fnmatch_lines(
        [
            "*2 judges, score by judge lenient:",
            "*strict vs lenient: agree 0.75 on 4, Cohen's kappa 0.50",
            "*spread (highest score - lowest): 0.25",
            "*suite/case_02_hedge: strict fail, lenient pass",
        ]
    )
    page = html.read_text(encoding="utf-8")
    assert "<h2>Judges</h2>" in page and "Score by judge lenient" in page and "Flips between judges (1)" in page
    properties = junit.read_text(encoding="utf-8")
    assert 'name="recall_judges_score_by" value="lenient"' in properties
    assert 'name="recall_judge_strict_score" value="0.5"' in properties
    assert 'name="recall_judges_n_flips" value="1"' in properties

    # The same two judges re-judging the stored answers give the very same table.
    out = folder / "rejudged.json"
    done = cli("rejudge", four_answers.report_path, f"--judge-cmd=strict={strict}", f"--judge-cmd=lenient={lenient}",
               "-o", out)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["table"] == block["table"]
    assert len(counter.read_text().splitlines()) == 10

    # Merged, the records keep every judge and the block is the same.
    merged = folder / "merged.json"
    assert cli("merge", four_answers.report_path, "-o", merged, "--gate", "score").returncode in (0, 1)
    assert json.loads(merged.read_text())["judges"] == block


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--recall-judge-cmd=a=python j.py", "--recall-judge-cmd=a=python k.py"], "two judges share a name (a, a)"),
        (["--recall-judge-cmd=strict=python j.py", "--recall-judge-cmd=lenient="], "'lenient=' names no command"),
        (["--recall-judge-cmd=strict=python j.py", "--recall-judge-score=nobody"], "--recall-judge-score=nobody"),
        (["--recall-judge-score=strict"], "--recall-judge-score=strict names no judge"),
    ],
)
def test_a_bad_judge_is_one_usage_line_before_any_agent_runs(
    four_answers: RecallSuite, flags: list[str], said: str
) -> None:
    command, counter = counting_agent(four_answers.pytester.path)
    result = four_answers.run(*flags, command=command)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1 and said in errors[0], errors
    assert not counter.exists()


@pytest.mark.slow
def test_the_ini_twin_takes_one_judge_per_line_and_xdist_workers_judge_with_all(four_answers: RecallSuite) -> None:
    folder = four_answers.pytester.path
    strict, lenient = judge(folder, "strict"), judge(folder, "lenient")
    four_answers.pytester.makeini(f"[pytest]\nrecall_judge_cmd =\n    strict={strict}\n    lenient={lenient}\n")
    result = four_answers.run("--recall-judge-score=strict", "-n", "2")
    result.assert_outcomes(passed=3, failed=2)
    record = four_answers.records()["case_02_hedge"]
    assert record["llm_judge"]["score"] == 0 and record["llm_judges"] == {
        "lenient": {**record["llm_judges"]["lenient"], "score": 1}
    }
    assert four_answers.report()["judges"]["table"]["spread"] == 0.25
    assert Path(folder / "lenient.jsonl").read_text().count("\n") == 4
