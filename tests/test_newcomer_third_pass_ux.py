"""A newcomer's first hour, third pass (issue 55): help texts, lost memory, the progress line, the header.

Each test here failed before its fix; each names the trap it keeps shut.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest

from pytest_recall.testing.exchange import MODES

ANSWER = "12345.67"


def pytest_recall_help(*args: str) -> str:
    """What ``pytest-recall ... --help`` prints, from a real process."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest_recall.cli", *args, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return " ".join(done.stdout.split())


def test_fake_model_help_lists_every_mode_and_says_which_judges_leniently() -> None:
    text = pytest_recall_help("fake-model")
    assert "--mode {" + ",".join(MODES) + "}" in text
    for mode in MODES:
        assert f"'{mode}'" in text, f"{mode} is not explained"
    assert "every mode judges strictly except 'lenient'" in text
    assert "strictly but lenient" not in text


def test_the_commands_help_gives_compares_exit_two() -> None:
    text = pytest_recall_help()
    assert "compare two reports case by case; exit 1 on a significant regression, 2 on unreadable input" in text
    assert "Exit status:" in text


def progress_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stdout.lines if "recall progress:" in line]


@pytest.mark.parametrize(("workers", "in_flight"), [((), 8), (("-n", "2"), 16)])
def test_the_progress_line_counts_every_case_in_flight_on_a_line_of_its_own(
    recall_suite: Any, workers: tuple[str, ...], in_flight: int
) -> None:
    """Issue 55: '0 running' at --recall-concurrency=8, '1 running' with -n 2 (16 in flight), glued to the dots."""
    for number in range(13):
        recall_suite.add(f"case_{number:02d}", ["remember 12345.67", "recall"], ANSWER)
    # 13 cases x 4 epochs: 52 runs, enough for a progress line in a log.
    result = recall_suite.run("--recall-epochs=4", "--recall-concurrency=8", *workers)
    result.assert_outcomes(passed=52)
    lines = progress_lines(result)
    assert lines, result.stdout.str()
    assert all(line.startswith("recall progress: ") for line in lines), lines
    running = [int(re.search(r", (\d+) running, ", line).group(1)) for line in lines]  # type: ignore[union-attr]
    # The first line comes at 10 runs done, when every process still has a full look-ahead in flight.
    assert running[0] == in_flight, lines
    assert max(running) <= in_flight, lines
