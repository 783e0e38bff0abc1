"""Trap-task directories: ``inputs/<id>/`` and ``expected/<id>/``, scored by the task's own judge and grader.

The first tests use a judge and a grader written here, which tell the test
what they were given. The last runs the seed task itself in that layout: its
``judge.py`` and ``grader.py`` are read from the shared seed file at test
time (never copied into this repository) and must agree with our judge and
grader on every case.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.reporting.spool import summary_of_row
from pytest_recall.scoring.grader import aggregate
from pytest_recall.sessions.task_scripts import TaskScriptError, run_task_script

REPO_DIR = Path(__file__).resolve().parents[1]
SEED_SUITE = REPO_DIR / "cases" / "session-memory-recall"
SHARED_DIR = Path(__file__).resolve().parents[2] / "shared"
SEED_FILE = SHARED_DIR / "seeds" / "000_8b707e82c5654338.txt"
JUDGE_MARK = "▸judge.py"
GRADER_MARK = "▸grader.py"
REMEMBER = "remember {answer}\nsay noted"

# A judge written for these tests: it leaves what it was given where the test can read it.
TEST_JUDGE = """\
import json, os
from pathlib import Path

manifest = json.loads(os.environ["TRAPTASK_MANIFEST"])
stdout = Path(manifest["run"]["stdout"]).read_text()
meta = json.loads(Path(manifest["run"]["meta"]).read_text())
expected = json.loads((Path(manifest["expected_dir"]) / "answer.json").read_text())
seen = {"manifest": manifest, "stdout": stdout, "meta": meta, "cwd": os.getcwd()}
Path(os.environ["RECALL_TEST_PROBE_DIR"], "judge-" + expected["id"] + ".json").write_text(json.dumps(seen))
said = stdout.strip().splitlines()[-1] if stdout.strip() else ""
score = 1.0 if meta["exit_code"] == 0 and said == expected["answer"] else 0.0
print("judging", expected["id"])
print(json.dumps({"score": score, "reason": "task judge read " + repr(said), "bug_category": expected["category"]}))
"""
# A grader written for these tests: it echoes what it was given, folded small.
TEST_GRADER = """\
import json, os

cases = json.loads(os.environ["TRAPTASK_MANIFEST"])
print(json.dumps({
    "ids": [c["id"] for c in cases],
    "scores": [c["metrics"]["score"] for c in cases],
    "bug_categories": [c["metrics"].get("bug_category") for c in cases],
    "costs": [c["cost"] for c in cases],
    "durations_known": all(isinstance(c["duration"], float) for c in cases),
}))
"""


def make_task(
    root: Path,
    cases: dict[str, list[str]],
    answers: dict[str, dict[str, Any]],
    *,
    judge: str | None = None,
    grader: str | None = None,
) -> Path:
    """A trap-task directory: prompts under inputs/<id>/, answers under expected/<id>/."""
    for case_id, steps in cases.items():
        folder = root / "inputs" / case_id
        folder.mkdir(parents=True)
        for number, prompt in enumerate(steps, start=1):
            (folder / f"step{number}.txt").write_text(prompt, encoding="utf-8")
        (folder / "README.md").write_text("Addressed to the solution author; never a prompt.\n", encoding="utf-8")
    for case_id, answer in answers.items():
        (root / "expected" / case_id).mkdir(parents=True)
        (root / "expected" / case_id / "answer.json").write_text(json.dumps(answer), encoding="utf-8")
    if judge is not None:
        (root / "judge.py").write_text(judge, encoding="utf-8")
    if grader is not None:
        (root / "grader.py").write_text(grader, encoding="utf-8")
    return root


def answer(case_id: str, value: str, kind: str = "phrase", category: str = "recall") -> dict[str, Any]:
    return {"id": case_id, "category": category, "answer": value, "answer_kind": kind}


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {record["id"]: record for record in report["cases"]}


def test_a_task_directory_collects_one_item_per_case_and_never_its_readmes(recall_suite):
    make_task(
        recall_suite.pytester.path / "task",
        {"case_a": ["say a", "say a"], "case_b": ["say b", "say b"]},
        {"case_a": answer("case_a", "a"), "case_b": answer("case_b", "b")},
        judge=TEST_JUDGE,
    )

    result = recall_suite.run("task", "--collect-only", "-q", report=False)

    result.stdout.fnmatch_lines(["task::case_a::recall", "task::case_b::recall", "2 tests collected*"])
    assert result.ret == 0


def test_the_task_judge_scores_each_case_from_the_manifest_it_is_given(recall_suite):
    task = make_task(
        recall_suite.pytester.path / "task",
        {
            "case_right": [REMEMBER.format(answer="blue heron"), "recall"],
            "case_wrong": [REMEMBER.format(answer="grey heron"), "recall"],
        },
        {"case_right": answer("case_right", "blue heron"), "case_wrong": answer("case_wrong", "blue heron")},
        judge=TEST_JUDGE,
    )

    result = recall_suite.run("task")

    result.assert_outcomes(passed=1, failed=1)
    records = by_id(recall_suite.report())
    assert records["case_right"]["score"] == 1.0
    assert records["case_right"]["reason"] == "task judge read 'blue heron'"
    assert records["case_wrong"]["score"] == 0.0
    assert records["case_wrong"]["reason"] == "task judge read 'grey heron'"
    result.stdout.fnmatch_lines(["*case_wrong scored 0.0: task judge read 'grey heron'*"])
    seen = json.loads((recall_suite.probe_dir / "judge-case_right.json").read_text())
    assert seen["cwd"] == str(task)
    assert seen["manifest"]["expected_dir"] == str(task / "expected" / "case_right")
    assert seen["stdout"].strip() == "blue heron"
    assert seen["meta"] == {"exit_code": 0}
    # The files the manifest named lived only while the judge ran.
    assert not Path(seen["manifest"]["run"]["stdout"]).exists()
    assert not Path(seen["manifest"]["run"]["meta"]).parent.exists()


@pytest.mark.parametrize("spread", [["--recall-concurrency=2"], ["-n", "2"]], ids=["concurrency", "xdist"])
def test_the_task_grader_runs_once_and_its_output_sits_in_the_report_beside_ours(recall_suite, spread):
    make_task(
        recall_suite.pytester.path / "task",
        {
            "case_a": [REMEMBER.format(answer="otter"), "recall\ncost 0.25"],
            "case_b": [REMEMBER.format(answer="stoat"), "recall"],
        },
        {"case_a": answer("case_a", "otter", category="mammal"), "case_b": answer("case_b", "weasel")},
        judge=TEST_JUDGE,
        grader=TEST_GRADER,
    )

    result = recall_suite.run("task", *spread)

    result.assert_outcomes(passed=1, failed=1)
    report = recall_suite.report()
    assert report["task_grader"] == {
        "task": {
            "ids": ["case_a", "case_b"],
            "scores": [1.0, 0.0],
            "bug_categories": ["mammal", "recall"],
            "costs": [{"cost_usd": 0.25}, {"cost_usd": None}],
            "durations_known": True,
        }
    }
    assert report["score"] == 0.5
    result.stdout.fnmatch_lines(["*task/grader.py: durations_known true*"])


def test_without_a_task_judge_our_judge_scores_and_the_grader_gets_our_verdicts(recall_suite):
    make_task(
        recall_suite.pytester.path / "task",
        {"case_a": [REMEMBER.format(answer="12,345.67"), "recall"]},
        {"case_a": answer("case_a", "12345.67", kind="money")},
        grader=TEST_GRADER,
    )

    result = recall_suite.run("task")

    result.assert_outcomes(passed=1)
    record = by_id(recall_suite.report())["case_a"]
    assert record["reason"] == "final line is the expected value"
    grader_output = recall_suite.report()["task_grader"]["task"]
    assert grader_output["scores"] == [1.0]


def test_the_agent_never_sees_the_trap_manifests(recall_suite, monkeypatch):
    monkeypatch.setenv("TRAPTASK_MANIFEST", '{"expected_dir": "the answers"}')
    monkeypatch.setenv("TRAP_MANIFEST", '{"expected_dir": "the answers"}')
    make_task(
        recall_suite.pytester.path / "task",
        {"case_a": [REMEMBER.format(answer="kestrel") + "\nprobe agent", "probe agent\nrecall"]},
        {"case_a": answer("case_a", "kestrel")},
        judge=TEST_JUDGE,
    )

    result = recall_suite.run("task")

    result.assert_outcomes(passed=1)
    for step in (1, 2):
        env = recall_suite.probe("agent", step)["env"]
        assert "TRAPTASK_MANIFEST" not in env
        assert "TRAP_MANIFEST" not in env


def test_a_step_that_failed_is_decided_before_the_task_judge_runs(recall_suite):
    make_task(
        recall_suite.pytester.path / "task",
        {"case_a": ["say starting\nexit 3", "recall"]},
        {"case_a": answer("case_a", "kestrel")},
        judge=TEST_JUDGE,
    )

    result = recall_suite.run("task")

    result.assert_outcomes(failed=1)
    assert by_id(recall_suite.report())["case_a"]["reason"] == "agent exited 3 in step 1"
    assert not (recall_suite.probe_dir / "judge-case_a.json").exists()


# An agent that cheats: it rewrites the task's expected answer and its judge before answering.
CHEAT_AGENT = """\
import sys
from pathlib import Path

task = Path(sys.argv[1])
(task / "expected" / "case_a" / "answer.json").write_text(
    '{"id": "case_a", "category": "recall", "answer": "anything", "answer_kind": "phrase"}'
)
(task / "judge.py").write_text('print(\\'{"score": 1.0, "reason": "rigged"}\\')\\n')
print("anything")
"""


def run_task_agent(recall_suite, source: str, *args: str):
    """One trap-task case answered wrong, judged by TEST_JUDGE, with ``source`` as the agent (given the task's
    folder and ``args``): what an agent does to the task's files on the way is what the tests look at."""
    task = make_task(
        recall_suite.pytester.path / "task",
        {"case_a": ["say noted", "say anything"]},
        {"case_a": answer("case_a", "kestrel")},
        judge=TEST_JUDGE,
    )
    agent = recall_suite.pytester.path / "task_agent.py"
    agent.write_text(source, encoding="utf-8")
    return recall_suite.run("task", command=shlex.join([sys.executable, str(agent), str(task), *args]), timeout=60)


def test_an_agent_that_rewrites_the_expected_answer_or_the_judge_scores_zero(recall_suite):
    result = run_task_agent(recall_suite, CHEAT_AGENT)

    result.assert_outcomes(failed=1)
    record = by_id(recall_suite.report())["case_a"]
    assert record["score"] == 0.0
    assert record["reason"] == ("case files changed on disk during the run: judge.py, expected/case_a/answer.json")


def test_a_task_judge_broken_on_any_answer_scores_nothing_and_says_the_task_is_to_blame(recall_suite):
    make_task(
        recall_suite.pytester.path / "task",
        {"case_a": [REMEMBER.format(answer="kestrel"), "recall"]},
        {"case_a": answer("case_a", "kestrel")},
        judge="raise SystemExit('the rubric is missing')\n",
    )

    result = recall_suite.run("task")

    result.assert_outcomes(failed=1)
    record = by_id(recall_suite.report())["case_a"]
    assert (record["score"], record["outcome"]) == (None, "error")
    why = (
        "task judge failed: judge.py exited 1: the rubric is missing; "
        "it fails on the expected answer too: the task's doing"
    )
    assert record["reason"] == why
    result.stdout.fnmatch_lines([f"*case_a scored None: {why}"])


# A judge that reads the answer as a number: a reply it cannot read crashes it, the expected one does not.
NUMBER_JUDGE = """import json, os
from pathlib import Path

manifest = json.loads(os.environ["TRAPTASK_MANIFEST"])
said = Path(manifest["run"]["stdout"]).read_text().strip().splitlines()[-1]
expected = json.loads((Path(manifest["expected_dir"]) / "answer.json").read_text())
print(json.dumps({"score": float(float(said) == float(expected["answer"]))}))
"""


def test_a_task_judge_the_agents_answer_crashes_scores_zero_as_the_agents_failure(recall_suite):
    """The judge gives a verdict on the expected answer, so what broke it is the answer: 0, agent_failed, in the
    score; a reply it reads is judged as ever."""
    make_task(
        recall_suite.pytester.path / "task",
        {"case_a": ["say noted", "say not a number"], "case_b": ["say noted", "say 42"]},
        {"case_a": answer("case_a", "42"), "case_b": answer("case_b", "42")},
        judge=NUMBER_JUDGE,
    )

    result = recall_suite.run("task")

    result.assert_outcomes(passed=1, failed=1)
    report = recall_suite.report()
    record = by_id(report)["case_a"]
    assert (record["score"], record["outcome"]) == (0.0, "agent_failed")
    assert record["reason"].startswith("task judge failed on this answer (judge.py exited 1: ValueError: ")
    assert record["reason"].endswith(") but judges the expected answer: the agent's doing, scored 0")
    assert (by_id(report)["case_b"]["score"], report["score"]) == (1.0, 0.5)


def test_a_case_missing_its_inputs_is_one_malformed_case_and_the_rest_run(recall_suite):
    task = make_task(
        recall_suite.pytester.path / "task",
        {"case_a": [REMEMBER.format(answer="kestrel"), "recall"]},
        {"case_a": answer("case_a", "kestrel"), "case_b": answer("case_b", "merlin")},
        judge=TEST_JUDGE,
    )

    result = recall_suite.run("task")

    result.assert_outcomes(passed=1, errors=1)
    missing = "inputs/case_b/ is missing; add its step files or remove"
    result.stdout.fnmatch_lines([f"*malformed case: task::case_b: {missing} {task}/expected/case_b"])


def test_without_a_task_judge_an_unknown_answer_kind_is_malformed(recall_suite):
    make_task(
        recall_suite.pytester.path / "task",
        {"case_a": [REMEMBER.format(answer="kestrel"), "recall"]},
        {"case_a": answer("case_a", "kestrel", kind="phrase")},
    )

    result = recall_suite.run("task")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*malformed case: task::case_a: answer.json: unknown answer_kind 'phrase'*"])


# -- the seed task in its own layout --------------------------------------------------------------

# A lookup agent: step 1 notes which case it is in, step 2 replies as the test planned for that case.
VARIANT_AGENT = """\
import hashlib, json, os, sys
from pathlib import Path

plan = json.loads(Path(sys.argv[1]).read_text())
prompt = sys.argv[-1]
memory = Path(os.environ["RECALL_SCOPE_DIR"], "case-key")
if os.environ["RECALL_STEP"] == "1":
    memory.write_text(hashlib.sha256(prompt.encode()).hexdigest())
    print("noted")
    sys.exit(0)
reply = plan[memory.read_text()]
sys.stdout.write(reply["stdout"])
sys.exit(reply["exit_code"])
"""


def seed_section(text: str, start_mark: str, end_mark: str | None) -> str:
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(start_mark))
    end = next((i for i, line in enumerate(lines) if end_mark and line.startswith(end_mark)), len(lines))
    return "".join(lines[start + 1 : end])


def replies(value: str, kind: str) -> list[tuple[dict[str, Any], float]]:
    """Ways to answer, each with the score both judges must give it."""
    if kind == "money":
        whole, cents = value.split(".")
        pretty = f"${int(whole):,}.{cents}"
        other = "1234.56"
    else:
        pretty, other = value, "AR-2026-0001"
    return [
        ({"stdout": f"{value}\n", "exit_code": 0}, 1.0),
        ({"stdout": f"The value is {pretty}.\n", "exit_code": 0}, 1.0),
        ({"stdout": f"{other}\n", "exit_code": 0}, 0.0),
        ({"stdout": "UNKNOWN\n", "exit_code": 0}, 0.0),
        ({"stdout": f"{value} or {other}\n", "exit_code": 0}, 0.0),
        ({"stdout": f"{pretty}\nHope that helps!\n", "exit_code": 0}, 1.0),
        ({"stdout": f"{value}\n", "exit_code": 3}, 0.0),
        ({"stdout": "", "exit_code": 0}, 0.0),
    ]


@pytest.mark.skipif(
    not SEED_FILE.is_file(), reason=f"seed file not found at {SEED_FILE}: place a copy of shared/ beside the clone"
)
def test_the_seed_tasks_own_judge_and_grader_agree_with_ours_on_the_seed_suite(recall_suite):
    seed_text = SEED_FILE.read_text(encoding="utf-8")
    root = recall_suite.pytester.path
    judged, native = root / "seed-judged", root / "seed-native"
    plan: dict[str, dict[str, Any]] = {}
    wanted: dict[str, float] = {}
    for index, folder in enumerate(sorted(path for path in SEED_SUITE.iterdir() if path.is_dir())):
        expected = json.loads((folder / "answer.json").read_text(encoding="utf-8"))
        reply, score = replies(expected["answer"], expected["answer_kind"])[index % 8]
        key = hashlib.sha256((folder / "step1.txt").read_text(encoding="utf-8").encode()).hexdigest()
        plan[key] = reply
        wanted[folder.name] = score
        for task in (judged, native):
            shutil.copytree(folder, task / "inputs" / folder.name, ignore=shutil.ignore_patterns("answer.json"))
            (task / "expected" / folder.name).mkdir(parents=True)
            shutil.copy(folder / "answer.json", task / "expected" / folder.name / "answer.json")
    assert len(wanted) == 8
    (judged / "judge.py").write_text(seed_section(seed_text, JUDGE_MARK, GRADER_MARK), encoding="utf-8")
    for task in (judged, native):
        (task / "grader.py").write_text(seed_section(seed_text, GRADER_MARK, None), encoding="utf-8")
    (root / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    (root / "variant_agent.py").write_text(VARIANT_AGENT, encoding="utf-8")
    command = shlex.join([sys.executable, str(root / "variant_agent.py"), str(root / "plan.json")])

    result = recall_suite.run("seed-judged", "seed-native", "--recall-concurrency=8", command=command)

    result.assert_outcomes(passed=6, failed=10)
    report = recall_suite.report()
    records = {(record["suite"], record["id"]): record for record in report["cases"]}
    for case_id, score in wanted.items():
        theirs, ours = records[("seed-judged", case_id)], records[("seed-native", case_id)]
        assert (theirs["score"], ours["score"]) == (score, score), (case_id, theirs["reason"], ours["reason"])
    for task in ("seed-judged", "seed-native"):
        graded = report["task_grader"][task]
        ours = aggregate([summary_of_row(row) for row in report["cases"] if row["suite"] == task], graded["threshold"])
        assert {key: ours[key] for key in graded} == graded, task


def test_a_grader_manifest_too_large_for_one_variable_is_a_one_line_error(tmp_path):
    (tmp_path / "grader.py").write_text("print('{}')\n")
    manifest = [{"id": f"case_{n:05d}", "metrics": {"score": 1.0, "reason": "x" * 100}} for n in range(2000)]

    with pytest.raises(TaskScriptError, match=r"^grader.py: the TRAPTASK_MANIFEST manifest \(\d+ bytes\) is too large"):
        run_task_script(tmp_path / "grader.py", manifest)
