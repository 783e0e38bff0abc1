"""How much of the audit suite (v3) can be guessed: every baseline agent through the real harness.

Each baseline is a real agent program (``python -m pytest_recall.agents.baselines
NAME``). None may score above 0.10 overall or in any family, by the in-process
figures the README tables come from. Two of them (the null answer and the prompt
injection) also run over the whole eval split through the harness, 256 cases in
fresh sessions with rehearsal feedback, exactly as a user's agent would be: the
harness's figures must be the in-process ones. The other three are the same
program with another rule, so their harness runs would only cost CI minutes.
"""

from __future__ import annotations

import shlex
import sys
from functools import cache
from typing import Any

import pytest

from pytest_recall.agents import baselines
from pytest_recall.suites import audit, audit_v2

OVERALL_BOUND = 0.10
FAMILY_BOUND = 0.10
# A whole split of sessions on a shared machine; the conftest's safety net is sized for small runs.
FULL_SPLIT_TIMEOUT_S = 900.0


@cache
def v3_table() -> dict[str, dict[str, float]]:
    return baselines.guessability(3)


def audit_suite(recall_suite: Any, *, version: int, size: int, name: str = "audit") -> None:
    folder = recall_suite.root / name
    folder.mkdir(parents=True)
    (folder / "suite.toml").write_text(
        f'family = "audit"\nversion = {version}\nsplit = "eval"\nsize = {size}\n', encoding="utf-8"
    )


def run(recall_suite: Any, command: str, *args: str) -> Any:
    return recall_suite.pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        f"--recall-cmd={command}",
        f"--recall-report={recall_suite.report_path}",
        "--recall-concurrency=8",
        "-q",
        *args,
        timeout=FULL_SPLIT_TIMEOUT_S,
    )


@pytest.mark.parametrize("name", list(baselines.BASELINES))
def test_no_baseline_guesses_the_v3_eval_split_in_process(name: str) -> None:
    table = v3_table()[name]
    assert table["overall"] <= OVERALL_BOUND, (name, table)
    assert max(score for family, score in table.items() if family != "overall") <= FAMILY_BOUND, (name, table)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["null", "injection"])
def test_the_harness_gives_a_baseline_its_in_process_figures(recall_suite: Any, name: str) -> None:
    audit_suite(recall_suite, version=3, size=256)

    run(recall_suite, shlex.join([sys.executable, "-m", "pytest_recall.agents.baselines", name]))

    report = recall_suite.report()
    assert report["n_total"] == 256 and report["n_errors"] == 0
    assert report["score"] <= OVERALL_BOUND, (name, report["score"])
    assert max(report["by_category"].values()) <= FAMILY_BOUND, (name, report["by_category"])
    table = v3_table()[name]
    assert report["score"] == pytest.approx(table["overall"], abs=0.0015)
    assert report["by_category"] == pytest.approx({f: table[f] for f in report["by_category"]}, abs=0.0015)


@pytest.mark.slow
def test_the_no_memory_control_shows_the_notebooks_lift_on_the_bundled_suite(recall_suite: Any) -> None:
    audit_suite(recall_suite, version=3, size=256, name="agent-supermemory")

    result = run(recall_suite, recall_suite.module("pytest_recall.agents.notebook"), "--recall-control")

    result.assert_outcomes(passed=512)
    report = recall_suite.report()
    control = report["control"]
    assert report["score"] == 1.0
    # Without its notebook the agent gives the null answer: it scores the suite's no-memory floor.
    assert control["score"] <= OVERALL_BOUND
    assert control["lift_significant"] is True and control["lift_low"] > 0, control


def test_the_null_floor_of_v2_and_v3_is_below_the_bound_and_v1s_was_not() -> None:
    assert audit_v2.NULL_FLOOR < OVERALL_BOUND
    assert max(audit_v2.family_null_floor(3, family) for family in audit.FAMILIES) < FAMILY_BOUND
    v1 = baselines.play("null", audit.generate("eval", 256), 1)
    assert sum(score for _, score in v1) / len(v1) == pytest.approx(0.15625)
