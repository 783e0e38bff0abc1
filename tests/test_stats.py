"""The statistics behind a recall report, checked against published and independent values."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable
from typing import Any

import pytest

from pytest_recall.reporting.spool import summary_of_row
from pytest_recall.scoring.case_summary import CaseSummary
from pytest_recall.scoring.stats import (
    bootstrap_mean_interval,
    fold_cases,
    mcnemar_exact,
    paired_test,
    sign_flip_p_value,
    summarize,
    wilson_interval,
)


def record(
    case: int, score: float | None, *, epoch: int = 1, control: bool = False, category: str = "recall"
) -> CaseSummary:
    return summary_of_row(
        {
            "id": f"case_{case:02d}",
            "suite": "s",
            "category": category,
            "epoch": epoch,
            "control": control,
            "score": score,
            "error": None,
        }
    )


def run(scores: Iterable[float | None], **kwargs: Any) -> list[CaseSummary]:
    return [record(i, s, **kwargs) for i, s in enumerate(scores)]


def wilson_by_bisection(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson bounds as the roots of (p_hat - p)^2 = z^2 p (1 - p) / n, found without the closed form."""
    p_hat = successes / n

    def excess(p: float) -> float:
        return (p_hat - p) ** 2 - z * z * p * (1 - p) / n

    def root(lo: float, hi: float) -> float:
        for _ in range(200):
            mid = (lo + hi) / 2
            if (excess(lo) > 0) == (excess(mid) > 0):
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    low = 0.0 if successes == 0 else root(0.0, p_hat)
    high = 1.0 if successes == n else root(p_hat, 1.0)
    return low, high


@pytest.mark.parametrize(
    ("successes", "n", "expected"),
    [
        (5, 10, (0.2366, 0.7634)),
        (0, 10, (0.0, 0.2775)),
        (10, 10, (0.7225, 1.0)),
        # Newcombe (1998), Statistics in Medicine 17:857, Table I, method 3 (score interval).
        (81, 263, (0.2553, 0.3662)),
        (15, 148, (0.0624, 0.1605)),
        (0, 20, (0.0, 0.1611)),
        (1, 29, (0.0061, 0.1718)),
    ],
)
def test_wilson_matches_published_table(successes: int, n: int, expected: tuple[float, float]) -> None:
    low, high = wilson_interval(successes, n)
    assert (round(low, 4), round(high, 4)) == expected


@pytest.mark.parametrize(("successes", "n"), [(1, 1), (3, 8), (7, 8), (13, 40), (99, 100), (500, 1000)])
def test_wilson_agrees_with_an_independent_root_finder(successes: int, n: int) -> None:
    assert wilson_interval(successes, n) == pytest.approx(wilson_by_bisection(successes, n), abs=1e-9)


def test_wilson_bounds_are_exact_at_zero_and_all() -> None:
    assert wilson_interval(0, 7)[0] == 0.0
    assert wilson_interval(7, 7)[1] == 1.0


def test_wilson_with_no_trials_knows_nothing() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("successes", "n"), [(-1, 5), (6, 5), (0, -1)])
def test_wilson_refuses_impossible_counts(successes: int, n: int) -> None:
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(successes, n)


def test_bootstrap_is_reproducible_under_a_seed() -> None:
    values = [0.0, 0.25, 1.0, 1.0, 0.0, 0.25, 1.0, 0.0, 1.0, 1.0]
    assert bootstrap_mean_interval(values, seed=7) == bootstrap_mean_interval(values, seed=7)
    assert bootstrap_mean_interval(values, seed=7) != bootstrap_mean_interval(values, seed=8)


def test_bootstrap_interval_brackets_the_mean_within_the_data_range() -> None:
    values = [0.0, 0.25, 1.0, 1.0, 0.0, 0.25, 1.0, 0.0, 1.0, 1.0]
    low, high = bootstrap_mean_interval(values)
    assert 0.0 <= low < sum(values) / len(values) < high <= 1.0


def test_bootstrap_of_identical_values_is_that_value() -> None:
    assert bootstrap_mean_interval([0.5, 0.5, 0.5]) == (0.5, 0.5)


def test_bootstrap_refuses_no_values() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        bootstrap_mean_interval([])


def test_bootstrap_width_is_close_to_the_normal_approximation() -> None:
    values = [1.0] * 50 + [0.0] * 50
    low, high = bootstrap_mean_interval(values, level=0.95)
    normal_half_width = 1.959963984540054 * math.sqrt(0.25 / 100)
    assert (high - low) / 2 == pytest.approx(normal_half_width, rel=0.1)


def test_bootstrap_covers_the_true_mean_about_as_often_as_promised() -> None:
    rng = random.Random(2024)
    trials, covered = 120, 0
    for trial in range(trials):
        sample = [1.0 if rng.random() < 0.3 else 0.0 for _ in range(40)]
        low, high = bootstrap_mean_interval(sample, seed=trial, resamples=400)
        covered += low <= 0.3 <= high
    assert 0.85 <= covered / trials <= 1.0


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (10, 2, 0.0386),
        (2, 10, 0.0386),
        (5, 5, 1.0),
        (0, 0, 1.0),
        (0, 5, 0.0625),
        (0, 6, 0.03125),
        (1, 7, 0.0703),
    ],
)
def test_mcnemar_exact_p_values(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p, abs=5e-5)


def test_sign_flip_equals_mcnemar_on_binary_differences() -> None:
    for improved, worsened in [(10, 2), (3, 3), (0, 6), (4, 1)]:
        differences = [1.0] * improved + [-1.0] * worsened + [0.0] * 5
        assert sign_flip_p_value(differences) == pytest.approx(mcnemar_exact(improved, worsened))


def test_sign_flip_is_deterministic_beyond_exact_enumeration() -> None:
    differences = [0.25 * (i % 5) - 0.25 for i in range(40)]
    assert sign_flip_p_value(differences, seed=3) == sign_flip_p_value(differences, seed=3)


def test_paired_bootstrap_alone_cannot_make_three_cases_significant() -> None:
    test = paired_test([(0.0, 0.25), (0.0, 0.25), (0.0, 0.25)], exact=False)
    assert (test.low, test.high) == (0.25, 0.25)
    assert test.p_value == 0.25
    assert not test.significant


def odd_epoch_agent(cases: int = 4, epochs: int = 4) -> list[dict[str, Any]]:
    """Remembers on odd epochs only: every case passes sometimes, none always."""
    return [record(c, 1.0 if e % 2 else 0.0, epoch=e) for c in range(cases) for e in range(1, epochs + 1)]


def test_folding_epochs_gives_pass_at_k_but_not_pass_all_k() -> None:
    folds = fold_cases(odd_epoch_agent())
    assert [f.scores for f in folds] == [(1.0, 0.0, 1.0, 0.0)] * 4
    assert all(f.mean == 0.5 and f.pass_at_k and not f.pass_all_k and f.spread == 1.0 for f in folds)


def test_summary_of_the_odd_epoch_agent() -> None:
    summary = summarize(odd_epoch_agent() + [record(9, 1.0, epoch=e) for e in (1, 2, 3, 4)])
    assert summary["epochs"] == 4
    assert summary["pass_at_k"] == 1.0
    assert summary["pass_all_k"] == 0.2
    steady = next(c for c in summary["per_case"] if c["id"] == "case_09")
    assert steady == {
        "id": "case_09",
        "suite": "s",
        "category": "recall",
        "k": 4,
        "mean": 1.0,
        "pass_at_k": True,
        "pass_all_k": True,
        "spread": 0.0,
        "scores": [1.0, 1.0, 1.0, 1.0],
    }


def test_epochs_are_resampled_as_cases_not_records() -> None:
    summary = summarize(odd_epoch_agent(cases=6, epochs=3))
    assert summary["confidence"]["method"] == "bootstrap"
    assert summary["confidence"]["n"] == 6


def test_binary_single_epoch_uses_wilson_over_records() -> None:
    summary = summarize(run([1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0]))
    low, high = wilson_interval(6, 8)
    assert summary["confidence"] == {
        "method": "wilson",
        "level": 0.95,
        "estimate": 0.75,
        "low": round(low, 4),
        "high": round(high, 4),
        "n": 8,
    }
    assert summary["per_case"] is None
    assert summary["pass_at_k"] is None


def test_partial_credit_switches_to_bootstrap() -> None:
    summary = summarize(run([1.0, 0.25, 0.0, 1.0]))
    assert summary["confidence"]["method"] == "bootstrap"
    assert summary["confidence"]["estimate"] == 0.5625


def test_unscored_and_control_records_stay_out_of_the_main_score() -> None:
    records = run([1.0, 1.0, None, 0.0]) + run([0.0, 0.0, 0.0, 0.0], control=True)
    assert summarize(records)["confidence"]["estimate"] == pytest.approx(2 / 3, abs=1e-4)


def test_confidence_per_category() -> None:
    records = [record(i, 1.0, category="a") for i in range(4)] + [record(i, 0.0, category="b") for i in range(4, 6)]
    by_category = summarize(records)["by_category_confidence"]
    assert sorted(by_category) == ["a", "b"]
    assert by_category["a"]["estimate"] == 1.0
    assert (by_category["b"]["low"], by_category["b"]["n"]) == (0.0, 2)


def test_nothing_scored_has_no_interval() -> None:
    summary = summarize(run([None, None]))
    assert summary["confidence"] is None
    assert summary["by_category_confidence"] == {}


def test_no_control_records_means_no_control_section() -> None:
    assert summarize(run([1.0, 0.0]))["control"] is None


def test_memory_that_matters_shows_a_significant_lift() -> None:
    records = run([1.0] * 10) + run([0.0] * 10, control=True)
    control = summarize(records)["control"]
    assert control["score"] == 0.0
    assert (control["lift"], control["lift_low"], control["lift_high"]) == (1.0, 1.0, 1.0)
    assert control["lift_significant"] is True
    assert control["lift_test"]["method"] == "mcnemar"
    assert control["lift_test"]["p_value"] == round(mcnemar_exact(10, 0), 4)


def test_an_agent_that_guesses_right_without_memory_shows_no_lift() -> None:
    records = run([1.0] * 10) + run([1.0] * 10, control=True)
    control = summarize(records)["control"]
    assert control["score"] == 1.0
    assert control["lift"] == 0.0
    assert control["lift_significant"] is False
    assert control["by_category_lift"]["recall"]["significant"] is False


def test_a_mostly_lucky_guesser_with_partial_credit_is_not_significant() -> None:
    main = [1.0, 0.25, 1.0, 1.0, 0.25, 1.0, 1.0, 1.0]
    control = [1.0, 1.0, 0.25, 1.0, 1.0, 0.25, 1.0, 1.0]
    result = summarize(run(main) + run(control, control=True))["control"]
    assert result["lift"] == 0.0
    assert result["lift_low"] < 0 < result["lift_high"]
    assert result["lift_significant"] is False
    assert result["lift_test"]["method"] == "sign-flip"


def test_lift_pairs_by_case_and_category() -> None:
    records = (
        [record(i, 1.0, category="balance") for i in range(6)]
        + [record(i, 0.0, category="balance", control=True) for i in range(6)]
        + [record(i, 0.0, category="names") for i in range(6, 9)]
        + [record(i, 0.0, category="names", control=True) for i in range(6, 9)]
    )
    control = summarize(records)["control"]
    assert control["by_category"] == {"balance": 0.0, "names": 0.0}
    assert control["by_category_lift"]["balance"]["delta"] == 1.0
    assert control["by_category_lift"]["names"]["delta"] == 0.0
    assert control["lift_test"]["n"] == 9


def test_summary_is_json_ready_rounded_and_deterministic() -> None:
    rng = random.Random(5)
    records = [
        record(c, rng.choice([0.0, 0.25, 1.0]), epoch=e, control=k, category="ab"[c % 2])
        for c in range(12)
        for e in (1, 2, 3)
        for k in (False, True)
    ]
    first = json.dumps(summarize(records, seed=1), allow_nan=False, sort_keys=True)
    assert first == json.dumps(summarize(list(reversed(records)), seed=1), allow_nan=False, sort_keys=True)
    floats = [v for v in _walk(json.loads(first)) if isinstance(v, float)]
    assert floats and all(round(v, 4) == v for v in floats)


def _walk(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)
    else:
        yield value
