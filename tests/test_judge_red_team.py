"""Issue 54's holes in the LLM judge (3, 7, 8 and its output cap) and issue 55's split-command check (item 16).

An agent in default mode runs as the user, so it can reach the folder where
xdist workers share verdicts: a verdict it writes there (hole 3) must not be
taken, and a FIFO it puts there (hole 7) must not hang the run. A judge is
the user's command, but what it leaves (a daemon holding its stdout, one that
closed its output and sleeps) must neither hang the run nor outlive it (hole
8), and what it prints is capped while it is read. Each test here fails on
the code before the fix.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from processes import processes_with, with_signals_at_default

from conftest import RecallSuite
from pytest_recall.agents.adapters.advice import command_line_trap
from pytest_recall.plugin.options import OPTIONS
from pytest_recall.sessions import cgroup
from pytest_recall.sessions.cgroup import SessionCgroup
from pytest_recall.sessions.judge_command import run_judge_command

HOSTILE_DIR = Path(__file__).resolve().parent / "hostile"
AGENTS_DIR = Path(__file__).resolve().parent / "agents"
REQUEST = {"case_id": "s/c", "kind": "free", "question": "q?", "gold": "Postgres", "answer": "Postgres"}
QUESTION = "What did the user decide?"

# Says no to MySQL and yes to anything else.
NO_JUDGE = """
import json, sys
request = json.load(sys.stdin)
print("no" if "MySQL" in request["answer"] else "yes")
"""

# argv: HOW MARKER [STARTED]. Forks a daemon (setsid, MARKER in its command line) that holds the judge's
# stdout and stderr ("holding") or closes them ("closed"), says yes, then exits or, with "-hang", sleeps.
LEAVING_JUDGE = """
import json, os, sys, time
json.load(sys.stdin)
how, marker = sys.argv[1], sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if how.startswith("closed"):
        for fd in (0, 1, 2):
            os.close(fd)
    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(20)", marker])
if len(sys.argv) > 3:
    open(sys.argv[3], "w").close()
print("yes", flush=True)
if how.endswith("-hang"):
    if how.startswith("closed"):
        for fd in (0, 1, 2):
            os.close(fd)
    time.sleep(20)
"""

# Prints SIZE bytes, then yes; run by a child Python that reports its own peak memory.
FLOODING_JUDGE = "import sys; sys.stdin.read(); sys.stdout.write('x' * int(sys.argv[1]) + '\\nyes\\n')"
# The probe's own peak is VmHWM, its address space's high-water mark: getrusage's ru_maxrss outlives exec, so
# a probe started by vfork from a large xdist worker would report the worker's peak as its own.
PEAK_PROBE = """
import json, sys
from pytest_recall.sessions.judge_command import run_judge_command
call = run_judge_command(json.loads(sys.argv[1]), json.loads(sys.argv[2]), timeout_s=60)
status = open("/proc/self/status").read().split("VmHWM:")[1]
print(json.dumps({"error": call.reply.error, "peak_kib": int(status.split()[0])}))
"""


def script(folder: Path, name: str, text: str) -> list[str]:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return [sys.executable, str(path)]


def add_free(recall_suite: RecallSuite, case_id: str, last_step: str) -> None:
    folder = recall_suite.add(case_id, ["remember the database", last_step], answer="Postgres", kind="free")
    expected = json.loads((folder / "answer.json").read_text())
    (folder / "answer.json").write_text(json.dumps({**expected, "question": QUESTION}))


def leftovers(marker: str) -> list[int]:
    """The processes still carrying ``marker`` once those already sent SIGKILL had time to go (a killed process
    still shows until it is scheduled to exit: seconds on a loaded host); killed on the way out, so that a
    failing test leaves none."""
    deadline = time.monotonic() + 10
    while (alive := processes_with(marker, parts=("cmdline",))) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    return alive


# -- holes 3 and 7: the shared verdicts --------------------------------------------------------------------


@pytest.mark.parametrize("trick", ["plant", "fifo"])
def test_an_agent_cannot_plant_a_shared_verdict_or_hang_the_run_with_a_fifo(
    recall_suite: RecallSuite, monkeypatch: pytest.MonkeyPatch, trick: str
) -> None:
    """Two cases, one a worker: the second waits for the first's shared verdict, then rewrites it (or swaps it
    for a FIFO) before its own answer, the same, is judged. Before: it passed, "planted" (or the worker hung)."""
    tmpdir = recall_suite.pytester.path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    add_free(recall_suite, "case_a", "What did we decide?")
    add_free(recall_suite, "case_b", "wait, then: What did we decide?")
    judge = shlex.join(script(recall_suite.pytester.path, "no_judge.py", NO_JUDGE))
    agent = shlex.join([sys.executable, str(HOSTILE_DIR / "verdict_planter.py"), trick, str(tmpdir)])
    result = recall_suite.run(
        "-n", "2", f"--recall-judge-cmd={judge}", "--recall-free-form-judge=llm", command=agent, timeout=120
    )
    records = recall_suite.records()
    verdicts = {name: records[name]["llm_judge"] for name in ("case_a", "case_b")}
    assert {name: (v["score"], v["reason"]) for name, v in verdicts.items()} == {
        "case_a": (0.0, None),
        "case_b": (0.0, None),
    }, result.stdout.str()[-3000:]
    # The attack happened: the second case found the first's verdict and was judged anew, not from the cache.
    assert not verdicts["case_b"]["cached"]
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# -- hole 8 and the cap: the judge's processes and output -------------------------------------------------


@pytest.mark.parametrize("cgroups", ["with cgroups", "without"])
@pytest.mark.parametrize("how", ["holding", "closed"])
def test_a_judge_that_leaves_a_daemon_gives_its_verdict_at_once_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, cgroups: str
) -> None:
    if cgroups == "without":
        # As on a machine where the harness may make no cgroup: the judge's group and token are what it has.
        monkeypatch.setattr(SessionCgroup, "create", classmethod(lambda cls, name="", *, kind="slot": None))
    elif not cgroup.available():
        pytest.skip("no writable cgroup v2 here")
    marker = f"recall-judge-daemon-{uuid.uuid4().hex}"
    started = time.monotonic()
    try:
        call = run_judge_command([*script(tmp_path, "judge.py", LEAVING_JUDGE), how, marker], REQUEST)
        took = time.monotonic() - started
    finally:
        alive = leftovers(marker)
    assert call.reply.score == 1.0, call.reply.error
    assert took < 5, f"the verdict took {took:.1f}s: a daemon holding stdout was waited for"
    assert alive == []


def test_a_judge_that_times_out_is_killed_with_its_daemon_and_not_waited_for(tmp_path: Path) -> None:
    marker = f"recall-judge-daemon-{uuid.uuid4().hex}"
    started = time.monotonic()
    try:
        judge = [*script(tmp_path, "judge.py", LEAVING_JUDGE), "holding-hang", marker]
        call = run_judge_command(judge, REQUEST, timeout_s=1.0)
        took = time.monotonic() - started
    finally:
        alive = leftovers(marker)
    assert call.reply.score is None and call.reply.error == "the judge timed out after 1s"
    assert took < 5, f"the timeout took {took:.1f}s: the second wait had no timeout"
    assert alive == []


def test_a_judge_printing_300_mb_is_stopped_at_the_cap_not_read_whole(tmp_path: Path) -> None:
    judge = [*script(tmp_path, "flood.py", FLOODING_JUDGE), str(300 << 20)]
    done = subprocess.run(
        [sys.executable, "-c", PEAK_PROBE, json.dumps(judge), json.dumps(REQUEST)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    said = json.loads(done.stdout)
    assert said["error"] == "the judge printed more than 1 MiB on stdout; a verdict is one line"
    # Before, the 300 MB were read whole (and copied) before the cap applied.
    assert said["peak_kib"] < 100 * 1024, said


@pytest.mark.parametrize("how", ["holding-hang", "closed-hang"])
def test_sigterm_ends_a_run_within_two_seconds_whatever_its_judge_left(recall_suite: RecallSuite, how: str) -> None:
    marker = f"recall-judge-daemon-{uuid.uuid4().hex}"
    judge_started = recall_suite.pytester.path / "judge-started"
    judge = shlex.join(
        [*script(recall_suite.pytester.path, "judge.py", LEAVING_JUDGE), how, marker, str(judge_started)]
    )
    add_free(recall_suite, "case_01", "say We chose Postgres")
    flags = [f"--recall-cmd={recall_suite.agent('scripted')}", f"--recall-judge-cmd={judge}"]
    run = subprocess.Popen(
        with_signals_at_default([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *flags]),
        cwd=recall_suite.pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not judge_started.exists():
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()[0].decode()[-3000:]
            time.sleep(0.05)
        run.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        output = run.communicate(timeout=60)[0].decode(errors="replace")
        took = time.monotonic() - sent
    finally:
        if run.poll() is None:
            run.kill()
        alive = leftovers(marker)
    assert run.returncode == 128 + signal.SIGTERM, output[-3000:]
    # The goal is 2 s, met on a quiet machine (1.5-1.7 s); CI's other xdist worker can add seconds of waiting for a
    # core, so the test holds 6 s, still far from the minutes a daemon holding the judge's stdout used to cost.
    assert took < 6, f"pytest took {took:.1f}s to end after SIGTERM"
    assert alive == []
    assert "Traceback" not in output


# -- issue 55 item 16: the split-command check ------------------------------------------------------------

FLAGS = tuple(option.flag for option in OPTIONS)


@pytest.mark.parametrize(
    "args",
    [
        ["--recall-cmd=recall-notebook", "--recall-judge-cmd=judge.py"],
        ["--recall-cmd=recall-notebook", "--recall-judge-cmd=python /path/judge.py"],
        ["--recall-cmd", "recall-notebook", "--recall-judge-cmd", "python /path/judge.py"],
    ],
)
def test_a_documented_judge_form_is_no_split_command(args: list[str]) -> None:
    assert command_line_trap(["cases", *args], FLAGS) is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--recall-cmd=python", "my_agent.py", "--recall-judge-cmd=judge.py"],
            "--recall-cmd=python my_agent.py: the shell split the command in two",
        ),
        (
            ["--recall-cmd=recall-notebook", "--recall-judge-cmd=python", "judge.py"],
            "--recall-judge-cmd=python judge.py: the shell split the command in two",
        ),
    ],
)
def test_a_really_split_command_is_still_caught(args: list[str], message: str) -> None:
    assert str(command_line_trap(["cases", *args], FLAGS)).startswith(message)


@pytest.mark.parametrize("form", ["script", "interpreter and script"])
def test_a_run_with_a_judge_script_in_either_documented_form_runs(recall_suite: RecallSuite, form: str) -> None:
    judge = recall_suite.pytester.path / "judge.py"
    judge.write_text(f"#!{sys.executable}\n{NO_JUDGE}", encoding="utf-8")
    judge.chmod(0o755)
    # An agent command of one word, as recall-notebook is: the check took the judge's flag for its second word.
    agent = recall_suite.pytester.path / "my-agent"
    agent.write_text(f'#!/bin/sh\nexec {shlex.join([sys.executable, str(AGENTS_DIR / "scripted.py")])} "$@"\n')
    agent.chmod(0o755)
    add_free(recall_suite, "case_01", "say We chose Postgres")
    value = str(judge) if form == "script" else shlex.join([sys.executable, str(judge)])
    # The judge's flag right after the agent's, as a user types it: no report flag between them.
    result = recall_suite.run(
        f"--recall-judge-cmd={value}", "--recall-free-form-judge=llm", command=str(agent), report=False
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:] + result.stderr.str()[-2000:]
    result.stdout.fnmatch_lines(["*LLM judge: 1 answer judged*"])
