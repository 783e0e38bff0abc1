"""How much to trust a recall score: intervals, epoch folding and memory lift.

A score from eight cases is noisy. These functions say how noisy, so that a
report can separate "the agent got worse" from "the dice rolled differently".
Everything here is a pure function over plain report records: no I/O, no
pytest, no numpy. The plugin, the CLI's compare command and the HTML page all
call the same code.

Epochs of one case share the case, so they are not independent samples.
Every interval that involves epochs or fractional scores therefore resamples
*cases*, each contributing its epoch-mean, rather than resampling records.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_recall.scoring.case_summary import CaseSummary
from pytest_recall.scoring.passing import scored_a_pass

LEVEL = 0.95
Z_95 = 1.959963984540054
RESAMPLES = 2000
ROUND_DIGITS = 4
UNCATEGORIZED = "uncategorized"
# Up to this many non-zero differences the sign-flip test enumerates every
# pattern (2**14 subset sums), so small suites get an exact p-value.
EXACT_SIGN_FLIP_MAX = 14
# The seed of every bootstrap and sign-flip draw behind a report's intervals and p-values: fixed, so the
# same records give the same intervals, and named in the protocol block's ``seeds``.
BOOTSTRAP_SEED = 0


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion.

    Unlike the textbook Wald interval it stays inside [0, 1] and does not
    collapse to zero width at 0/n or n/n, which is exactly where small recall
    suites live. ``n == 0`` carries no information, so the answer is [0, 1].
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"wilson_interval needs 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half_width = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # The bounds at 0/n and n/n are exactly 0 and 1; arithmetic would leave 1e-17 dust.
    low = 0.0 if successes == 0 else max(0.0, centre - half_width)
    high = 1.0 if successes == n else min(1.0, centre + half_width)
    return (low, high)


def bootstrap_mean_interval(
    values: Sequence[float], *, seed: int = BOOTSTRAP_SEED, resamples: int = RESAMPLES, level: float = LEVEL
) -> tuple[float, float]:
    """A percentile-bootstrap interval for the mean, reproducible under ``seed``.

    Reports must not change between two renders of the same run, so the
    generator is a private ``random.Random(seed)``. With fewer than about ten
    values the percentile interval is too narrow; callers that decide
    significance pair it with an exact test (see :func:`paired_test`).
    """
    data = [float(v) for v in values]
    if not data:
        raise ValueError("bootstrap_mean_interval needs at least one value")
    if resamples < 1 or not 0 < level < 1:
        raise ValueError(f"bootstrap_mean_interval needs resamples >= 1 and 0 < level < 1, got {resamples}, {level}")
    if min(data) == max(data):
        return (data[0], data[0])
    rng = random.Random(seed)
    n = len(data)
    means = sorted(sum(rng.choices(data, k=n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    return (_quantile(means, tail), _quantile(means, 1 - tail))


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default), for sorted input."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the two discordant counts.

    Concordant pairs say nothing about a difference; under no difference each
    discordant pair is a fair coin, so the p-value is a doubled binomial tail.
    """
    if b < 0 or c < 0:
        raise ValueError(f"mcnemar_exact needs non-negative counts, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / (1 << n)
    return min(1.0, 2 * tail)


def sign_flip_p_value(differences: Sequence[float], *, seed: int = BOOTSTRAP_SEED, resamples: int = RESAMPLES) -> float:
    """Two-sided paired randomization test: could the signs of these differences be coin flips?

    It is the fractional-score analogue of McNemar (on 0/1 outcomes it gives
    the same p-value) and stays valid for three cases, where a bootstrap
    interval would call almost anything significant. Exact for small inputs,
    seeded Monte Carlo beyond :data:`EXACT_SIGN_FLIP_MAX` differences.
    """
    nonzero = [float(d) for d in differences if d != 0]
    if not nonzero:
        return 1.0
    total = sum(nonzero)
    # Float sums of the same terms in another order may differ in the last bit.
    observed = abs(total) - 1e-9 * max(1.0, abs(total))
    if len(nonzero) <= EXACT_SIGN_FLIP_MAX:
        subset_sums = [0.0]
        for d in nonzero:
            subset_sums += [s + d for s in subset_sums]
        # Flipping the signs of a subset with sum s turns the total into total - 2s.
        extreme = sum(1 for s in subset_sums if abs(total - 2 * s) >= observed)
        return extreme / len(subset_sums)
    rng = random.Random(seed)
    extreme = 0
    for _ in range(resamples):
        flipped = sum(d if rng.random() < 0.5 else -d for d in nonzero)
        extreme += abs(flipped) >= observed
    return (extreme + 1) / (resamples + 1)


def z_for_level(level: float) -> float:
    return statistics.NormalDist().inv_cdf(0.5 + level / 2)


def rounded(value: float | None) -> float | None:
    """Four decimals keeps reports diffable; ``+ 0.0`` turns -0.0 into 0.0."""
    return None if value is None else round(value, ROUND_DIGITS) + 0.0


def record_score(summary: CaseSummary) -> float | None:
    """The case run's score, or None for an error or a case without gold."""
    score = summary.score
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return None
    return float(score)


@dataclass(frozen=True, slots=True)
class CaseFold:
    """One case's records across epochs, folded to what the statistics need.

    ``spread`` is max minus min of the epoch scores: with two to five epochs a
    standard deviation is mostly noise, while the range reads directly as "it
    answered 1.0 once and 0.0 once".
    """

    suite: str
    case_id: str
    category: str
    scores: tuple[float, ...]
    n_records: int
    content_hash: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.suite, self.case_id)

    @property
    def mean(self) -> float | None:
        return sum(self.scores) / len(self.scores) if self.scores else None

    @property
    def pass_at_k(self) -> bool | None:
        return any(scored_a_pass(s) for s in self.scores) if self.scores else None

    @property
    def pass_all_k(self) -> bool | None:
        return all(scored_a_pass(s) for s in self.scores) if self.scores else None

    @property
    def spread(self) -> float | None:
        return max(self.scores) - min(self.scores) if self.scores else None


def fold_cases(summaries: Iterable[CaseSummary], *, control: bool = False) -> list[CaseFold]:
    """Group case runs by (suite, id), main or control only, sorted so output is stable."""
    groups: dict[tuple[str, str], list[CaseSummary]] = {}
    for summary in summaries:
        if bool(summary.control) is control:
            groups.setdefault((str(summary.suite), str(summary.id)), []).append(summary)
    return [_fold(key, groups[key]) for key in sorted(groups)]


def _fold(key: tuple[str, str], runs: list[CaseSummary]) -> CaseFold:
    ordered = sorted(runs, key=_epoch)
    scores = tuple(s for s in map(record_score, ordered) if s is not None)
    category = next((str(r.category) for r in ordered if r.category is not None), UNCATEGORIZED)
    content_hash = next((r.content_hash for r in ordered if r.content_hash), None)
    return CaseFold(key[0], key[1], category, scores, len(ordered), content_hash)


def _epoch(summary: CaseSummary) -> int:
    epoch = summary.epoch
    return epoch if isinstance(epoch, int) else 0


def case_means(folds: Iterable[CaseFold]) -> list[float]:
    return [m for m in (f.mean for f in folds) if m is not None]


def by_category(folds: Iterable[CaseFold]) -> dict[str, list[CaseFold]]:
    grouped: dict[str, list[CaseFold]] = {}
    for fold in folds:
        grouped.setdefault(fold.category, []).append(fold)
    return {category: grouped[category] for category in sorted(grouped)}


def is_binary_single_epoch(folds: Iterable[CaseFold]) -> bool:
    """True when every case has at most one score and every score is 0 or 1: the exact tests apply."""
    folds = list(folds)
    return any(f.scores for f in folds) and all(
        len(f.scores) <= 1 and all(s in (0.0, 1.0) for s in f.scores) for f in folds
    )


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate with its interval; ``n`` counts records for Wilson, cases for bootstrap."""

    method: str
    estimate: float
    low: float
    high: float
    n: int
    level: float = LEVEL

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "level": rounded(self.level),
            "estimate": rounded(self.estimate),
            "low": rounded(self.low),
            "high": rounded(self.high),
            "n": self.n,
        }


def mean_confidence(
    folds: Sequence[CaseFold], *, exact: bool, seed: int = BOOTSTRAP_SEED, level: float = LEVEL
) -> Interval | None:
    """Wilson when every case mean is 0 or 1, else a bootstrap over case means; None if nothing was scored.

    Cases whose epochs all agree are binomial outcomes over cases: a
    bootstrap would collapse to a zero-width interval when all agree, which
    claims a certainty that eight cases cannot give.
    """
    means = case_means(folds)
    if not means:
        return None
    if exact or all(m == 0.0 or scored_a_pass(m) for m in means):
        successes = sum(1 for m in means if scored_a_pass(m))
        low, high = wilson_interval(successes, len(means), z_for_level(level))
        return Interval("wilson", successes / len(means), low, high, len(means), level)
    low, high = bootstrap_mean_interval(means, seed=seed, level=level)
    return Interval("bootstrap", sum(means) / len(means), low, high, len(means), level)


@dataclass(frozen=True, slots=True)
class PairedTest:
    """New against base on the same cases: the difference, its interval and whether it is real.

    ``significant`` needs both the bootstrap interval to exclude zero and the
    exact test (McNemar for 0/1 outcomes, sign-flip otherwise) to give
    p < alpha, so a three-case suite cannot claim a difference on its own.
    """

    method: str
    n: int
    base: float
    new: float
    delta: float
    low: float
    high: float
    level: float
    p_value: float
    improved: int
    worsened: int
    significant: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "n": self.n,
            "base": rounded(self.base),
            "new": rounded(self.new),
            "delta": rounded(self.delta),
            "low": rounded(self.low),
            "high": rounded(self.high),
            "level": rounded(self.level),
            "p_value": rounded(self.p_value),
            "improved": self.improved,
            "worsened": self.worsened,
            "significant": self.significant,
        }


def paired_test(
    pairs: Sequence[tuple[float, float]], *, exact: bool, alpha: float = 0.05, seed: int = BOOTSTRAP_SEED
) -> PairedTest:
    """Compare ``(base, new)`` score pairs, one pair per case.

    ``exact`` (all outcomes 0/1, one epoch) selects McNemar; otherwise the
    sign-flip test supplies the p-value. The interval is always a paired
    bootstrap over cases.
    """
    if not pairs:
        raise ValueError("paired_test needs at least one pair")
    differences = [new - base for base, new in pairs]
    improved = sum(1 for d in differences if d > 0)
    worsened = sum(1 for d in differences if d < 0)
    level = 1 - alpha
    low, high = bootstrap_mean_interval(differences, seed=seed, level=level)
    if exact:
        method, p_value = "mcnemar", mcnemar_exact(improved, worsened)
    else:
        method, p_value = "sign-flip", sign_flip_p_value(differences, seed=seed)
    return PairedTest(
        method=method,
        n=len(pairs),
        base=sum(b for b, _ in pairs) / len(pairs),
        new=sum(n for _, n in pairs) / len(pairs),
        delta=sum(differences) / len(differences),
        low=low,
        high=high,
        level=level,
        p_value=p_value,
        improved=improved,
        worsened=worsened,
        significant=p_value < alpha and not low <= 0 <= high,
    )


def pair_folds(base: Sequence[CaseFold], new: Sequence[CaseFold]) -> list[tuple[CaseFold, CaseFold]]:
    """Cases scored in both, in stable order; the shared step of lift and compare."""
    scored_base = {f.key: f for f in base if f.scores}
    return [(scored_base[f.key], f) for f in new if f.scores and f.key in scored_base]


def control_pairs(summaries: Sequence[CaseSummary]) -> tuple[list[tuple[CaseFold, CaseFold]], int]:
    """The (control, memory) pairs the lift and help and harm read, and how many cases they leave out.

    Each arm is folded over its runs that answered: a case whose agent never
    answered in an arm (it could not start, the model refused it) is no
    evidence of what memory did, so it is left out, not counted as a case
    memory did not help. The count is of the cases scored in both arms that
    this leaves unpaired; with epochs, a case keeps the epochs that answered.
    """
    answered = [summary for summary in summaries if summary.answered]
    pairs = pair_folds(fold_cases(answered, control=True), fold_cases(answered))
    every = pair_folds(fold_cases(summaries, control=True), fold_cases(summaries))
    return pairs, len(every) - len(pairs)


def paired_by_category(
    pairs: Sequence[tuple[CaseFold, CaseFold]], *, exact: bool, alpha: float = 0.05, seed: int = BOOTSTRAP_SEED
) -> tuple[PairedTest | None, dict[str, PairedTest]]:
    """The overall paired test and one per category (named by the ``new`` side's category)."""
    if not pairs:
        return None, {}
    categories: dict[str, list[tuple[float, float]]] = {}
    for base_fold, new_fold in pairs:
        categories.setdefault(new_fold.category, []).append(_means_pair(base_fold, new_fold))
    overall = paired_test([_means_pair(b, n) for b, n in pairs], exact=exact, alpha=alpha, seed=seed)
    per_category = {c: paired_test(categories[c], exact=exact, alpha=alpha, seed=seed) for c in sorted(categories)}
    return overall, per_category


def _means_pair(base: CaseFold, new: CaseFold) -> tuple[float, float]:
    assert base.mean is not None and new.mean is not None, "pair_folds keeps scored cases only"
    return (base.mean, new.mean)


def summarize(summaries: Sequence[CaseSummary], *, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """The report keys this module owns, JSON-ready and identical for identical input."""
    main = fold_cases(summaries)
    epochs = max((f.n_records for f in main), default=0)
    exact = is_binary_single_epoch(main)
    # pass@k is over the cases scored k times: one run (settled by --recall-epochs-from) is no pass@k.
    every_epoch = [f for f in main if len(f.scores) == epochs]
    confidence = mean_confidence(main, exact=exact, seed=seed)
    return {
        "epochs": epochs,
        "confidence": confidence.as_dict() if confidence else None,
        "by_category_confidence": {
            category: interval.as_dict()
            for category, folds in by_category(main).items()
            if (interval := mean_confidence(folds, exact=exact, seed=seed)) is not None
        },
        "pass_at_k": _rate([bool(f.pass_at_k) for f in every_epoch]) if epochs > 1 else None,
        "pass_all_k": _rate([bool(f.pass_all_k) for f in every_epoch]) if epochs > 1 else None,
        "per_case": [_per_case(f) for f in main] if epochs > 1 else None,
        "control": _control_section(main, summaries, seed=seed),
    }


def _rate(flags: Sequence[bool]) -> float | None:
    return rounded(sum(flags) / len(flags)) if flags else None


def _per_case(fold: CaseFold) -> dict[str, Any]:
    return {
        "id": fold.case_id,
        "suite": fold.suite,
        "category": fold.category,
        "k": len(fold.scores),
        "mean": rounded(fold.mean),
        "pass_at_k": fold.pass_at_k,
        "pass_all_k": fold.pass_all_k,
        "spread": rounded(fold.spread),
        "scores": [rounded(s) for s in fold.scores],
    }


def _control_section(main: list[CaseFold], summaries: Sequence[CaseSummary], *, seed: int) -> dict[str, Any] | None:
    """The no-memory baseline and the lift over it; None when the run had no control records."""
    control = fold_cases(summaries, control=True)
    if not control:
        return None
    exact = is_binary_single_epoch(main + control)
    pairs, unanswered = control_pairs(summaries)
    lift, lift_by_category = paired_by_category(pairs, exact=exact, seed=seed)
    scores = [s for f in control for s in f.scores]
    return {
        "score": rounded(sum(scores) / len(scores)) if scores else None,
        "n": len(scores),
        "by_category": {
            category: rounded(sum(s) / len(s))
            for category, folds in by_category(control).items()
            if (s := [x for f in folds for x in f.scores])
        },
        "lift": rounded(lift.delta) if lift else None,
        "lift_low": rounded(lift.low) if lift else None,
        "lift_high": rounded(lift.high) if lift else None,
        "lift_significant": lift.significant if lift else False,
        "lift_test": lift.as_dict() if lift else None,
        "by_category_lift": {category: test.as_dict() for category, test in lift_by_category.items()},
        "n_unanswered": unanswered,
    }
