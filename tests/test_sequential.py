"""The early-stopping gate: decisions it cannot get wrong, the error rate it promises, and its interval."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from pytest_recall.scoring.sequential import LiftTest, ScoreGate, lift_sign, score_interval


def test_enough_passes_settle_the_gate_outright() -> None:
    gate = ScoreGate(10, 0.5)
    states = [gate.add(1.0) for _ in range(5)]
    assert [state.decision for state in states] == [None, None, None, None, "above"]
    assert (states[-1].seen, states[-1].how) == (5, "certain")


def test_enough_failures_settle_it_the_other_way() -> None:
    gate = ScoreGate(10, 0.5)
    states = [gate.add(0.0) for _ in range(6)]
    # Five failures still leave 5 of 10 possible, which is 0.5 and passes; the sixth does not.
    assert states[4].decision is None
    assert (states[5].decision, states[5].seen, states[5].how) == ("below", 6, "certain")


def test_a_plain_answer_is_called_by_the_test_long_before_the_end() -> None:
    generator = random.Random(7)
    gate = ScoreGate(2000, 0.5)
    state = gate.state
    while state.decision is None:
        state = gate.add(1.0 if generator.random() < 0.9 else 0.0)
    assert state.decision == "above" and state.how == "test"
    assert state.seen < 100


def test_a_decided_gate_stays_decided_and_counts_on() -> None:
    gate = ScoreGate(4, 0.5)
    gate.add(1.0)
    gate.add(1.0)
    assert gate.add(0.0) == gate.state
    assert (gate.state.decision, gate.state.seen) == ("above", 3)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_a_score_outside_zero_to_one_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        ScoreGate(10, 0.5).add(bad)


def test_at_the_threshold_wrong_calls_stay_under_alpha() -> None:
    """The promise itself, on 300 runs: a true score at the threshold is called wrongly at most alpha of the time."""
    generator = random.Random(2026)
    wrong = 0
    for _ in range(300):
        outcomes = [1.0 if generator.random() < 0.7 else 0.0 for _ in range(400)]
        truth = sum(outcomes) / len(outcomes) >= 0.7
        gate = ScoreGate(len(outcomes), 0.7, alpha=0.05)
        for outcome in outcomes:
            state = gate.add(outcome)
            if state.decision is not None:
                wrong += (state.decision == "above") != truth
                break
    assert wrong / 300 <= 0.05


def test_the_interval_covers_the_suite_mean_and_closes_on_it() -> None:
    generator = random.Random(3)
    outcomes = [1.0 if generator.random() < 0.6 else 0.0 for _ in range(500)]
    mean = sum(outcomes) / len(outcomes)
    low, high = score_interval(outcomes[:100], len(outcomes))
    assert low <= mean <= high
    assert high - low < 0.5
    narrower = score_interval(outcomes[:400], len(outcomes))
    assert narrower[1] - narrower[0] < high - low
    assert score_interval(outcomes, len(outcomes)) == (mean, mean)


def test_a_lift_is_about_the_agents_so_no_count_of_these_pairs_makes_it_certain() -> None:
    # Two of 40 up and none down: the sign of these outcomes, but no evidence of a lift.
    assert lift_sign([1.0, 1.0] + [0.0] * 38, 40).decision is None


def test_a_clear_lift_is_called_by_the_test_long_before_the_end_and_a_clear_harm_the_other_way() -> None:
    up = lift_sign([1.0] * 40, 40)
    down = lift_sign([-1.0, 0.0] * 20, 40)
    assert up.decision == "positive" and up.seen < 10
    assert down.decision == "negative" and down.seen < 40
    # A fractional difference (partial credit) is bet on the same way.
    assert lift_sign([0.5] * 200, 200).decision == "positive"


@pytest.mark.parametrize("bad", [-1.5, 1.01])
def test_a_difference_outside_minus_one_to_one_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match=r"in \[-1, 1\]"):
        LiftTest(10).add(bad)


def _share_of_runs_calling(sign: str | None, draw: Callable[[random.Random], list[float]], seed: int) -> float:
    """Of 300 runs of ``draw``'s differences, the share the test called ``sign`` in (any sign when None)."""
    generator = random.Random(seed)
    calls = [lift_sign(differences, len(differences)).decision for differences in (draw(generator) for _ in range(300))]
    return sum(1 for call in calls if call is not None and sign in (None, call)) / len(calls)


def _shuffled(ups: int, downs: int, zeros: int) -> Callable[[random.Random], list[float]]:
    def draw(generator: random.Random) -> list[float]:
        differences = [1.0] * ups + [-1.0] * downs + [0.0] * zeros
        generator.shuffle(differences)
        return differences

    return draw


def _no_lift(generator: random.Random) -> list[float]:
    """Memory and control each pass at 0.4 on their own: a zero true lift."""
    return [float(generator.random() < 0.4) - float(generator.random() < 0.4) for _ in range(400)]


def test_at_zero_lift_a_sign_is_called_at_most_alpha_of_the_time() -> None:
    """The promise, where any call is wrong: pairs drawn at no lift, or a suite with as many pairs up as down."""
    assert _share_of_runs_calling(None, _no_lift, 2026) <= 0.05
    assert _share_of_runs_calling(None, _shuffled(60, 60, 280), 2026) <= 0.05


def test_a_lift_is_wrong_signed_at_most_alpha_of_the_time_when_it_is_small_and_the_other_way() -> None:
    assert _share_of_runs_calling("positive", _shuffled(50, 56, 294), 7) <= 0.05
