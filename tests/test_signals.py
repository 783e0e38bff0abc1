"""SIGTERM and SIGHUP end a run the way Ctrl-C does (issue 14, item 6): every session killed,
daemons included, the report and the log written with ``interrupted``, the case directories
removed, and exit status 128 + the signal. A second signal exits at once.
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
from typing import Any

import pytest
from processes import processes_with, with_signals_at_default

HOSTILE_DIR = Path(__file__).resolve().parent / "hostile"
ANSWER = "12345.67"
WAIT_S = 60.0

# Makes the end of the run slow, so a second signal arrives while the first is being handled.
SLOW_FINISH_CONFTEST = """
import os, pathlib, time

def pytest_sessionfinish(session):
    pathlib.Path(os.environ["SIGNAL_TEST_FINISHING"]).write_text("finishing")
    time.sleep(300)
"""


def kill_survivors(marker: str) -> list[int]:
    """The processes still carrying ``marker``; they are killed on the way out."""
    alive = processes_with(marker)
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    return alive


def wait_for(path: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def start_run(recall_suite: Any, marker: str, pidfile: Path, tmpdir: Path, *extra: str) -> subprocess.Popen[bytes]:
    command = shlex.join([sys.executable, str(HOSTILE_DIR / "lingerer.py"), marker, str(pidfile)])
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--recall-cmd={command}",
        f"--recall-report={recall_suite.report_path}",
        f"--recall-log={recall_suite.pytester.path / 'run.jsonl'}",
        "--recall-concurrency=2",
        *extra,
    ]
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    return subprocess.Popen(
        with_signals_at_default(argv),
        cwd=recall_suite.pytester.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


@pytest.mark.parametrize(
    ("signum", "workers"),
    [(signal.SIGTERM, []), (signal.SIGHUP, []), (signal.SIGTERM, ["-n", "2"])],
    ids=["SIGTERM", "SIGHUP", "SIGTERM-to-the-xdist-controller"],
)
def test_a_termination_signal_kills_every_session_writes_the_report_and_cleans_up(
    recall_suite: Any, signum: signal.Signals, workers: list[str]
) -> None:
    marker = f"recall-lingerer-{uuid.uuid4().hex}"
    for name in ("first", "second"):
        recall_suite.add(name, ["linger, then say 1.00", f"linger, then say {ANSWER}"], ANSWER)
    tmpdir = recall_suite.pytester.path / "tmp"
    tmpdir.mkdir()
    pidfile = recall_suite.pytester.path / "daemon.pid"
    run = start_run(recall_suite, marker, pidfile, tmpdir, *workers)
    try:
        wait_for(pidfile, run)
        run.send_signal(signum)
        output = run.communicate(timeout=WAIT_S)[0].decode(errors="replace")
    finally:
        if run.poll() is None:
            run.kill()
        alive = kill_survivors(marker)
    assert alive == []
    assert run.returncode == 128 + signum, output
    assert "Traceback" not in output
    report = json.loads(recall_suite.report_path.read_text(encoding="utf-8"))
    assert report["interrupted"] is True
    log = [json.loads(line) for line in (recall_suite.pytester.path / "run.jsonl").read_text().splitlines()]
    assert log[-1]["interrupted"] is True and log[-1]["signal"] == signum.name
    assert sorted(path.name for path in tmpdir.iterdir()) == []


def test_a_second_signal_exits_at_once(recall_suite: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = f"recall-lingerer-{uuid.uuid4().hex}"
    recall_suite.add("only", ["linger, then say 1.00", f"linger, then say {ANSWER}"], ANSWER)
    finishing = recall_suite.pytester.path / "finishing"
    monkeypatch.setenv("SIGNAL_TEST_FINISHING", str(finishing))
    recall_suite.pytester.makeconftest(SLOW_FINISH_CONFTEST)
    tmpdir = recall_suite.pytester.path / "tmp"
    tmpdir.mkdir()
    pidfile = recall_suite.pytester.path / "daemon.pid"
    run = start_run(recall_suite, marker, pidfile, tmpdir)
    try:
        wait_for(pidfile, run)
        run.send_signal(signal.SIGTERM)
        wait_for(finishing, run)
        run.send_signal(signal.SIGTERM)
        run.communicate(timeout=WAIT_S)
    finally:
        if run.poll() is None:
            run.kill()
        alive = kill_survivors(marker)
    assert run.returncode == 128 + signal.SIGTERM
    assert alive == []
