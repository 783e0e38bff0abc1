"""``--recall-ci-width``: how many times each case runs so the score's interval reaches a half-width.

The score is the mean over n cases of each case's mean over its k_i runs. Its
variance has two parts: how much the cases' own rates differ (B, which only
more cases shrink) and each case's run-to-run noise (s_i² / k_i, which repeats
shrink)::

    Var(score) = (B + (1/n) Σ s_i² / k_i) / n,   half-width = z · sqrt(Var(score))

Both come from a baseline report run with epochs: s_i² is case i's sample
variance over its runs there (at most 1/4, the most a score in [0, 1] can
vary; a case run once there is taken at 1/4, nothing says it is stable), and B
is the spread of the baseline's case means less the noise their own runs put
in it. The fewest runs that keep the half-width under W give each case runs in
proportion to s_i (Neyman's allocation), rounded up, at least 1 and at most
the cap; a case that reaches the cap is held there and the rest share what is
left. A width that even the cap on every case cannot reach is refused before
anything runs: the floor is the interval that B alone leaves plus the noise
at the cap.

Choosing from an earlier report keeps each case's mean, and the score,
unbiased (:mod:`pytest_recall.reporting.epoch_selection`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_recall.scoring.stats import Z_95

# The most a score in [0, 1] can vary (a coin's p(1 - p) at p = 1/2): a case with one run, or wilder runs.
MOST_VARIANCE = 0.25

CaseKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class RepeatPlan:
    """The runs each baseline case gets, and the half-width the baseline predicts they give."""

    runs: Mapping[CaseKey, int]
    half_width: float


def plan_repeats(
    baseline: Sequence[tuple[CaseKey, Sequence[float]]], *, width: float, cap: int, z: float = Z_95
) -> RepeatPlan:
    """The fewest runs per case (1 to ``cap``) whose predicted half-width is at most ``width``; ValueError says in
    one line what the cap can reach instead."""
    if not baseline:
        raise ValueError("it holds no case scored in more than one epoch; give a report of a run with --recall-epochs")
    n = len(baseline)
    variances = [_noise(scores) for _, scores in baseline]
    means = [statistics.fmean(scores) for _, scores in baseline]
    noise_in_means = statistics.fmean(var / len(scores) for var, (_, scores) in zip(variances, baseline, strict=True))
    between = max(0.0, statistics.pvariance(means) - noise_in_means)
    floor = _half_width(between, [var / cap for var in variances], z)
    if floor > width:
        raise ValueError(
            f"a half-width of {width:g} is out of reach: with every case at the cap (--recall-epochs={cap}) the "
            f"baseline predicts {floor:.3f}; ask for a wider interval, a higher cap, or more cases"
        )
    budget = n * (n * width**2 / z**2 - between)
    runs = _neyman(variances, budget, cap)
    return RepeatPlan(
        runs={key: k for (key, _), k in zip(baseline, runs, strict=True)},
        half_width=_half_width(between, [var / k for var, k in zip(variances, runs, strict=True)], z),
    )


def _noise(scores: Sequence[float]) -> float:
    return min(MOST_VARIANCE, statistics.variance(scores)) if len(scores) >= 2 else MOST_VARIANCE


def _half_width(between: float, noise_per_case: Sequence[float], z: float) -> float:
    n = len(noise_per_case)
    return z * math.sqrt((between + sum(noise_per_case) / n) / n)


def _neyman(variances: Sequence[float], budget: float, cap: int) -> list[int]:
    """Runs in proportion to each case's deviation under Σ s_i² / k_i <= budget, a case over the cap held at it."""
    capped: set[int] = set()
    while True:
        free = [i for i, var in enumerate(variances) if var > 0 and i not in capped]
        left = budget - sum(variances[i] / cap for i in capped)
        share = sum(math.sqrt(variances[i]) for i in free) / left if free else 0.0
        over = {i for i in free if math.sqrt(variances[i]) * share > cap}
        if not over:
            break
        capped |= over
    # The small tolerance keeps a share that is a whole number in floating point from rounding up past it.
    return [
        cap if i in capped else max(1, min(cap, math.ceil(math.sqrt(var) * share - 1e-9))) if var > 0 else 1
        for i, var in enumerate(variances)
    ]
