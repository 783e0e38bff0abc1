"""``--recall-shard=auto``: the shard index and count come from the CI system's own variables."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from pytest_recall.reporting.shard import ShardError, shard_from_environment

GITHUB = ("RECALL_SHARD_INDEX", "RECALL_SHARD_TOTAL")
ALL_VARIABLES = ("RECALL_SHARD_INDEX", "RECALL_SHARD_TOTAL", "CI_NODE_INDEX", "CI_NODE_TOTAL", "JOB_COMPLETION_INDEX")


@pytest.mark.parametrize(
    ("environ", "shard"),
    [
        ({"RECALL_SHARD_INDEX": "2", "RECALL_SHARD_TOTAL": "4"}, (2, 4)),
        ({"CI_NODE_INDEX": "4", "CI_NODE_TOTAL": "4"}, (4, 4)),
        ({"JOB_COMPLETION_INDEX": "0", "RECALL_SHARD_TOTAL": "4"}, (1, 4)),
        # Two sources that agree are one shard.
        ({"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "4", "RECALL_SHARD_INDEX": "3", "RECALL_SHARD_TOTAL": "4"}, (3, 4)),
    ],
)
def test_each_ci_names_its_shard(environ, shard):
    assert shard_from_environment(environ) == shard


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "*found no shard in the environment: set RECALL_SHARD_INDEX (from 1) and RECALL_SHARD_TOTAL*"),
        ({"CI_NODE_INDEX": "1"}, "CI_NODE_INDEX is set but CI_NODE_TOTAL is not; set both"),
        ({"RECALL_SHARD_TOTAL": "4"}, "RECALL_SHARD_TOTAL is set but RECALL_SHARD_INDEX is not; set both"),
        ({"JOB_COMPLETION_INDEX": "1"}, "JOB_COMPLETION_INDEX is set but RECALL_SHARD_TOTAL is not*"),
        ({"JOB_COMPLETION_INDEX": "4", "RECALL_SHARD_TOTAL": "4"}, "*gives shard 5 of 4; it must be from 1 to 4"),
        ({"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "4"}, "*gives shard 0 of 4*"),
        ({"CI_NODE_INDEX": "x", "CI_NODE_TOTAL": "4"}, "*CI_NODE_INDEX='x' is not a whole number"),
        (
            {"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "4", "RECALL_SHARD_INDEX": "2", "RECALL_SHARD_TOTAL": "4"},
            "*RECALL_SHARD_INDEX/RECALL_SHARD_TOTAL says 2/4 but CI_NODE_INDEX/CI_NODE_TOTAL says 1/4; unset one",
        ),
    ],
)
def test_a_missing_or_inconsistent_variable_is_one_clear_error(environ, message):
    with pytest.raises(ShardError) as caught:
        shard_from_environment(environ)
    assert len(str(caught.value).splitlines()) == 1
    assert _matches(str(caught.value), message)


def _matches(text: str, pattern: str) -> bool:
    from fnmatch import fnmatchcase

    return fnmatchcase(text, pattern if pattern.startswith("*") else f"--recall-shard=auto: {pattern}")


def ci_variables(ci: str, index: int, total: int) -> dict[str, str]:
    """What each CI puts in a shard's environment; ``index`` counts from 1."""
    if ci == "github":
        return {"RECALL_SHARD_INDEX": str(index), "RECALL_SHARD_TOTAL": str(total)}
    if ci == "gitlab":
        return {"CI_NODE_INDEX": str(index), "CI_NODE_TOTAL": str(total)}
    return {"JOB_COMPLETION_INDEX": str(index - 1), "RECALL_SHARD_TOTAL": str(total)}


@pytest.mark.slow
def test_four_shards_under_each_ci_merge_into_the_single_run(recall_suite, monkeypatch, without_timing):
    for number in range(1, 9):
        remembered = f"remember {number}.25\nsay noted" if number % 3 else "say noted"
        recall_suite.add(f"case_{number:02d}", [remembered, "recall"], answer=f"{number}.25")
    for name in ALL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    recall_suite.run().assert_outcomes(passed=6, failed=2)
    # The files as written: both hold what their cases share (run_mode, step defaults) once, at the top.
    single: dict[str, Any] = without_timing(json.loads(recall_suite.report_path.read_text(encoding="utf-8")))

    for ci in ("github", "gitlab", "kubernetes"):
        reports = []
        for index in range(1, 5):
            with monkeypatch.context() as env:
                for name, value in ci_variables(ci, index, 4).items():
                    env.setenv(name, value)
                report = recall_suite.pytester.path / f"{ci}-{index}.json"
                result = recall_suite.run("--recall-shard=auto", f"--recall-report={report}", report=False)
            assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
            result.stdout.fnmatch_lines([f"recall: shard {index} of 4"])
            reports.append(report)
        merged = recall_suite.pytester.path / f"{ci}-merged.json"
        command = [sys.executable, "-m", "pytest_recall.cli", "merge", *map(str, reports), "-o", str(merged)]
        done = subprocess.run([*command, "--gate", "score"], capture_output=True, text=True, timeout=60, check=False)
        # The merged verdict decides the exit, as a run's does: 0.750 passes the score gate.
        assert done.returncode == 0, done.stderr
        assert without_timing(json.loads(merged.read_text())) == single, ci


def test_auto_without_variables_stops_the_run_with_one_line(recall_suite, monkeypatch):
    recall_suite.add("case_01", ["remember 1.25", "recall"], answer="1.25")
    for name in ALL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CI_NODE_TOTAL", "4")

    result = recall_suite.run("--recall-shard=auto")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--recall-shard=auto: CI_NODE_TOTAL is set but CI_NODE_INDEX is not; set both"])
