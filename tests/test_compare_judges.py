"""``pytest-recall compare`` over runs with several judges (issue 68, item 7).

Two real runs put the same answers to a strict and a lenient judge (the
scripts of tests/test_rejudge.py, whose verdicts are known in advance); the
first is scored by the lenient one, the second by the strict one. Compare must
show each run's judges table, as its summary does, and give no verdict across
scoring judges unless told to, as it gives none across data sets.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_rejudge import add_open, judge

from conftest import RecallSuite


def compare(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_recall.cli", "compare", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_compare_shows_each_runs_judges_table_and_refuses_a_verdict_across_scoring_judges(
    recall_suite: RecallSuite,
) -> None:
    add_open(recall_suite, "case_01_right", "We chose Postgres")
    add_open(recall_suite, "case_02_hedge", "Postgres or MySQL")
    folder = recall_suite.pytester.path
    judges = [
        f"--recall-judge-cmd=strict={judge(folder, 'strict')}",
        f"--recall-judge-cmd=lenient={judge(folder, 'lenient')}",
    ]
    reports = {}
    for scoring in ("lenient", "strict"):
        reports[scoring] = folder / f"{scoring}.json"
        result = recall_suite.run(
            *judges,
            "--recall-concurrency=2",
            f"--recall-judge-score={scoring}",
            f"--recall-report={reports[scoring]}",
            report=False,
        )
        assert result.ret in (0, 1), result.stdout.str()

    same = compare(reports["lenient"], reports["lenient"])
    assert same.returncode == 0, same.stdout + same.stderr
    lines = same.stdout.splitlines()
    # The run summary's own rows, once per run.
    for side in ("base", "new"):
        start = lines.index(f"Judges of {side}: 2 judges, score by judge lenient:")
        assert lines[start + 5] == "  strict vs lenient: agree 0.50 on 2, Cohen's kappa 0.00", lines
    assert "Scoring judges differ" not in same.stdout and lines[-1].startswith("Verdict")

    refused = compare(reports["lenient"], reports["strict"])
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "Judges of base: 2 judges, score by judge lenient:" in refused.stdout
    assert "Judges of new: 2 judges, score by judge strict:" in refused.stdout
    differ = [line for line in refused.stdout.splitlines() if line.startswith("Scoring judges differ")]
    assert len(differ) == 1 and "base by judge lenient" in differ[0] and "new by judge strict" in differ[0]
    assert "Verdict" not in refused.stdout
    errors = refused.stderr.splitlines()
    assert len(errors) == 1 and "no verdict across scoring judges" in errors[0] and "--allow-protocol-diff" in errors[0]

    allowed = compare(reports["lenient"], reports["strict"], "--allow-protocol-diff")
    assert allowed.returncode in (0, 1), allowed.stdout + allowed.stderr
    assert "Scoring judges differ" in allowed.stdout and allowed.stdout.splitlines()[-1].startswith("Verdict")
