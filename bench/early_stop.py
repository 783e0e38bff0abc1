"""Stopping a gated run once its answer is known: sessions saved, and how often the early answer is wrong.

No agents: each simulated run draws an outcome for every one of N cases
(Bernoulli, at the case's own success rate), takes them in a seeded random
order as the harness does, and feeds them to ``ScoreGate`` until it decides.
The early call is wrong when it differs from what running every case would
have said (the drawn outcomes' mean against the threshold). Side by side with
running everything (N sessions a run), it reports the median share of cases
run, the 90th percentile, and the rate of wrong calls, for true scores near
and far from the threshold, where 80% of cases are deterministic and where
none are.

The issue's goals, at alpha = 0.05 on 2,000 cases and a 0.70 threshold:
at a true 0.75 a median of at most 30% of the cases run and at most 5% wrong
calls; at a true 0.70 at most 5% wrong calls.

    python bench/early_stop.py [--runs 1000] [--cases 2000]
"""

from __future__ import annotations

import argparse
import random
import statistics

from _common import Row, parse_args, print_table

from pytest_recall.scoring.sequential import ScoreGate

THRESHOLD = 0.70
ALPHA = 0.05


def rates(cases: int, score: float, deterministic: float) -> list[float]:
    """Per-case success rates with mean ``score``: a ``deterministic`` share always pass or always fail."""
    fixed = round(cases * deterministic)
    passing = round(fixed * score)
    return [1.0] * passing + [0.0] * (fixed - passing) + [score] * (cases - fixed)


def one_run(case_rates: list[float], generator: random.Random) -> tuple[int, bool]:
    """(cases run before the gate decided, whether its call was wrong)."""
    outcomes = [1.0 if generator.random() < rate else 0.0 for rate in case_rates]
    generator.shuffle(outcomes)
    truth = sum(outcomes) / len(outcomes) >= THRESHOLD
    gate = ScoreGate(len(outcomes), THRESHOLD, ALPHA)
    for outcome in outcomes:
        state = gate.add(outcome)
        if state.decision is not None:
            return state.seen, (state.decision == "above") != truth
    return len(outcomes), False


def scenario(cases: int, score: float, deterministic: float, runs: int, seed: int) -> tuple[float, float, float]:
    generator = random.Random(seed)
    case_rates = rates(cases, score, deterministic)
    results = [one_run(case_rates, generator) for _ in range(runs)]
    shares = sorted(seen / cases for seen, _wrong in results)
    wrong = sum(1 for _seen, was_wrong in results if was_wrong) / runs
    return statistics.median(shares), shares[int(0.9 * (len(shares) - 1))], wrong


def _met(condition: bool) -> str:
    return "met" if condition else "NOT MET"


def more_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=1000, help="simulated runs per scenario")
    parser.add_argument("--cases", type=int, default=2000, help="cases in the simulated suite")
    parser.add_argument("--seed", type=int, default=2026)


def main() -> None:
    args = parse_args(__doc__ or "", repeat=1, more=more_options)
    runs, cases = (40, 400) if args.quick else (args.runs, args.cases)
    rows = []
    for score, deterministic in ((0.75, 0.0), (0.75, 0.8), (0.70, 0.0), (0.72, 0.0), (0.80, 0.0), (0.60, 0.0)):
        median, p90, wrong = scenario(cases, score, deterministic, runs, args.seed)
        goal = ""
        if score == 0.75 and deterministic == 0.0:
            goal = f"median <= 30% {_met(median <= 0.30)}; wrong <= 5% {_met(wrong <= 0.05)}"
        elif score == THRESHOLD:
            goal = f"wrong <= 5% {_met(wrong <= 0.05)}"
        rows.append(
            Row(
                f"true {score:.2f}, {deterministic:.0%} deterministic",
                f"{median:.1%} (p90 {p90:.1%})",
                (f"{wrong:.1%}",),
                "sessions saved",
                1 - median,
                goal,
                " of N",
            )
        )
    print_table(
        f"Stop when decided: {runs} runs of {cases} cases, threshold {THRESHOLD}, alpha {ALPHA}",
        ["wrong calls"],
        rows,
        first="median cases run",
    )


if __name__ == "__main__":
    main()
