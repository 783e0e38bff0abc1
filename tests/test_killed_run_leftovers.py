"""What a run killed with SIGKILL leaves in TMPDIR is removed by the next run, and nothing of a live run is.

Real runs in subprocesses, a real SIGKILL, a real TMPDIR: see
:mod:`pytest_recall.sessions.run_folders` for how a run's folders are told apart.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from processes import start_killable_run, wait_for

ANSWER = "12345.67"
STEPS = (f"Remember the balance {ANSWER}.", "What was the balance?")
# An agent that writes its pid where the test says, then waits for the gate file (or 60 s) before answering.
GATED_AGENT = (
    "import os, pathlib, time\n"
    "pathlib.Path(os.environ['GATED_PID_FILE']).write_text(str(os.getpid()))\n"
    "gate = pathlib.Path(os.environ['GATED_GATE'])\n"
    "deadline = time.monotonic() + 60\n"
    "while not gate.exists() and time.monotonic() < deadline:\n"
    "    time.sleep(0.02)\n"
    f"print({ANSWER!r})\n"
)


@pytest.fixture
def run_tmp(recall_suite: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A TMPDIR of the test's own for the inner runs, so what they leave is all that is in it."""
    folder: Path = recall_suite.pytester.path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


def gated(recall_suite: Any, run_tmp: Path, suite: str) -> tuple[list[str], dict[str, str], Path, Path]:
    """A run over ``cases/<suite>`` whose agent waits at the gate: its arguments, environment, pid file and gate."""
    pid_file, gate = recall_suite.pytester.path / f"{suite}.pid", recall_suite.pytester.path / f"{suite}.gate"
    agent = shlex.join([sys.executable, "-c", GATED_AGENT])
    args = [f"cases/{suite}", f"--recall-cmd={agent}"]
    env = {**os.environ, "TMPDIR": str(run_tmp), "GATED_PID_FILE": str(pid_file), "GATED_GATE": str(gate)}
    return args, env, pid_file, gate


def entries(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def run_ids(names: list[str]) -> set[str]:
    return {name[len("recall-run-") : -len(".lock")] for name in names if name.endswith(".lock")}


def test_the_folders_of_a_killed_run_are_removed_by_the_next_run(recall_suite: Any, run_tmp: Path) -> None:
    recall_suite.add("killed", STEPS, suite="first")
    recall_suite.add("next", STEPS, suite="second")
    # An older version's folder carries no run id: no sweep may take it for a dead run's.
    foreign = run_tmp / "recall-case-foreign"
    foreign.mkdir()
    args, env, pid_file, _ = gated(recall_suite, run_tmp, "first")
    killed = start_killable_run(recall_suite.pytester.path, args, env)
    try:
        wait_for(pid_file.exists)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(timeout=30)
    os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the agent, in a session of its own
    left = entries(run_tmp)
    (dead,) = run_ids(left)
    assert any(name.startswith(f"recall-case-{dead}-") for name in left), left
    assert any(name.startswith(f"recall-step-{dead}-") for name in left), left

    recall_suite.run("cases/second", command=shlex.join(["echo", ANSWER])).assert_outcomes(passed=1)

    assert entries(run_tmp) == ["recall-case-foreign"], "the killed run's folders, or the next run's own, are left"


@pytest.mark.parametrize("planted", [None, "recall-run-case.lock"])
def test_a_live_runs_folders_are_left_alone_by_another_run(
    recall_suite: Any, run_tmp: Path, planted: str | None
) -> None:
    """``planted``: a plain file an agent leaves in TMPDIR, which once made ``case`` a dead run's id."""
    recall_suite.add("waiting", STEPS, suite="first")
    recall_suite.add("quick", STEPS, suite="second")
    args, env, pid_file, gate = gated(recall_suite, run_tmp, "first")
    live = start_killable_run(recall_suite.pytester.path, args, env)
    try:
        wait_for(pid_file.exists)
        if planted is not None:
            (run_tmp / planted).write_text("")
        before = entries(run_tmp)
        (alive,) = run_ids(before) - {"case"}

        recall_suite.run("cases/second", command=shlex.join(["echo", ANSWER])).assert_outcomes(passed=1)

        assert entries(run_tmp) == before, f"the live run {alive} lost folders to the other run's sweep"
        gate.touch()
        assert live.wait(timeout=60) == 0, "the live run failed"
    finally:
        if live.poll() is None:
            os.killpg(live.pid, signal.SIGKILL)
            live.wait(timeout=30)
    assert entries(run_tmp) == ([] if planted is None else [planted]), "a run that ended normally left something"


def sweep(tmp: Path) -> None:
    """The start-up sweep of ``tmp``, in another process, as the next run's is: this one may hold a lock."""
    code = "import sys; from pytest_recall.sessions import run_folders; run_folders.remove_dead_runs(sys.argv[1])"
    # A wait on a FIFO would time out.
    subprocess.run([sys.executable, "-c", code, str(tmp)], check=True, timeout=60)


def held_lock(path: Path) -> int:
    live = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(live, fcntl.LOCK_EX)
    return live


def test_the_sweep_takes_only_dead_plain_lock_files_and_never_waits_on_a_fifo(tmp_path: Path) -> None:
    """A lock file a run still holds, and a FIFO an agent put under a lock file's name, keep their folders."""
    for run in ("deadrun1", "liverun1", "fiforun1"):
        folder = tmp_path / f"recall-case-{run}-12"
        folder.mkdir()
        (folder / "memory.txt").write_text("notes")
    (tmp_path / "recall-judge-cache-deadrun1-3").mkdir()
    (tmp_path / "recall-run-deadrun1.lock").touch()
    os.mkfifo(tmp_path / "recall-run-fiforun1.lock")
    live = held_lock(tmp_path / "recall-run-liverun1.lock")
    try:
        sweep(tmp_path)
    finally:
        os.close(live)
    assert entries(tmp_path) == [
        "recall-case-fiforun1-12",
        "recall-case-liverun1-12",
        "recall-run-fiforun1.lock",
        "recall-run-liverun1.lock",
    ]


@pytest.mark.parametrize("planted", ["case", "liverun", "liverun1-0", "", "LIVERUN1"])
def test_a_lock_file_whose_id_no_run_makes_takes_nothing(tmp_path: Path, planted: str) -> None:
    """An agent's ``recall-run-case.lock`` once made ``case`` a run id: every ``recall-case-...`` folder went."""
    live_folders = ["recall-case-liverun1-0", "recall-step-liverun1-1", "recall-judge-cache-liverun1-a_b3x9z0"]
    for name in live_folders:
        (tmp_path / name).mkdir()
    (tmp_path / f"recall-run-{planted}.lock").write_text("planted by an agent")
    live = held_lock(tmp_path / "recall-run-liverun1.lock")
    try:
        sweep(tmp_path)
    finally:
        os.close(live)
    assert entries(tmp_path) == sorted([*live_folders, f"recall-run-{planted}.lock", "recall-run-liverun1.lock"])
