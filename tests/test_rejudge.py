"""``pytest-recall rejudge`` (issue 56): a run's kept answers put to a strict and a lenient judge, no agent started.

The judges of the first tests are small programs whose verdicts are known in
advance, and each logs every request it reads, so a test can hold the
requests ``rejudge`` sends to those of the run itself; the agent is counted at
each start. The last test is the recipe of docs/llm-judge.md: an imported
LoCoMo suite judged through the real ``llm`` and ``recall-judge`` by the fake
model, strict, then re-judged by it strict and lenient.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cli_wiring import llm_wiring, real_cli

from conftest import AGENTS_DIR, RecallSuite
from pytest_recall.agents.adapters.llm import ADAPTER
from pytest_recall.cli import main
from pytest_recall.scoring.judge_panel import PanelCase, fleiss_kappa, panel_table
from pytest_recall.testing import FakeModelServer

DATA = Path(__file__).resolve().parent / "data"
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
# An agent whose LoCoMo answers are fixed, so the judges' verdicts are: right, a shotgun, a vague one, a decline.
LOCOMO_AGENT = """
import os, sys
from pathlib import Path
prompt = sys.argv[-1] if len(sys.argv) > 1 else Path(os.environ["RECALL_PROMPT_FILE"]).read_text()
answers = {
    "When did Caroline go to the LGBTQ": "She went on 7 May 2023.",
    "What did Caroline research?": "Adoption agencies.",
    "raise awareness for?": "It was for mental health.",
    "In what year did Melanie go camping": "2021 or 2022, maybe 2023.",
    "What business did Jon start?": "Something to do with his hobbies, I believe.",
    "When did Jon find a location": "On 29 January, 2023.",
}
asked = [question for question in QUESTIONS if question in prompt]
said = [answer for question, answer in answers.items() if asked and question in asked[0]]
print(said[0] if said else "Not mentioned in my memory (UNKNOWN)" if asked else "OK")
"""


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
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=600, check=False)


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


def fake_judge(folder: Path, server: FakeModelServer) -> str:
    """``recall-judge`` through ``llm`` to this fake model, its llm folder named in its own command."""
    for file_name, text in llm_wiring(server.base_url).home_files.items():
        (folder / Path(file_name).name).parent.mkdir(parents=True, exist_ok=True)
        (folder / Path(file_name).name).write_text(text, encoding="utf-8")
    recall_judge = Path(sys.executable).with_name("recall-judge")
    return shlex.join(["env", f"LLM_USER_PATH={folder}", "OPENAI_API_KEY=sk-fake", str(recall_judge), "-m", "fake"])


@pytest.mark.real_cli
def test_a_locomo_run_rejudged_by_the_strict_and_the_lenient_fake_judge(pytester: pytest.Pytester) -> None:
    real_cli(ADAPTER)
    assert main(["import", "locomo", str(DATA / "locomo_tiny.json"), "--out", str(pytester.path / "loc")]) == 0
    report, out = pytester.path / "report.json", pytester.path / "rejudged.json"
    questions = [
        qa["question"] for sample in json.loads((DATA / "locomo_tiny.json").read_text()) for qa in sample["qa"]
    ]
    agent = pytester.path / "locomo_agent.py"
    agent.write_text(f"QUESTIONS = {questions!r}\n{LOCOMO_AGENT}", encoding="utf-8")
    fixed = shlex.join([sys.executable, str(agent)])
    with FakeModelServer("memory") as strict_server, FakeModelServer("lenient") as lenient_server:
        strict = fake_judge(pytester.path / "llm-strict", strict_server)
        lenient = fake_judge(pytester.path / "llm-lenient", lenient_server)
        pytester.runpytest_subprocess(
            "loc",
            f"--recall-cmd={fixed}",
            f"--recall-report={report}",
            f"--recall-judge-cmd={strict}",
            "--recall-concurrency=4",
            timeout=600,
        )
        done = cli(
            "rejudge",
            report,
            f"--judge-cmd=strict={strict}",
            f"--judge-cmd=lenient={lenient}",
            "-o",
            out,
            "--workers=4",
        )
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    run = {f"{r['suite']}/{r['id']}": r for r in json.loads(report.read_text())["cases"]}
    rejudged = json.loads(out.read_text())
    for case in rejudged["cases"]:
        assert case["verdicts"]["strict"]["score"] == run[case["case"]]["llm_judge"]["score"], case["case"]
    table = rejudged["table"]
    strict_score, lenient_score = table["judges"]["strict"]["score"], table["judges"]["lenient"]["score"]
    assert lenient_score > strict_score and table["spread"] == round(lenient_score - strict_score, 4)
    assert table["flips"] and table["pairs"][0]["kappa"] is not None
    assert table["deterministic"]["n"] == table["judges"]["strict"]["n"] == len(run)


def test_three_judges_get_fleiss_kappa_and_a_judge_error_is_not_a_fail() -> None:
    # Worked by hand: 5 yes of 9, chance agreement 41/81, observed (1/3 + 1 + 1) / 3: kappa 0.55.
    assert fleiss_kappa([[True, True, False], [True, True, True], [False, False, False]]) == pytest.approx(0.55)
    assert fleiss_kappa([[True, True, True]]) is None
    cases = [
        PanelCase("s/a", "free", "c", None, {"x": 1.0, "y": 1.0, "z": 0.0}),
        PanelCase("s/b", "free", "c", None, {"x": 1.0, "y": 1.0, "z": 1.0}),
        PanelCase("s/c", "free", "c", None, {"x": 0.0, "y": 0.0, "z": 0.0}),
        PanelCase("s/d", "free", "c", None, {"x": None, "y": 1.0, "z": 0.0}),
    ]
    table = panel_table(cases, ["x", "y", "z"])
    assert table["fleiss_kappa"] == 0.55 and len(table["pairs"]) == 3
    assert table["judges"]["x"] == {"n": 3, "passed": 2, "errors": 1, "score": 0.6667, "interval": [0.2077, 0.9385]}
    assert [flip["case"] for flip in table["flips"]] == ["s/a", "s/d"]
    assert table["spread"] == round(0.75 - 0.25, 4) and table["deterministic"]["n"] == 0


HANGING_JUDGE = """
import os, sys, time
with open(sys.argv[1], "a") as pids:
    pids.write(f"{os.getpid()}\\n")
time.sleep(60)
"""


@pytest.mark.slow
def test_a_hanging_judge_is_killed_and_its_verdicts_are_judge_errors(judged_run: tuple[RecallSuite, Path]) -> None:
    recall_suite, _ = judged_run
    script, pids = recall_suite.pytester.path / "hang.py", recall_suite.pytester.path / "pids.txt"
    script.write_text(HANGING_JUDGE, encoding="utf-8")
    hanging = shlex.join([sys.executable, str(script), str(pids)])

    done = cli("rejudge", recall_suite.report_path, f"--judge-cmd=hangs={hanging}", "--timeout=1", "--workers=4")

    assert done.returncode == 0, done.stderr
    assert "  hangs                0       0       4      -" in done.stdout
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) == 4
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
