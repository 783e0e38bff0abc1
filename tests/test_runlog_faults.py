"""The run log on a full disk (issue 14, item 8): a failed append is one error line and changes
no outcome, and a torn line never hides the record after it.

Faults are real: the log is ``/dev/full`` (every write fails with ENOSPC), or the inner pytest
runs under an ``RLIMIT_FSIZE`` that ends the file in the middle of a record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ANSWER = "12345.67"
CASES = ("case_01", "case_02", "case_03")

# Lets the log grow by only a few bytes past its size at start: the next record is cut off mid-line.
FSIZE_CONFTEST = """
import os, resource, signal

def pytest_configure(config):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    limit = os.path.getsize(os.environ["FSIZE_TEST_LOG"]) + 100
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
"""


def add_cases(recall_suite: Any) -> None:
    for name in CASES:
        recall_suite.add(name, ["say 1.00", f"say {ANSWER}"], ANSWER)


def log_lines(log: Path) -> list[dict[str, Any]]:
    """Every line of the log, which must each be whole JSON."""
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_log_on_a_full_device_is_one_error_line_and_every_case_keeps_its_outcome(
    recall_suite: Any, workers: list[str]
) -> None:
    add_cases(recall_suite)
    result = recall_suite.run("--recall-log=/dev/full", *workers)
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    errors = [line for line in result.stdout.lines if "--recall-log" in line]
    assert len(errors) == 1, errors
    result.stdout.fnmatch_lines(["*ERROR: --recall-log: 3 case records could not be written to /dev/full*space*"])
    assert "Traceback" not in result.stdout.str()
    report = recall_suite.report()
    assert (report["passed"], report["n_passed"], report["n_total"]) == (True, 3, 3)


def test_a_log_write_cut_short_leaves_no_torn_line_and_the_cases_resume_after_space_returns(
    recall_suite: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_cases(recall_suite)
    log = recall_suite.pytester.path / "run.jsonl"
    # Earlier content the limit is measured from: a line no resume uses.
    log.write_text(json.dumps({"note": "x" * 65536}) + "\n", encoding="utf-8")
    monkeypatch.setenv("FSIZE_TEST_LOG", str(log))
    recall_suite.pytester.makeconftest(FSIZE_CONFTEST)
    full = recall_suite.run(f"--recall-log={log}", f"--recall-resume={log}")
    full.assert_outcomes(passed=3)
    full.stdout.fnmatch_lines(["*ERROR: --recall-log: 3 case records could not be written to *run.jsonl*"])
    assert [line.get("nodeid") for line in log_lines(log)] == [None]  # no torn tail left behind

    (recall_suite.pytester.path / "conftest.py").unlink()
    recall_suite.run(f"--recall-log={log}", f"--recall-resume={log}").assert_outcomes(passed=3)
    again = recall_suite.run(f"--recall-log={log}", f"--recall-resume={log}")
    again.stdout.fnmatch_lines(["recall: resuming from *run.jsonl: 3 scored case records"])


def test_an_append_after_a_torn_tail_starts_on_a_fresh_line_and_the_torn_tail_is_skipped(recall_suite: Any) -> None:
    add_cases(recall_suite)
    log = recall_suite.pytester.path / "run.jsonl"
    recall_suite.run(f"--recall-log={log}", "-k", "case_01").assert_outcomes(passed=1)
    whole = log.read_text(encoding="utf-8")
    # A run killed mid-write by an older version, or by a crash of the machine: half a line, no newline.
    log.write_text(whole + whole[: len(whole) // 2], encoding="utf-8")

    recall_suite.run(f"--recall-log={log}", f"--recall-resume={log}").assert_outcomes(passed=3)
    resumed = recall_suite.run(f"--recall-log={log}", f"--recall-resume={log}")
    resumed.stdout.fnmatch_lines(["recall: resuming from *run.jsonl: 3 scored case records"])
    resumed.assert_outcomes(passed=3)
    assert recall_suite.report()["n_passed"] == 3
