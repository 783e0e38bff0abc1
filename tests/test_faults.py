"""Faults around the agents: Ctrl-C mid-run, a killed xdist worker, a report that cannot be written,
and agents that cannot start. Nothing finished may be lost, and no agent process may survive.
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
from needs import needs_bwrap
from processes import processes_with, with_signals_at_default

from pytest_recall.reporting.files import write_json_atomic

HOSTILE_DIR = Path(__file__).resolve().parent / "hostile"
ANSWER = "12345.67"
RUN_TIMEOUT_S = 120.0


def hostile(name: str, *args: str) -> str:
    return shlex.join([sys.executable, str(HOSTILE_DIR / f"{name}.py"), *args])


def wait_for(condition: Any, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the run to get there")
        time.sleep(0.05)


# -- Ctrl-C --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("concurrency", "hanging", "sandbox"),
    [
        pytest.param(1, ["c3"], [], id="serial"),
        pytest.param(4, ["c3", "c4", "c5", "c6"], [], id="concurrency-4"),
        pytest.param(
            4, ["c3", "c4", "c5", "c6"], ["--recall-sandbox=bwrap", f"--recall-sandbox-bind={HOSTILE_DIR}"],
            id="concurrency-4-sandbox", marks=needs_bwrap,
        ),
    ],
)  # fmt: skip
def test_ctrl_c_kills_running_agents_and_writes_report_and_log_with_every_finished_case(
    recall_suite: Any, concurrency: int, hanging: list[str], sandbox: list[str]
) -> None:
    names = ["c1", "c2", *hanging]
    for name in names:
        how = "hang" if name in hanging else "say"
        recall_suite.add(name, [f"{name} {how} 1.00", f"{name} say {ANSWER}"], ANSWER)
    marker = f"recall-sleeper-{uuid.uuid4().hex}"
    log = recall_suite.pytester.path / "run.jsonl"
    argv = [
        sys.executable, "-m", "pytest", "cases", "-p", "no:cacheprovider",
        f"--recall-cmd={hostile('sleeper', marker)}",
        f"--recall-report={recall_suite.report_path}", f"--recall-log={log}",
        f"--recall-concurrency={concurrency}", "--recall-timeout=300", *sandbox,
    ]  # fmt: skip
    run = subprocess.Popen(
        with_signals_at_default(argv),
        cwd=recall_suite.pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        # An agent's prompt is in its command line: that is how the test sees which case is running.
        wait_for(lambda: all(processes_with(marker, f"{name} hang") for name in hanging))
        interrupted_at = time.monotonic()
        run.send_signal(signal.SIGINT)
        output, _ = run.communicate(timeout=RUN_TIMEOUT_S)
        exit_after_s = time.monotonic() - interrupted_at
    finally:
        run.kill()
    print(f"concurrency {concurrency}: Ctrl-C to exit took {exit_after_s:.3f}s")
    assert run.returncode == pytest.ExitCode.INTERRUPTED, output.decode(errors="replace")
    assert processes_with(marker) == []
    report = recall_suite.report()
    assert report["interrupted"] is True
    assert {record["id"]: record["score"] for record in report["cases"]} == {"c1": 1.0, "c2": 1.0}
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(record["id"] for record in logged[:-1]) == ["c1", "c2"]
    assert logged[-1] == {"interrupted": True, "signal": None}  # Ctrl-C: no termination signal


# -- a worker that dies --------------------------------------------------------


def test_a_killed_xdist_worker_loses_only_its_case_which_is_reported_as_an_error(recall_suite: Any) -> None:
    for name in ("a", "b", "doomed", "d"):
        last = f"kill {ANSWER}" if name == "doomed" else f"say {ANSWER}"
        recall_suite.add(name, ["say 1.00", last], ANSWER)
    result = recall_suite.run("-n", "2", command=hostile("worker_killer"))
    result.assert_outcomes(passed=3, failed=1)
    report = recall_suite.report()
    records = {record["nodeid"].split("/")[-1].split("::")[0]: record for record in report["cases"]}
    assert sorted(records) == ["a", "b", "d", "doomed"]
    lost = records["doomed"]
    assert lost["score"] is None and lost["error"].startswith("lost: ") and "crashed" in lost["error"]
    assert (report["n_errors"], report["n_scored"], report["score"]) == (1, 3, 1.0)


# -- the report ----------------------------------------------------------------


def test_report_is_written_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "out" / "report.json"
    write_json_atomic(path, {"cases": [], "score": 1.0})
    before = path.read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_json_atomic(path, {"cases": [{"id": "x" * 100_000}], "score": 0.0})
    assert path.read_bytes() == before
    assert [entry.name for entry in path.parent.iterdir()] == ["report.json"]  # no temporary file left


def test_a_report_path_that_cannot_be_written_is_a_usage_error_before_any_agent_runs(recall_suite: Any) -> None:
    recall_suite.add("case", ["say 1.00", f"say {ANSWER}"], ANSWER)
    blocker = recall_suite.pytester.path / "not-a-dir"
    blocker.write_text("")
    result = recall_suite.run(f"--recall-report={blocker}/report.json", report=False)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --recall-report: cannot create {blocker}/report.json: * is not a directory*"])
    assert "Traceback" not in result.stderr.str()


def test_a_report_that_fails_at_the_end_is_one_error_line_and_an_error_exit(recall_suite: Any) -> None:
    recall_suite.add("case", ["say 1.00", f"say {ANSWER}"], ANSWER)
    folder = recall_suite.pytester.path / "reports"
    folder.mkdir()
    # The folder was fine at configure time; something replaces it with a file before the end.
    recall_suite.pytester.makeconftest(
        f"import shutil, pathlib\n"
        f"def pytest_collection_finish(session):\n"
        f"    shutil.rmtree({str(folder)!r}); pathlib.Path({str(folder)!r}).write_text('')\n"
    )
    result = recall_suite.run(f"--recall-report={folder}/report.json", report=False)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines([f"  ERROR: could not write the report to {folder}/report.json: *"])
    assert "Traceback" not in result.stdout.str()


# -- agents that cannot start ----------------------------------------------------


def test_an_agent_that_cannot_start_is_an_error_shown_once_and_kept_out_of_the_score(recall_suite: Any) -> None:
    # It answers its first case, then breaks its own #! line: every later case cannot start.
    agent = recall_suite.pytester.path / "agent.py"
    agent.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "if 'break' in sys.argv[-1]:\n"
        "    text = open(__file__).read().split('\\n', 1)[1]\n"
        "    open(__file__, 'w').write('#!/nonexistent/python\\n' + text)\n"
        "print(sys.argv[-1].split()[-1])\n"
    )
    agent.chmod(0o755)
    recall_suite.add("a_first", ["say 1.00", f"break, say {ANSWER}"], ANSWER)
    for name in ("b", "c", "d"):
        recall_suite.add(name, ["say 1.00", f"say {ANSWER}"], ANSWER)
    result = recall_suite.run(command=str(agent))
    result.assert_outcomes(passed=1, errors=3)
    reason = (
        f"agent command {str(agent)!r} could not start: the interpreter on its #! line was not found; fix that line"
    )
    assert result.stdout.lines.count(f"  3 cases could not run: {reason}") == 1
    assert "Traceback" not in result.stdout.str()
    report = recall_suite.report()
    assert (report["score"], report["n_scored"], report["n_errors"], report["n_total"]) == (1.0, 1, 3, 4)
