"""A megabyte long_haystack step reaches the notebook on stdin, and the harness's memory stays bounded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_recall.suites import abilities

HARNESS_RSS_BOUND_MB = 300


@pytest.mark.slow
def test_a_megabyte_haystack_runs_on_stdin_with_the_harness_memory_bounded(tmp_path: Path) -> None:
    suite = tmp_path / "abilities-mb"
    suite.mkdir()
    # The categories rotate; seven cases hold one of each, long_haystack among them.
    (suite / "suite.toml").write_text(
        'family = "abilities"\nseed = 5\ncount = 7\nhaystack_bytes = 1000000\n', encoding="utf-8"
    )
    report = tmp_path / "report.json"
    command = [
        sys.executable,
        "-m",
        "pytest",
        str(suite),
        "-p",
        "no:cacheprovider",
        "-q",
        f"--recall-cmd={sys.executable} -m pytest_recall.agents.notebook",
        "--recall-prompt=stdin",
        f"--recall-report={report}",
    ]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = process.stdout.read().decode() if process.stdout else ""
    _, status, usage = os.wait4(process.pid, 0)
    # Reaped here, for its resource usage; Popen must know, or it waits for a pid that is gone.
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.stdout:
        process.stdout.close()

    assert process.returncode == 0, output[-3000:]
    records = json.loads(report.read_text(encoding="utf-8"))["cases"]
    haystack = [r for r in records if r["category"] == "long_haystack"]
    assert len(haystack) == 1 and haystack[0]["score"] == 1.0
    prompt = abilities.iter_cases(5, 7, suite="abilities-mb", haystack_bytes=1_000_000)
    assert max(len(step.prompt.encode()) for case in prompt for step in case.steps) > 900_000
    assert usage.ru_maxrss / 1024 < HARNESS_RSS_BOUND_MB, f"harness peak RSS {usage.ru_maxrss / 1024:.0f} MB"
