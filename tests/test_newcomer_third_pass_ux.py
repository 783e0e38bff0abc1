"""A newcomer's first hour, third pass (issue 55): help texts, lost memory, the progress line, the header.

Each test here failed before its fix; each names the trap it keeps shut.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.sessions.cgroup import tracking_line
from pytest_recall.testing.exchange import MODES

ANSWER = "12345.67"
REPO_DIR = Path(__file__).resolve().parent.parent


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
    # A line comes every 10 runs done; one while every process has its full look-ahead in flight counts them all
    # (the first may come before a worker slowed by a busy machine has started its own).
    assert max(running) == in_flight, lines


def test_an_agent_that_keeps_notes_in_its_working_folder_is_told_where_memory_must_go(recall_suite: Any) -> None:
    """Issue 55: every case said only 'the value did not survive', naming neither RECALL_SCOPE_DIR nor HOME."""
    recall_suite.add("case_01", ["REMEMBER 12345.67", "RECALL"], ANSWER)
    result = recall_suite.run(command=recall_suite.agent("cwd_notes"))
    result.assert_outcomes(failed=1)
    reason = recall_suite.records()["case_01"]["reason"]
    assert reason == (
        "agent answered UNKNOWN: the value did not survive into the new session; step 1 kept nothing in "
        "RECALL_SCOPE_DIR or HOME but left notes.txt in its working folder, which is removed when the step ends: "
        "keep what the agent remembers under $RECALL_SCOPE_DIR or $HOME"
    )
    result.stdout.fnmatch_lines(["case_01 scored 0.0: *left notes.txt in its working folder*"])


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (
            ("--recall-workdir=case",),
            "step 1 kept nothing in RECALL_SCOPE_DIR or HOME but left notes.txt in its working folder, which is "
            "emptied before the next step: keep what the agent remembers under $RECALL_SCOPE_DIR or $HOME",
        ),
        (
            ("--recall-home=user",),
            "step 1 kept nothing in RECALL_SCOPE_DIR but left notes.txt in its working folder, which is removed "
            "when the step ends: keep what the agent remembers under $RECALL_SCOPE_DIR (or your HOME)",
        ),
    ],
)
def test_the_lost_memory_hint_follows_the_runs_mode(recall_suite: Any, flags: tuple[str, ...], says: str) -> None:
    recall_suite.add("case_01", ["REMEMBER 12345.67", "RECALL"], ANSWER)
    recall_suite.run(*flags, command=recall_suite.agent("cwd_notes")).assert_outcomes(failed=1)
    assert recall_suite.records()["case_01"]["reason"].endswith(says)


def test_no_hint_where_memory_was_kept_or_nothing_was_lost(recall_suite: Any) -> None:
    recall_suite.add("kept", ["remember 12345.67", "recall"], ANSWER)
    recall_suite.add("wrong", ["remember 12345.67", "say 99999.99"], ANSWER)
    recall_suite.add("silent", ["say hello", "say UNKNOWN"], ANSWER)
    recall_suite.run().assert_outcomes(passed=1, failed=2)
    records = recall_suite.records()
    assert records["wrong"]["reason"] == "final line gives a different value"
    # Nothing in the scope, HOME or working folder: nothing was lost, so nothing is named.
    assert records["silent"]["reason"] == "agent answered UNKNOWN: the value did not survive into the new session"


def test_the_header_says_how_sessions_are_tracked_in_one_short_line_and_the_detail_under_v(
    recall_suite: Any,
) -> None:
    """Issue 55: every run's header carried a 300-character cgroup and remount line."""
    recall_suite.add("case_01", ["remember 12345.67", "recall"], ANSWER)
    default = recall_suite.run("--collect-only")
    tracking = [line for line in default.stdout.lines if line.startswith("recall: ") and "cgroup" in line]
    assert len(tracking) == 1 and len(tracking[0]) <= 120, tracking
    assert "favordynmods" not in default.stdout.str()
    verbose = recall_suite.run("--collect-only", "-v")
    assert f"recall: {tracking_line(verbose=True)}" in verbose.stdout.lines
    assert tracking_line(verbose=True) != tracking_line()


def test_quiet_keeps_the_verdict_line_as_the_readme_says(recall_suite: Any) -> None:
    recall_suite.add("case_01", ["remember 12345.67", "recall"], ANSWER)
    quiet = recall_suite.run("-q")
    verdicts = [line for line in quiet.stdout.lines if line.startswith("recall: PASSED")]
    assert len(verdicts) == 1
    assert "95% interval" not in quiet.stdout.str() and "latency per case" not in quiet.stdout.str()
    readme = (REPO_DIR / "README.md").read_text(encoding="utf-8")
    assert "`-q` keeps the verdict line and only what must not be missed" in readme
    assert "`-qq` keeps the verdict line alone" in readme


def test_the_docs_pass_no_default_home_and_point_to_the_tiny_benchmark_files() -> None:
    readme = (REPO_DIR / "README.md").read_text(encoding="utf-8")
    assert "--recall-home=case" not in readme, "the README passes the default --recall-home=case"
    benchmarks = (REPO_DIR / "docs" / "public-benchmarks.md").read_text(encoding="utf-8")
    for tiny in ("tests/data/longmemeval_tiny.json", "tests/data/locomo_tiny.json"):
        assert f"`{tiny}`" in benchmarks
        assert (REPO_DIR / tiny).is_file()
