"""A judge command in a run (issue 30): verdicts in records, report, summary, HTML and JUnit; errors apart; a cache.

The stub judge here is a small program that answers by the agent's answer, so
every verdict, error and retry is known in advance. The run with the real
``llm`` CLI and ``recall-judge`` against the fake model's judge mode, on the
seed suite and on a shotgun agent, is ``tests/test_llm_judge_run.py``.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from conftest import RecallSuite
from pytest_recall.sessions import cgroup

STUB_JUDGE = """
import json, os, sys, time
request = json.load(sys.stdin)
calls = os.path.join(sys.argv[1], "calls.jsonl")
with open(calls, "a") as log:
    log.write(json.dumps(request) + "\\n")
answer = request["answer"]
json.dump({"tokens_in": 10, "tokens_out": 1, "cost_usd": 0.001}, open(os.environ["RECALL_COST_FILE"], "w"))
leaked = {"RECALL_SCOPE_DIR", "RECALL_STEP", "RECALL_SESSION_TOKEN"} & set(os.environ)
if leaked:
    print("the judge saw an agent's session: " + ", ".join(sorted(leaked)), file=sys.stderr); sys.exit(9)
if "slowly" in answer:
    time.sleep(30)
elif "babble" in answer:
    print("I think so, probably")
elif "crash" in answer:
    print("model overloaded", file=sys.stderr); sys.exit(3)
elif " not " in answer:
    print("no")
elif "flaky" in answer and sum(1 for line in open(calls) if "flaky" in line) < 2:
    sys.exit(1)
else:
    words = str(request["gold"]).lower().split()
    print(json.dumps({"score": 1 if all(w in answer.lower() for w in words) else 0, "reason": "stub"}))
"""
REMEMBER = "remember 12345.67\nsay noted"


def stub_judge(folder: Path) -> str:
    script = folder / "stub_judge.py"
    script.write_text(STUB_JUDGE, encoding="utf-8")
    return shlex.join([sys.executable, str(script), str(folder)])


def add_free(recall_suite: RecallSuite, case_id: str, answer_line: str, gold: str) -> None:
    folder = recall_suite.add(case_id, [REMEMBER, f"say {answer_line}"], answer=gold, kind="free")
    expected = json.loads((folder / "answer.json").read_text())
    (folder / "answer.json").write_text(json.dumps({**expected, "question": "What did the user decide?"}))


@pytest.mark.slow
def test_judge_errors_retries_the_cache_and_a_free_kind_in_one_run(recall_suite: RecallSuite) -> None:
    judge = stub_judge(recall_suite.pytester.path)
    recall_suite.add("case_01_agree", [REMEMBER, "recall"])
    recall_suite.add("case_02_babble", [REMEMBER, "say 12345.67 babble"])
    recall_suite.add("case_03_crash", [REMEMBER, "say 12345.67 crash"])
    recall_suite.add("case_04_flaky", [REMEMBER, "say 12345.67 flaky"])
    recall_suite.add("case_05_slow", [REMEMBER, "say 12345.67 slowly"])
    add_free(recall_suite, "case_06_free", "We chose Postgres over MySQL", "Postgres")
    add_free(recall_suite, "case_07_free_broken", "Postgres, crash", "Postgres")
    lme = recall_suite.add("case_08_lme", [REMEMBER, "say I did not move to Paris"], answer="Paris", kind="longmemeval")
    expected = {**json.loads((lme / "answer.json").read_text()), "question_type": "knowledge-update"}
    (lme / "answer.json").write_text(json.dumps({**expected, "question": "Where do I live now?"}))
    result = recall_suite.run(
        f"--recall-judge-cmd={judge}",
        "--recall-judge-both",
        "--recall-free-form-judge=llm",
        "--recall-judge-timeout=1",
        "--recall-retries=1",
        "--recall-retry-delay=0",
        "--recall-epochs=2",
        "--recall-concurrency=4",
        f"--junitxml={recall_suite.pytester.path / 'junit.xml'}",
        "-o",
        "junit_family=xunit1",
    )
    records = {(record["id"], record["epoch"]): record for record in recall_suite.report()["cases"]}
    verdicts = {key: record["llm_judge"] for key, record in records.items()}
    # Judge errors are the judge's, after its retry; the agent's verdict stands and no agent failed.
    for case, says in (("case_02_babble", "neither yes nor no"), ("case_03_crash", "exited 3: model overloaded")):
        assert says in verdicts[(case, 1)]["error"] and verdicts[(case, 1)]["attempts"] == 2
        assert records[(case, 1)]["score"] == 1.0 and records[(case, 1)]["outcome"] == "correct"
    assert "timed out after 1s" in verdicts[("case_05_slow", 1)]["error"]
    # A flaky judge is retried as an agent is, and its verdict then counts; the second epoch's is cached.
    # Whichever epoch's agent answered first asked the judge; the other was given that verdict.
    asked, given = sorted((verdicts[("case_04_flaky", epoch)] for epoch in (1, 2)), key=lambda v: v["cached"])
    assert asked | {"duration_s": 0} == {
        "score": 1.0,
        "passed": True,
        "reason": "stub",
        "error": None,
        "decides": False,
        "deterministic_score": 1.0,
        "cost_usd": 0.001,
        "tokens_in": 10,
        "tokens_out": 1,
        "attempts": 2,
        "cached": False,
        "duration_s": 0,
    }
    assert given["cached"] and given["cost_usd"] is None and given["score"] == 1.0
    # The free kind is scored by the judge; its judge error is an error of the case, never a 0 or an agent failure.
    assert records[("case_06_free", 1)]["score"] == 1.0 and verdicts[("case_06_free", 1)]["decides"]
    assert verdicts[("case_06_free", 1)]["deterministic_score"] is None
    broken = records[("case_07_free_broken", 1)]
    assert broken["score"] is None and broken["outcome"] == "error" and broken["error"].startswith("judge error:")
    result.stdout.fnmatch_lines(
        ["*2 cases ran but got no score: judge error: the judge exited 3*", "FAILED *case_07_free_broken*"]
    )
    # --recall-free-form-judge=llm: the judge's no is the LongMemEval case's score; the lexical yes stays beside it.
    lme = records[("case_08_lme", 1)]
    assert lme["score"] == 0.0 and lme["llm_judge"]["deterministic_score"] == 1.0 and lme["llm_judge"]["decides"]
    assert lme["reason"] == "the judge command said no" and lme["outcome"] == "wrong"
    # Same question, gold and answer: asked once (a judge error is asked again); no request leaked the session.
    asked = [json.loads(line) for line in (recall_suite.pytester.path / "calls.jsonl").read_text().splitlines()]
    assert sum(1 for request in asked if request["answer"] == "12345.67") == 1
    assert sum(1 for request in asked if "flaky" in request["answer"]) == 2
    assert sum(1 for request in asked if "crash" in request["answer"]) == 8
    section = recall_suite.report()["llm_judge"]
    assert section["n_judged"] == 16 and section["n_errors"] == 8 and section["n_decided"] == 6
    assert section["agreement"]["n"] == 6 and section["agreement"]["agreed"] == 4
    result.stdout.fnmatch_lines(
        [
            "*LongMemEval, scored by the judge command (--recall-judge-cmd;*",
            "*LLM judge: 16 answers judged (4 cached), 8 judge errors (not agent failures)*",
            "*and the built-in judge agree on 4/6 answers (0.667)*",
            "*longmemeval 0/2 answers (0.000), kappa 0.000; money 4/4 answers (1.000)*",
            "*disagree: suite/case_08_lme (longmemeval): built-in judge pass, LLM judge fail",
        ]
    )
    assert "agent failures" not in result.stdout.str().replace("(not agent failures)", "")
    junit = (recall_suite.pytester.path / "junit.xml").read_text()
    assert 'name="recall_llm_judge_score" value="1.0"' in junit
    assert 'name="recall_llm_judge_agreement" value="0.6667"' in junit


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        ((), "*case suite/case_01_free has answer_kind 'free'*--recall-judge-cmd=*"),
        (("--recall-judge-both",), "*--recall-judge-both needs a judge: add --recall-judge-cmd=*"),
    ],
)
def test_a_free_case_or_a_judge_flag_without_a_judge_command_is_one_usage_line(
    recall_suite: RecallSuite, flags: tuple[str, ...], says: str
) -> None:
    add_free(recall_suite, "case_01_free", "We chose Postgres", "Postgres")
    result = recall_suite.run(*flags)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([says])
    assert "Traceback" not in result.stderr.str()


def test_a_judge_command_not_installed_is_one_usage_line_that_names_the_judge(recall_suite: RecallSuite) -> None:
    add_free(recall_suite, "case_01_free", "We chose Postgres", "Postgres")
    result = recall_suite.run("--recall-judge-cmd=no-such-judge-4b1e -m fake")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --recall-judge-cmd: 'no-such-judge-4b1e' was not found on PATH; install the judge command or give *"]
    )
    assert len([line for line in result.stderr.lines if line.strip()]) == 1
    assert "agent" not in result.stderr.str()


CGROUP_JUDGE = """
import json, sys
request = json.load(sys.stdin)
own = open("/proc/self/cgroup").read().strip().splitlines()[-1].split("::", 1)[-1]
with open(sys.argv[1], "a") as log:
    log.write(own + "\\n")
print("yes")
"""


@pytest.mark.slow
@pytest.mark.skipif(not cgroup.available(), reason="no writable cgroup v2 here: sessions get no cgroup of their own")
def test_a_judge_started_while_sessions_start_is_never_born_in_an_agents_cgroup(recall_suite: RecallSuite) -> None:
    """The harness steps into a session's cgroup to start its agent; a judge started then would be born there.

    It would then count as that agent's leftover and be killed with it. A judge has a cgroup of its own kind. 200 cases
    at 32 at once start judges and sessions side by side: before judges waited for
    the harness to be home, about 2 in 100 landed in a slot (6 of 300 in one run).
    """
    log = recall_suite.pytester.path / "judge-cgroups.txt"
    script = recall_suite.pytester.path / "cgroup_judge.py"
    script.write_text(CGROUP_JUDGE, encoding="utf-8")
    for number in range(200):
        # Each a different gold, so that no verdict comes from the cache.
        recall_suite.add(f"case_{number:03d}", [REMEMBER, "say 12345.67"], answer=f"gold {number}", kind="free")
    result = recall_suite.run(
        f"--recall-judge-cmd={shlex.join([sys.executable, str(script), str(log)])}",
        "--recall-free-form-judge=llm",
        "--recall-concurrency=32",
        command=recall_suite.agent("scripted"),
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    homes = log.read_text(encoding="utf-8").splitlines()
    assert len(homes) == 200
    # Each judge is born in a judge's cgroup of its own, never in an agent session's slot.
    assert [home for home in homes if "/judge-" not in home] == []


# Fickle on "maybe" (pass, fail, pass, ... by how often it was asked), steady on anything else.
# Samples are asked at once: the log is locked, so each asking counts the ones before it exactly.
SAMPLED_JUDGE = """
import fcntl, json, os, sys
request = json.load(sys.stdin)
with open(os.path.join(sys.argv[1], "sampled.log"), "a+") as log:
    fcntl.flock(log, fcntl.LOCK_EX)
    log.write(request["answer"].strip() + "\\n")
    log.flush()
    log.seek(0)
    asked = sum(1 for line in log if line.strip() == request["answer"].strip())
print("yes" if "maybe" not in request["answer"] or asked % 2 else "no")
"""


def test_judge_samples_in_a_run_take_the_majority_and_give_the_flip_rate(recall_suite: RecallSuite) -> None:
    """Three samples per answer: the fickle answer gets pass, fail, pass (majority pass, flipped), the steady
    one pass three times; the records keep each sample and the judges table, with one judge, its flip rate."""
    script = recall_suite.pytester.path / "sampled_judge.py"
    script.write_text(SAMPLED_JUDGE, encoding="utf-8")
    judge = shlex.join([sys.executable, str(script), str(recall_suite.pytester.path)])
    add_free(recall_suite, "fickle", "Postgres maybe", "Postgres")
    add_free(recall_suite, "steady", "Postgres", "Postgres")

    result = recall_suite.run(f"--recall-judge-cmd={judge}", "--recall-judge-samples=3")

    result.assert_outcomes(passed=2)
    report = recall_suite.report()
    verdicts = {record["id"]: record["llm_judge"] for record in report["cases"]}
    sampled = {case: (v["score"], sorted(v["samples"]), v["flipped"], v["attempts"]) for case, v in verdicts.items()}
    assert sampled == {
        "fickle": (1.0, [0.0, 1.0, 1.0], True, 3),
        "steady": (1.0, [1.0, 1.0, 1.0], False, 3),
    }
    assert verdicts["fickle"]["reason"] == "majority of 3 samples: 2 pass, 1 fail"
    consistency = report["judges"]["table"]["self_consistency"]
    assert consistency == {"judge1": {"n": 2, "flipped": 1, "flip_rate": 0.5}}
    result.stdout.fnmatch_lines(["*judge1 against itself: 1 of 2 answers flip between samples, flip rate 0.50"])
    assert report["run_mode"]["llm_judge"]["samples"] == 3


def test_judge_samples_without_a_judge_are_refused_in_one_line(recall_suite: RecallSuite) -> None:
    recall_suite.add("alpha", [REMEMBER, "recall"])
    result = recall_suite.run("--recall-judge-samples=3")
    result.stderr.fnmatch_lines(["ERROR: --recall-judge-samples asks a judge command several times: add *"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
