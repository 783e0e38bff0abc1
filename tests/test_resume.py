"""The run log and resume: paid-for work survives a killed run and is not paid for twice.

The agent is ``tests/agents/resumable_agent.py``: it counts its calls in a
file, notes how many log lines existed at each call, and can block on one
case the way a stuck paid session does, so a run can be killed mid-suite.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from processes import start_killable_run, wait_for

from pytest_recall.plugin.runlog import ResumeIndex, RunLog, case_key, load_records
from pytest_recall.reporting.files import write_json_atomic
from pytest_recall.reporting.merge import report_of_rows
from pytest_recall.reporting.transcripts import prompt_reference
from pytest_recall.testing.synthetic import COMMAND, synthetic_record

BENCH = Path(__file__).resolve().parent.parent / "bench"
CASES = ("case_01", "case_02", "case_03", "case_04")


def add_cases(recall_suite: Any, names: tuple[str, ...] = CASES) -> None:
    for number, name in enumerate(names, start=1):
        value = f"{number}00{number}.0{number}"
        recall_suite.add(name, [f"REMEMBER {value} {name}", f"RECALL {name}"], answer=value)


def calls(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def called_cases(path: Path) -> list[str]:
    """The case of each agent call, in call order (a case shows once per step)."""
    return [re.search(r"case_\d+", call["prompt"]).group() for call in calls(path)]  # type: ignore[union-attr]


@pytest.fixture
def agent_env(recall_suite: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    paths = {"calls": recall_suite.pytester.path / "calls.jsonl", "log": recall_suite.pytester.path / "run.jsonl"}
    monkeypatch.setenv("RESUME_TEST_CALLS", str(paths["calls"]))
    monkeypatch.setenv("RESUME_TEST_LOG", str(paths["log"]))
    return paths


def test_each_case_is_on_disk_in_the_log_before_the_next_case_starts(recall_suite, agent_env):
    add_cases(recall_suite)

    result = recall_suite.run(f"--recall-log={agent_env['log']}", command=recall_suite.agent("resumable_agent"))

    result.assert_outcomes(passed=4)
    lines = agent_env["log"].read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == list(CASES)
    first_calls = [call for call in calls(agent_env["calls"]) if call["prompt"].startswith("REMEMBER")]
    assert [call["log_lines"] for call in first_calls] == [0, 1, 2, 3]
    # A log line is the case's report record, as is.
    assert [json.loads(line) for line in lines] == recall_suite.report()["cases"]


def test_workers_share_one_log_with_one_whole_line_per_case(recall_suite, agent_env):
    names = tuple(f"case_{n:02d}" for n in range(1, 9))
    add_cases(recall_suite, names)

    result = recall_suite.run(
        "-n", "3", f"--recall-log={agent_env['log']}", command=recall_suite.agent("resumable_agent")
    )

    result.assert_outcomes(passed=8)
    records = [json.loads(line) for line in agent_env["log"].read_text().splitlines()]
    assert sorted(record["id"] for record in records) == list(names)


def test_concurrent_appends_never_interleave(tmp_path):
    """Lines far larger than a pipe buffer, from several processes at once, stay whole."""
    log = tmp_path / "shared.jsonl"
    writer = (
        "import sys\n"
        "from pathlib import Path\n"
        "from pytest_recall.plugin.runlog import RunLog\n"
        "log = RunLog(Path(sys.argv[1]))\n"
        "for n in range(20):\n"
        "    log.append({'nodeid': f'{sys.argv[2]}-{n}', 'stdout': sys.argv[2] * 300_000})\n"
        "log.close()\n"
    )
    writers = [subprocess.Popen([sys.executable, "-c", writer, str(log), letter]) for letter in "abcd"]
    assert [process.wait(timeout=60) for process in writers] == [0, 0, 0, 0]

    lines = log.read_bytes().splitlines()
    assert len(lines) == 80
    records = [json.loads(line) for line in lines]
    assert all(record["stdout"] == record["nodeid"][0] * 300_000 for record in records)


def test_a_torn_last_line_costs_one_record_not_the_log(tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_text('{"nodeid": "a", "score": 1.0}\n{"nodeid": "b", "score": 1.0}\n{"nodeid": "c", "sc')

    assert [record["nodeid"] for record in load_records(log)] == ["a", "b"]


def test_resume_index_keeps_only_scored_records_and_the_latest_per_case():
    mode = {"sandbox": "none", "home": "case"}
    base = {"id": "c", "nodeid": "s/c::recall", "content_hash": "h", "command": "agent", "run_mode": mode}
    index = ResumeIndex(
        [
            {**base, "score": 0.0, "reason": "old"},
            {**base, "score": 1.0, "reason": "new"},
            {**base, "nodeid": "s/d::recall", "score": None, "error": "agent could not start"},
        ]
    )

    assert len(index) == 1
    stored = index.take("s/c::recall", "h", "agent", mode)
    assert stored is not None and stored.reason == "new"
    assert index.take("s/c::recall", "other-hash", "agent", mode) is None
    assert index.take("s/c::recall", "h", "another agent", mode) is None
    assert index.take("s/d::recall", "h", "agent", mode) is None
    # A record made in another mode (here, under the sandbox) measured something else: it is run again.
    assert index.take("s/c::recall", "h", "agent", {**mode, "sandbox": "bwrap"}) is None


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_killed_run_resumed_reports_what_an_uninterrupted_run_reports(
    recall_suite, agent_env, workers, without_timing
):
    add_cases(recall_suite)
    agent = recall_suite.agent("resumable_agent")
    uninterrupted = recall_suite.pytester.path / "uninterrupted.json"
    recall_suite.run(f"--recall-report={uninterrupted}", command=agent, report=False).assert_outcomes(passed=4)
    agent_env["calls"].unlink()

    log = agent_env["log"]
    env = {**os.environ, "RESUME_TEST_BLOCK_ON": "case_03"}
    args = ["cases", *workers, f"--recall-cmd={agent}", f"--recall-log={log}"]
    killed = start_killable_run(recall_suite.pytester.path, args, env)
    try:
        blocked = Path(f"{agent_env['calls']}.blocked")
        wait_for(lambda: blocked.exists() and log.exists() and len(load_records(log)) >= 2)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(timeout=30)
    kept = {record["id"] for record in load_records(log)}
    assert {"case_01", "case_02"} <= kept and "case_03" not in kept
    assert recall_suite.report_path.exists() is False, "a killed run writes no report"
    agent_env["calls"].unlink()

    resumed = recall_suite.run(*workers, f"--recall-log={log}", f"--recall-resume={log}", command=agent)

    resumed.assert_outcomes(passed=4)
    resumed.stdout.fnmatch_lines([f"recall: resuming from {log}: {len(kept)} scored case records"])
    assert sorted(set(called_cases(agent_env["calls"]))) == sorted(set(CASES) - kept), "paid twice for a case"
    # The files as written: the values the cases share with the report stand once at the top in both.
    expected = json.loads(uninterrupted.read_text())
    assert without_timing(json.loads(recall_suite.report_path.read_text())) == without_timing(expected)
    # The log now holds every case once: resuming in place adds no duplicates.
    assert sorted(record["id"] for record in load_records(log)) == list(CASES)


def test_a_changed_case_or_command_runs_again(recall_suite, agent_env):
    add_cases(recall_suite, CASES[:3])
    agent = recall_suite.agent("resumable_agent")
    log = agent_env["log"]
    recall_suite.run(f"--recall-log={log}", command=agent).assert_outcomes(passed=3)
    agent_env["calls"].unlink()
    step2 = recall_suite.root / "suite" / "case_02" / "step2.txt"
    step2.write_text("RECALL case_02 -- and answer with care")

    recall_suite.run(f"--recall-resume={log}", command=agent).assert_outcomes(passed=3)

    assert called_cases(agent_env["calls"]) == ["case_02", "case_02"]
    agent_env["calls"].unlink()

    recall_suite.run(f"--recall-resume={log}", command=f"{agent} --another-flag").assert_outcomes(passed=3)

    assert len(calls(agent_env["calls"])) == 6


def test_a_resumed_failure_still_fails_with_its_verdict(recall_suite, agent_env):
    recall_suite.add("case_01", ["REMEMBER 1.00 case_01", "RECALL case_01"], answer="2.00")
    agent = recall_suite.agent("resumable_agent")
    log = agent_env["log"]
    first = recall_suite.run(f"--recall-log={log}", command=agent)
    first.assert_outcomes(failed=1)
    agent_env["calls"].unlink()

    again = recall_suite.run(f"--recall-resume={log}", "--junitxml=junit.xml", command=agent)

    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*case_01 scored 0.0: *", "*expected: '2.00'*", "*reported: '1.00'*"])
    assert not agent_env["calls"].exists()
    junit = (recall_suite.pytester.path / "junit.xml").read_text()
    assert "\nrecall_reported=1.00\n" in junit  # the case's figures, in its system-out under xunit2
    assert '<failure message="case_01 scored 0.0' in junit


def test_resuming_from_another_file_copies_the_stored_records_into_the_new_log(recall_suite, agent_env, tmp_path):
    add_cases(recall_suite, CASES[:2])
    agent = recall_suite.agent("resumable_agent")
    old_log = agent_env["log"]
    recall_suite.run(f"--recall-log={old_log}", command=agent, report=False).assert_outcomes(passed=2)
    new_log = tmp_path / "next" / "run.jsonl"

    recall_suite.run(f"--recall-resume={old_log}", f"--recall-log={new_log}", command=agent).assert_outcomes(passed=2)

    assert load_records(new_log) == load_records(old_log)


def test_a_report_resumes_as_a_log_does(recall_suite, agent_env):
    """A report's head holds lists of its own (the protocol block's data sets): the first ``],`` there is not the
    end of its cases, which once made every report refused as "not a pytest-recall report"."""
    add_cases(recall_suite, CASES[:2])
    agent = recall_suite.agent("resumable_agent")
    recall_suite.run(command=agent).assert_outcomes(passed=2)
    report = recall_suite.pytester.path / "first.json"
    report.write_bytes(recall_suite.report_path.read_bytes())
    assert b"\n    ],\n" in report.read_bytes()  # the list in the head
    agent_env["calls"].unlink()

    result = recall_suite.run(f"--recall-resume={report}", command=agent)

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"recall: resuming from {report}: 2 scored case records*"])
    assert not agent_env["calls"].exists()


def test_a_missing_resume_file_runs_everything_and_says_so(recall_suite, agent_env, monkeypatch):
    monkeypatch.delenv("RESUME_TEST_LOG")
    add_cases(recall_suite, CASES[:1])
    missing = recall_suite.pytester.path / "nothing-yet.jsonl"

    result = recall_suite.run(f"--recall-resume={missing}", command=recall_suite.agent("resumable_agent"))

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"recall: resuming from {missing} (not there yet): 0 scored case records"])


def test_log_and_resume_have_ini_twins(recall_suite, agent_env):
    add_cases(recall_suite, CASES[:2])
    log = agent_env["log"]
    recall_suite.pytester.makeini(f"[pytest]\nrecall_log = {log}\nrecall_resume = {log}\n")
    agent = recall_suite.agent("resumable_agent")
    recall_suite.run(command=agent).assert_outcomes(passed=2)
    agent_env["calls"].unlink()

    recall_suite.run(command=agent).assert_outcomes(passed=2)

    assert not agent_env["calls"].exists()
    assert len(load_records(log)) == 2


def test_an_unwritable_log_is_a_one_line_usage_error(recall_suite, agent_env, tmp_path):
    add_cases(recall_suite, CASES[:1])
    blocker = tmp_path / "a-file"
    blocker.write_text("")

    result = recall_suite.run(f"--recall-log={blocker}/run.jsonl", command=recall_suite.agent("resumable_agent"))

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --recall-log: cannot * {blocker}/run.jsonl*"])
    assert len(result.stderr.lines) <= 2


def test_run_log_appends_fsynced_lines_and_closes(tmp_path):
    log = RunLog(tmp_path / "deep" / "run.jsonl")
    log.append({"nodeid": "x", "text": "é"})
    log.close()
    log.append({"nodeid": "ignored after close"})

    assert (tmp_path / "deep" / "run.jsonl").read_text(encoding="utf-8") == '{"nodeid":"x","text":"é"}\n'


def test_a_session_mode_forced_for_the_run_is_not_resumed_from_a_fresh_mode_log(recall_suite):
    recall_suite.copy_seed_suite()
    log = recall_suite.pytester.path / "run.jsonl"
    notebook = recall_suite.module("pytest_recall.agents.notebook")
    recall_suite.run("-k", "case_01", f"--recall-log={log}", command=notebook).assert_outcomes(passed=1)
    fresh = json.loads(log.read_text().splitlines()[0])

    live = recall_suite.run(
        "-k", "case_01", f"--recall-resume={log}", "--recall-session=continue",
        "--recall-ready-pattern=notebook> $", command=f"{notebook} --repl",
    )  # fmt: skip

    live.assert_outcomes(passed=1)
    (record,) = recall_suite.report()["cases"]
    # A resumed record would be the logged one, hash and all: this one was run again, live.
    assert record["content_hash"] != fresh["content_hash"]
    assert len(record["steps"]) == 2 and record["steps"][0]["duration_s"] > 0


def test_a_record_with_its_prompts_by_reference_resumes():
    """The default record names each prompt by size and sha256; resume must take it, not refuse it."""
    mode = {"sandbox": "none", "home": "case"}
    step = {"step": 1, "exit_code": 0, "timed_out": False, "prompt": prompt_reference("Remember 1234.56")}
    record = {"id": "c", "nodeid": "s/c::recall", "content_hash": "h", "command": "agent", "run_mode": mode}
    index = ResumeIndex([{**record, "score": 1.0, "steps": [step]}])

    assert index.refused == []
    assert index.take("s/c::recall", "h", "agent", mode) is not None


@pytest.mark.slow
def test_kill_9_amid_a_thousand_cases_then_resume_loses_no_finished_case(tmp_path):
    """``bench/kill_resume.py`` at 1,000 cases: the very procedure measured at 10,000 (docs/scaling.md).

    SIGKILL to the whole process group once 400 records are in the log, then
    ``--recall-resume`` on the same log: no logged case runs again, every case
    is in the report once, and the report equals a clean run's, timing aside.
    """
    sys.path.insert(0, str(BENCH))
    try:
        from kill_resume import kill_and_resume
    finally:
        sys.path.remove(str(BENCH))

    done = kill_and_resume(tmp_path, 1_000, kill_at=400)

    assert done.count == 1_000 and done.kept_at_kill >= 400
    assert done.score == pytest.approx(1 - 143 / 1_000), "every 7th case fails, both runs alike"


def test_the_index_holds_where_each_record_is_and_reads_it_back_when_the_case_is_resumed(tmp_path):
    """A resume of 100,000 cases must not hold 100,000 records: a log or a report is indexed by line offset."""
    mode = {"sandbox": "none", "home": "case"}
    records = [{**synthetic_record(i), "run_mode": mode} for i in range(1, 6)]
    log = tmp_path / "run.jsonl"
    run_log = RunLog(log)
    for record in records:
        run_log.append(record)
    run_log.close()
    report = tmp_path / "report.json"
    write_json_atomic(
        report,
        {**report_of_rows(records, threshold=0.5, command=COMMAND).as_json(), "cases": records},
        line_each="cases",
    )

    for source in (log, report):
        index = ResumeIndex.load(source)
        places = [entry[-1] for entry in index.handoff(same_host=True)["entries"]]
        assert len(places) == 5 and all(isinstance(place, int) for place in places), "offsets, not records"
        remote = ResumeIndex.from_handoff(index.handoff(same_host=False))
        local = ResumeIndex.from_handoff(index.handoff(same_host=True))
        for resumed in (index, local, remote):
            for record in records:
                key = case_key(record["suite"], record["id"], record["nodeid"])
                taken = resumed.take(key, record["content_hash"], COMMAND, mode)
                assert taken is not None and taken.as_json() == record
                assert resumed.holds(record)
            assert not resumed.holds({**records[0], "reason": "another"})
            resumed.close()
