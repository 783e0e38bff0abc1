"""Sessions started without forking the harness look exactly like the forked ones to the agent.

The runner starts agents with ``posix_spawn`` where it can (see
``pytest_recall/sessions/spawn.py``) and falls back to ptyprocess's fork elsewhere;
both paths are run here against one probe agent, so they cannot drift apart.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_recall.cases.runs import SessionResult
from pytest_recall.sessions import spawn
from pytest_recall.sessions.driver import run_session
from pytest_recall.sessions.reaper import pids_allocated_since
from pytest_recall.sessions.session import SessionSpec

PROBE = r"""
import json, os, sys
fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
try:
    tty = os.open("/dev/tty", os.O_RDWR)
    controlling = os.tcgetpgrp(tty) == os.getpgrp()
    os.close(tty)
except OSError:
    controlling = False
sys.stderr.write("to stderr\n")
print(json.dumps({
    "cwd": os.getcwd(),
    "leader": os.getsid(0) == os.getpid(),
    "controlling": controlling,
    "stdout_tty": os.isatty(1),
    "stdin_tty": os.isatty(0),
    "fds": fds,
}))
"""


@pytest.fixture(params=["posix_spawn", "fork"])
def spawn_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "posix_spawn" and not spawn.POSIX_SPAWN_GIVES_A_TERMINAL:
        pytest.skip("posix_spawn cannot give a controlling terminal on this platform")
    if request.param == "fork":
        monkeypatch.setattr(spawn, "POSIX_SPAWN_GIVES_A_TERMINAL", False)
    yield request.param


def probe(tmp_path: Path, *, turns: tuple[str, ...] = ()) -> tuple[dict[str, object], SessionResult]:
    workdir = tmp_path / "work"
    workdir.mkdir()
    spec = SessionSpec((sys.executable, "-c", PROBE), workdir, dict(os.environ), 30.0, 1.0, 1 << 20, turns=turns)
    result = run_session(spec)
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stdout.decode().splitlines() if line.startswith("{")]
    return json.loads(lines[-1]), result


def test_agent_leads_a_new_session_with_the_pty_as_its_controlling_terminal(tmp_path: Path, spawn_path: str) -> None:
    seen, result = probe(tmp_path)
    assert seen["leader"] is True
    assert seen["controlling"] is True
    assert seen["stdout_tty"] is True
    assert seen["stdin_tty"] is False
    assert result.stderr == b"to stderr\n"


def test_agent_runs_in_its_own_directory_and_the_harness_stays_where_it_was(tmp_path: Path, spawn_path: str) -> None:
    here = os.getcwd()
    seen, _ = probe(tmp_path)
    assert seen["cwd"] == str((tmp_path / "work").resolve())
    assert os.getcwd() == here


def test_signals_the_harness_ignores_are_default_again_in_the_agent(tmp_path: Path, spawn_path: str) -> None:
    # cat keeps the dispositions it was started with, which a Python probe would not (it ignores SIGPIPE).
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN), signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        spec = SessionSpec(("cat", "/proc/self/status"), tmp_path, dict(os.environ), 30.0, 1.0, 1 << 20)
        result = run_session(spec)
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGPIPE, previous[1])
    ignored_line = next(line for line in result.stdout.decode().splitlines() if line.startswith("SigIgn:"))
    ignored = int(ignored_line.split()[1], 16)
    assert not ignored & (1 << (signal.SIGINT - 1))
    assert not ignored & (1 << (signal.SIGPIPE - 1))


def test_a_signal_that_ends_the_run_reaches_the_main_thread_and_the_agent_starts_with_none_blocked(
    tmp_path: Path, spawn_path: str
) -> None:
    """The filtered spawning thread blocks the run's signals, so the kernel hands them to the main thread
    (asleep in the event loop, which a signal delivered elsewhere would never wake); its agents block none."""
    from pytest_recall.sessions import seccomp

    spec = SessionSpec(("cat", "/proc/self/status"), tmp_path, dict(os.environ), 30.0, 1.0, 1 << 20)
    result = run_session(spec)
    blocked_line = next(line for line in result.stdout.decode().splitlines() if line.startswith("SigBlk:"))
    assert int(blocked_line.split()[1], 16) == 0
    spawner = seccomp._spawner
    if spawn_path == "fork" or spawner is None or spawner.problem is not None:
        return  # no filtered thread was used
    status = Path(f"/proc/self/task/{spawner._thread.native_id}/status").read_text()
    thread_blocked = int(next(line for line in status.splitlines() if line.startswith("SigBlk:")).split()[1], 16)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        assert thread_blocked & (1 << (signum - 1)), signum


def test_an_inheritable_descriptor_of_the_harness_does_not_reach_the_agent(tmp_path: Path, spawn_path: str) -> None:
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    try:
        seen, _ = probe(tmp_path)
    finally:
        os.close(read_end)
        os.close(write_end)
    # 0, 1, 2 and the descriptor listdir itself held open.
    assert len(seen["fds"]) == 4, seen["fds"]  # type: ignore[arg-type]


def test_a_live_session_reads_its_turns_from_the_terminal(tmp_path: Path, spawn_path: str) -> None:
    seen, _ = probe(tmp_path, turns=("hello",))
    assert seen["stdin_tty"] is True
    assert seen["controlling"] is True


def test_pids_allocated_since_a_spawn_cover_its_children_and_give_up_on_long_sessions() -> None:
    import subprocess
    import time

    started = time.monotonic()
    first = subprocess.Popen(["true"])
    second = subprocess.Popen(["true"])
    first.wait()
    second.wait()
    window = pids_allocated_since(first.pid, started)
    if window is None:
        pytest.skip("this system does not expose pid_max and ns_last_pid")
    assert any(second.pid in r for r in window)
    assert not any(first.pid in r for r in window), "the main process is the session's own to end"
    assert pids_allocated_since(first.pid, started - 10**9) is None
