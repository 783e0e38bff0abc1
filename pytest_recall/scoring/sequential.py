"""Deciding a suite's gate before every case has run, with a guarantee that holds however often it is checked.

A CI gate asks one question, whether a suite's score is at or above a
threshold. After a few hundred of two thousand cases taken in random order the
answer is often plain, and the rest only add to the bill. But a fixed-sample
interval checked after every case is not valid: peeking at it until it
excludes the threshold makes a wrong call far likelier than its level says.
What stays valid under such optional stopping is a test martingale, by
Ville's inequality: a nonnegative supermartingale that starts at 1 exceeds
``1/alpha`` at any time at all with probability at most ``alpha``.

The score the gate is about is the mean over the suite's N cases, a finite
population, and cases are drawn from it without replacement in a seeded
random order. Under the hypothesis that the population mean is ``m``, the
next case's expected score given those already seen is
``(N*m - sum so far) / (cases left)``, and a gambler who bets a predictable
fraction ``lam`` of their wealth on the next score exceeding it holds wealth
``prod(1 + lam * (x - that mean))``, a martingale when the hypothesis is true
and a supermartingale when the mean is on the other side of it (Waudby-Smith
and Ramdas, "Confidence sequences for sampling without replacement", NeurIPS
2020; "Estimating means of bounded random variables by betting", JRSS-B 2023).
Without replacement, each case seen also narrows what the unseen ones can
hold, so the test sharpens as the suite runs out.

Two such gamblers face the threshold: one betting the score is above it,
one below. A wrong "above" is only possible when the population mean is below
the threshold, where the first gambler's wealth is a supermartingale; a wrong
"below" only when it is at or above, where the second's is. Whatever the
truth, at most one kind of call can be wrong, so each gambler may stop at
``1/alpha`` and the chance of any wrong call stays at most ``alpha``. Once the
cases seen settle the question outright (enough passes that all the rest
failing still leaves the score at the threshold, or the reverse), that is a
decision with no error at all.

Scores are in [0, 1]; a fractional score (partial credit) is bet on the same
way. Cases must be fed in the order they were drawn, not the order they
finished: a case that fails by timing out finishes late, and feeding results
as they finish would bias what has been seen towards the quick passes.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Decision = Literal["above", "below"]
# The seed of the random order cases are drawn in (--recall-stop=decided, --recall-scope=suite): fixed, so the
# order is the same on every run and machine, and a report's order can be drawn again from its node ids.
DRAW_SEED = "pytest-recall suite scope 1"
# The largest share of wealth staked on one case: betting it all would let one case end a gambler.
_STAKE_CAP = 0.75
# Pseudo-observations the bet's running estimates start from, so the first bets are small.
_PRIOR_WEIGHT = 1.0


@dataclass(frozen=True, slots=True)
class GateState:
    """Where a gate stands after some cases: decided or not, on how many of how many."""

    decision: Decision | None
    seen: int
    population: int
    # "certain" when the cases seen settle it outright; "test" when a gambler's wealth crossed 1/alpha.
    how: Literal["certain", "test"] | None = None


class _Gambler:
    """One side's wealth against a hypothesised population mean ``m``; ``sign`` +1 bets above, -1 below."""

    __slots__ = ("log_wealth", "sign")

    def __init__(self, sign: int) -> None:
        self.sign = sign
        self.log_wealth = 0.0

    def bet(self, x: float, conditional_mean: float, estimate: float, variance: float) -> None:
        edge = self.sign * (estimate - conditional_mean)
        room = conditional_mean if self.sign > 0 else 1.0 - conditional_mean  # how far x can fall against the bet
        if edge <= 0 or room <= 0:
            return
        stake = min(edge / (variance + edge * edge), _STAKE_CAP / room)
        self.log_wealth += math.log1p(stake * self.sign * (x - conditional_mean))


class ScoreGate:
    """An anytime-valid test of a suite's mean score against ``threshold``, fed cases in their drawn order."""

    def __init__(self, population: int, threshold: float, alpha: float = 0.05) -> None:
        if population < 1 or not 0 <= threshold <= 1 or not 0 < alpha < 1:
            raise ValueError("a gate needs at least one case, a threshold in [0, 1] and alpha in (0, 1)")
        self.population = population
        self.threshold = threshold
        self.alpha = alpha
        self._total = 0.0
        self._squares = 0.0
        self._seen = 0
        self._above = _Gambler(+1)
        self._below = _Gambler(-1)
        self._state = GateState(None, 0, population)

    @property
    def state(self) -> GateState:
        return self._state

    def add(self, score: float) -> GateState:
        """Take the next case's score (in [0, 1]); the gate's state after it. A decided gate stays decided."""
        if not 0 <= score <= 1 or self._seen >= self.population:
            raise ValueError(f"a score in [0, 1], at most {self.population} of them (got {score!r})")
        if self._state.decision is None:
            expected = _conditional_mean(self.population, self.threshold, self._total, self._seen)
            estimate, variance = self._estimates()
            self._above.bet(score, expected, estimate, variance)
            self._below.bet(score, expected, estimate, variance)
        self._total += score
        self._squares += score * score
        self._seen += 1
        if self._state.decision is None:
            self._state = self._decide()
        else:
            self._state = GateState(self._state.decision, self._seen, self.population, self._state.how)
        return self._state

    def _estimates(self) -> tuple[float, float]:
        return _running_estimates(self._total, self._squares, self._seen)

    def _decide(self) -> GateState:
        needed = self.population * self.threshold
        left = self.population - self._seen
        if self._total >= needed - 1e-9:
            return GateState("above", self._seen, self.population, "certain")
        if self._total + left < needed - 1e-9:
            return GateState("below", self._seen, self.population, "certain")
        bar = math.log(1 / self.alpha)
        if self._above.log_wealth >= bar:
            return GateState("above", self._seen, self.population, "test")
        if self._below.log_wealth >= bar:
            return GateState("below", self._seen, self.population, "test")
        return GateState(None, self._seen, self.population)


def draw_key(nodeid: str) -> str:
    """Where a run item falls in the drawn order: sorting by this key is a shuffle no run can vary."""
    return hashlib.sha256(f"{DRAW_SEED}:{nodeid}".encode()).hexdigest()


def case_draw_key(nodeid: str) -> str:
    """Where a run item's case falls in the drawn order: one key for all its epochs and its control.

    Cases, not runs, are what the gate and the score weigh alike, so cases are
    what is drawn, each with its runs together. The key is the one of the
    case's run item without an epoch suffix (``…::recall``), so a run with no
    epochs and no control is drawn as it always was.
    """
    return draw_key(f"{nodeid.rsplit('::', 1)[0]}::recall")


def _running_estimates(total: float, squares: float, seen: int) -> tuple[float, float]:
    """The bet's mean and variance of the scores so far, shrunk towards 0.5 and 0.25 so the first bets are small."""
    weight = _PRIOR_WEIGHT + seen
    mean = (0.5 * _PRIOR_WEIGHT + total) / weight
    variance = (0.25 * _PRIOR_WEIGHT + squares - 2 * mean * total + seen * mean * mean) / weight
    return mean, max(variance, 1e-4)


def _conditional_mean(population: int, mean: float, total: float, seen: int) -> float:
    """The next case's expected score when the suite's mean is ``mean`` and ``total`` came from ``seen`` cases."""
    return (population * mean - total) / (population - seen)


def score_interval(
    scores: Sequence[float], population: int, alpha: float = 0.05, grid: int = 400
) -> tuple[float, float]:
    """An anytime-valid (1 - alpha) interval for the suite's mean from the cases seen, in their drawn order.

    Each candidate mean on a grid is tested by both gamblers at ``alpha/2``
    each; the interval is the span of candidates neither rejects, widened by
    a grid step. With every case seen it is the score itself.
    """
    seen = len(scores)
    if seen >= population:
        exact = sum(scores) / population
        return exact, exact
    bar = math.log(2 / alpha)
    kept = [step / grid for step in range(grid + 1) if _survives(scores, population, step / grid, bar)]
    if not kept:  # the grid stepped over a narrow interval: the score seen so far is in it
        mean = sum(scores) / max(seen, 1)
        return mean, mean
    return max(0.0, kept[0] - 1 / grid), min(1.0, kept[-1] + 1 / grid)


def _survives(scores: Iterable[float], population: int, mean: float, bar: float) -> bool:
    above, below = _Gambler(+1), _Gambler(-1)
    total = squares = 0.0
    seen = 0
    for score in scores:
        expected = _conditional_mean(population, mean, total, seen)
        if not 0 <= expected <= 1:
            return False  # the cases seen already rule this mean out
        estimate, variance = _running_estimates(total, squares, seen)
        above.bet(score, expected, estimate, variance)
        below.bet(score, expected, estimate, variance)
        if max(above.log_wealth, below.log_wealth) >= bar:
            return False
        total += score
        squares += score * score
        seen += 1
    left = population - seen
    return total <= population * mean + 1e-9 and total + left >= population * mean - 1e-9


Sign = Literal["positive", "negative"]


@dataclass(frozen=True, slots=True)
class LiftState:
    """Where a lift's sign stands after some pairs: decided or not, on how many of how many, and the mean so far."""

    decision: Sign | None
    seen: int
    population: int
    estimate: float | None


class LiftTest:
    """An anytime-valid test of the sign of a lift, fed paired differences one by one (at most ``population``).

    A lift is a mean of per-case differences in [-1, 1] (memory minus its
    control, or one agent minus another on the same case). Mapped to
    ``(d + 1) / 2`` in [0, 1], "no lift" is a mean of 0.5, and two gamblers
    like the score gate's bet against it, one on each sign. Unlike the gate,
    the hypothesis is about the agents, not about this suite's realised
    outcomes: once every pair is seen, two cases up and none down is a sign
    of these outcomes but no evidence of a lift, and a finite-population test
    would call it certain. So each bet is against a fixed 0.5, never the
    mean left in the suite, and nothing is certain from counting.

    Where no case's expected difference is above 0 (no lift, or a harm), the
    "positive" gambler's wealth is a supermartingale whatever order the pairs
    come in; the same for "negative" below. A call is wrong on either side
    at a zero lift, so each gambler stops at ``2/alpha``: by Ville's
    inequality a wrong sign comes at most ``alpha`` of the time, however
    often the test is read. The gamblers only bet on the side the pairs seen
    lean to, so drawing a suite whose differences sum to 0 without
    replacement keeps that bound too (the pairs left then lean the other way).
    """

    def __init__(self, population: int, alpha: float = 0.05) -> None:
        if population < 1 or not 0 < alpha < 1:
            raise ValueError("a lift test needs at least one pair and alpha in (0, 1)")
        self.population = population
        self.alpha = alpha
        self._total = 0.0  # of the mapped differences, in [0, 1]
        self._squares = 0.0
        self._seen = 0
        self._positive = _Gambler(+1)
        self._negative = _Gambler(-1)
        self._state = LiftState(None, 0, population, None)

    @property
    def state(self) -> LiftState:
        return self._state

    def add(self, difference: float) -> LiftState:
        """Take the next pair's difference (in [-1, 1]); the state after it. A decided sign stays decided."""
        if not -1 <= difference <= 1 or self._seen >= self.population:
            raise ValueError(f"a difference in [-1, 1], at most {self.population} of them (got {difference!r})")
        mapped = (difference + 1) / 2
        decision = self._state.decision
        if decision is None:
            estimate, variance = _running_estimates(self._total, self._squares, self._seen)
            self._positive.bet(mapped, 0.5, estimate, variance)
            self._negative.bet(mapped, 0.5, estimate, variance)
            bar = math.log(2 / self.alpha)
            if self._positive.log_wealth >= bar:
                decision = "positive"
            elif self._negative.log_wealth >= bar:
                decision = "negative"
        self._total += mapped
        self._squares += mapped * mapped
        self._seen += 1
        lift = round((2 * self._total - self._seen) / self._seen, 6)
        self._state = LiftState(decision, self._seen, self.population, lift)
        return self._state


def lift_sign(differences: Iterable[float], population: int, alpha: float = 0.05) -> LiftState:
    """The lift test fed ``differences`` in order up to its first decision: where a finished run's pairs stand."""
    test = LiftTest(population, alpha)
    for difference in differences:
        if test.add(difference).decision is not None:
            break
    return test.state
