"""A newcomer's first hour, third pass (issue 55): help texts, lost memory, the progress line, the header.

Each test here failed before its fix; each names the trap it keeps shut.
"""

from __future__ import annotations

import subprocess
import sys

from pytest_recall.testing.exchange import MODES


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
