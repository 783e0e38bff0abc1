"""``pytest-recall rejudge`` (issue 56): a run's kept answers put to a strict and a lenient judge, no agent started.

The judges here are small programs whose verdicts are known in advance, and
each logs every request it reads, so a test can hold the requests ``rejudge``
sends to those of the run itself. The agent is counted at each start.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import AGENTS_DIR, RecallSuite

CLI = (sys.executable, "-m", "pytest_recall.cli")
JUDGE = """
import json, os, sys
request = json.load(sys.stdin)
with open(sys.argv[2], "a") as log:
    log.write(json.dumps(request, sort_keys=True) + "\\n")
answer, gold = request["answer"].lower(), str(request["gold"]).lower()
declines = "don't know" in answer
strict = gold in answer and " or " not in answer
json.dump({"tokens_in": 7, "tokens_out": 1, "cost_usd": 0.002}, open(os.environ["RECALL_COST_FILE"], "w"))
print(json.dumps({"score": int(not declines if sys.argv[1] == "lenient" else strict), "reason": sys.argv[1]}))
"""
COUNTING_AGENT = """
import runpy, sys
with open({counter!r}, "a") as counter:
    counter.write("start\\n")
sys.argv[0] = {agent!r}
runpy.run_path({agent!r}, run_name="__main__")
"""
REMEMBER = "remember Postgres\nsay noted"


def judge(folder: Path, mode: str) -> str:
    script = folder / "judge.py"
    script.write_text(JUDGE, encoding="utf-8")
    return shlex.join([sys.executable, str(script), mode, str(folder / f"{mode}.jsonl")])


def counting_agent(folder: Path) -> tuple[str, Path]:
    counter = folder / "agent-starts.txt"
    script = folder / "counting_agent.py"
    script.write_text(COUNTING_AGENT.format(counter=str(counter), agent=str(AGENTS_DIR / "scripted.py")))
    return shlex.join([sys.executable, str(script)]), counter


def add_open(recall_suite: RecallSuite, case_id: str, answer_line: str, kind: str = "free") -> None:
    folder = recall_suite.add(case_id, [REMEMBER, f"say {answer_line}"], answer="Postgres", kind=kind)
    expected = json.loads((folder / "answer.json").read_text())
    (folder / "answer.json").write_text(json.dumps({**expected, "question": "Which database did we choose?"}))


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def judged_run(recall_suite: RecallSuite) -> tuple[RecallSuite, Path]:
    """A run judged by the strict judge: three free answers, one LongMemEval answer, one money case no judge takes."""
    add_open(recall_suite, "case_01_right", "We chose Postgres")
    add_open(recall_suite, "case_02_hedge", "Postgres or MySQL")
    add_open(recall_suite, "case_03_declines", "I don't know")
    add_open(recall_suite, "case_04_lme", "Postgres", kind="longmemeval")
    recall_suite.add("case_05_money", ["remember 12345.67\nsay noted", "recall"])
    command, counter = counting_agent(recall_suite.pytester.path)
    strict = judge(recall_suite.pytester.path, "strict")
    result = recall_suite.run(f"--recall-judge-cmd={strict}", "--recall-concurrency=4", command=command)
    result.assert_outcomes(passed=3, failed=2)
    assert len(counter.read_text().splitlines()) == 10
    return recall_suite, counter


@pytest.mark.slow
def test_rejudge_puts_kept_answers_to_two_judges_without_any_agent(judged_run: tuple[RecallSuite, Path]) -> None:
    recall_suite, counter = judged_run
    folder = recall_suite.pytester.path
    records = recall_suite.records()
    assert "judge_request" not in records["case_05_money"]
    assert records["case_02_hedge"]["judge_request"]["answer"] == "Postgres or MySQL"
    run_requests = sorted((folder / "strict.jsonl").read_text().splitlines())
    (folder / "strict.jsonl").unlink()
    out = folder / "rejudged.json"

    done = cli("rejudge", recall_suite.report_path, f"--judge-cmd=strict={judge(folder, 'strict')}",
               f"--judge-cmd=lenient={judge(folder, 'lenient')}", "-o", out)  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert len(counter.read_text().splitlines()) == 10, "rejudge started an agent"
    # The same judge is asked exactly what the run asked it, and says the same.
    assert sorted((folder / "strict.jsonl").read_text().splitlines()) == run_requests
    rejudged = json.loads(out.read_text())
    by_case = {case["case"]: case for case in rejudged["cases"]}
    for case_id in ("case_01_right", "case_02_hedge", "case_03_declines", "case_04_lme"):
        assert by_case[f"suite/{case_id}"]["verdicts"]["strict"]["score"] == records[case_id]["llm_judge"]["score"]
    table = rejudged["table"]
    assert table["judges"]["strict"]["score"] == 0.5 and table["judges"]["lenient"]["score"] == 0.75
    assert table["judges"]["strict"]["interval"][0] < 0.5 < table["judges"]["strict"]["interval"][1]
    assert table["spread"] == 0.25 and table["pairs"][0]["kappa"] == 0.5
    assert [flip["case"] for flip in table["flips"]] == ["suite/case_02_hedge"]
    # The built-in judge's score of the one case it judges (LongMemEval) stands beside them.
    assert table["deterministic"]["n"] == 1 and by_case["suite/case_04_lme"]["deterministic"] == 1.0
    assert rejudged["judge_cost"]["lenient"] == {"calls": 4, "cost_usd": 0.008, "tokens_in": 28, "tokens_out": 4}
    assert rejudged["not_kept"] == ["suite/case_05_money"]
    assert "spread (highest score - lowest): 0.25" in done.stdout
    assert "strict vs lenient: agree 0.75 on 4, Cohen's kappa 0.50" in done.stdout
    assert "suite/case_02_hedge: strict fail, lenient pass" in done.stdout
    assert "1 of 5 cases kept no answer to judge and cannot be re-judged" in done.stdout

    # A merged report keeps the answers, and re-judges the same.
    merged = folder / "merged.json"
    assert cli("merge", recall_suite.report_path, "-o", merged).returncode in (0, 1)
    again = cli("rejudge", merged, f"--judge-cmd={judge(folder, 'lenient')}", f"--judge-cmd={judge(folder, 'strict')}")
    assert again.returncode == 0, again.stderr
    assert "judge1 vs judge2: agree 0.75 on 4, Cohen's kappa 0.50" in again.stdout


@pytest.mark.slow
def test_a_report_from_before_kept_answers_says_which_cases_cannot_be_rejudged(
    judged_run: tuple[RecallSuite, Path],
) -> None:
    recall_suite, counter = judged_run
    report = json.loads(recall_suite.report_path.read_text())
    for record in report["cases"]:
        record.pop("judge_request", None)
    old = recall_suite.pytester.path / "old.json"
    old.write_text(json.dumps(report))
    assert cli("compare", old, recall_suite.report_path).returncode == 0

    done = cli("rejudge", old, f"--judge-cmd={judge(recall_suite.pytester.path, 'strict')}")

    assert done.returncode == 2
    assert done.stderr.startswith("pytest-recall rejudge: 5 of 5 cases kept no answer to judge and cannot be re-judged")
    assert "suite/case_01_right" in done.stderr and len(done.stderr.splitlines()) == 1
    assert len(counter.read_text().splitlines()) == 10
