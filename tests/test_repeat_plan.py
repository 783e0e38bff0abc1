"""--recall-ci-width's plan, as a plain function: runs per case from a baseline's scores (scoring/repeat_plan.py)."""

from __future__ import annotations

import math

import pytest

from pytest_recall.scoring.repeat_plan import plan_repeats
from pytest_recall.scoring.stats import Z_95

FLAKY = (("suite", "flaky"), [1.0, 0.0, 1.0, 0.0])
FLAKY_TOO = (("suite", "flaky_too"), [0.0, 1.0, 0.0, 1.0])
# Half credit every time: as good on average as the flaky cases, so the cases do not differ, but never noisy.
HALF = (("suite", "half"), [0.5, 0.5, 0.5, 0.5])
HALF_TOO = (("suite", "half_too"), [0.5, 0.5, 0.5, 0.5])
ONCE = (("suite", "once"), [0.5])
ALL = {"flaky": 1, "flaky_too": 1, "half": 1, "half_too": 1}


@pytest.mark.parametrize(
    ("baseline", "width", "runs"),
    [
        # Two noisy cases in four: half-width z * sqrt(2 * 0.25 / k) / 4 = 0.346 / sqrt(k), so 0.2 needs k = 4.
        ([FLAKY, FLAKY_TOO, HALF, HALF_TOO], 0.2, ALL | {"flaky": 4, "flaky_too": 4}),
        # Wider, fewer runs; narrower, more.
        ([FLAKY, FLAKY_TOO, HALF, HALF_TOO], 0.4, ALL),
        ([FLAKY, FLAKY_TOO, HALF, HALF_TOO], 0.12, ALL | {"flaky": 9, "flaky_too": 9}),
        # A case run once in the baseline is taken at the most noise a score can have, as a flaky one.
        ([FLAKY, ONCE, HALF, HALF_TOO], 0.2, {"flaky": 4, "once": 4, "half": 1, "half_too": 1}),
    ],
    ids=["flaky-repeats", "wide", "narrow", "once-is-unknown"],
)
def test_repeats_go_to_the_cases_whose_runs_disagreed(
    baseline: list[tuple[tuple[str, str], list[float]]], width: float, runs: dict[str, int]
) -> None:
    plan = plan_repeats(baseline, width=width, cap=10)
    assert {case: k for (_, case), k in plan.runs.items()} == runs
    assert plan.half_width <= width


def test_the_planned_runs_are_the_fewest_that_reach_the_width() -> None:
    """One run fewer on the repeated cases would leave the predicted half-width over the width asked."""
    plan = plan_repeats([FLAKY, FLAKY_TOO, HALF, HALF_TOO], width=0.2, cap=10)
    assert plan.half_width == pytest.approx(Z_95 * math.sqrt(2 * 0.25 / 4) / 4)
    assert Z_95 * math.sqrt(2 * 0.25 / 3) / 4 > 0.2


def test_a_width_the_cap_cannot_reach_is_refused_with_what_the_cap_reaches() -> None:
    """Cases that differ (half always pass, half never) leave an interval repeats cannot narrow; noise the cap
    cannot average away is refused the same way."""
    differ = [(("suite", f"c{i}"), [float(i % 2)] * 3) for i in range(8)]
    with pytest.raises(
        ValueError, match=r"a half-width of 0\.1 is out of reach: .*--recall-epochs=5.* predicts 0\.346"
    ):
        plan_repeats(differ, width=0.1, cap=5)
    with pytest.raises(
        ValueError, match=r"a half-width of 0\.15 is out of reach: .*--recall-epochs=5.* predicts 0\.155"
    ):
        plan_repeats([FLAKY, FLAKY_TOO, HALF, HALF_TOO], width=0.15, cap=5)


def test_a_baseline_without_scored_epochs_is_refused() -> None:
    with pytest.raises(ValueError, match="holds no case scored in more than one epoch"):
        plan_repeats([], width=0.1, cap=5)
