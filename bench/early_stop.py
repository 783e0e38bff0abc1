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

The same for a lift's sign (``LiftTest``): each case is a pair, memory
passing at the control's rate plus the true lift, each side drawn on its own.
The lift test is about the agents, so a call is wrong when it differs from
the true lift's sign (any call is wrong at a zero lift); the goal is at most
5% wrong at a zero lift, and at a lift of +0.3 the table gives the median
pairs run.

    python bench/early_stop.py [--runs 1000] [--cases 2000] [--pairs 400]
"""

from __future__ import annotations

import argparse
import random
import statistics

from _common import Row, parse_args, print_table

from pytest_recall.scoring.sequential import LiftTest, ScoreGate

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


# The control's success rate in the lift scenarios: memory passes at this plus the true lift.
CONTROL_RATE = 0.35


def lift_run(pairs: int, lift: float, generator: random.Random) -> tuple[int, str | None]:
    """(pairs run before the sign was decided, the sign called or None) for one simulated run."""
    test = LiftTest(pairs, ALPHA)
    for _ in range(pairs):
        memory = 1.0 if generator.random() < CONTROL_RATE + lift else 0.0
        control = 1.0 if generator.random() < CONTROL_RATE else 0.0
        state = test.add(memory - control)
        if state.decision is not None:
            return state.seen, state.decision
    return pairs, None


def lift_scenario(pairs: int, lift: float, runs: int, seed: int) -> tuple[float, float, float, float]:
    """(median share of pairs run, its 90th percentile, the share of runs wrong about the true lift's sign, and
    the share that called a sign at all). At a zero true lift any call is wrong."""
    generator = random.Random(seed)
    results = [lift_run(pairs, lift, generator) for _ in range(runs)]
    shares = sorted(seen / pairs for seen, _sign in results)
    right = "positive" if lift > 0 else "negative" if lift < 0 else None
    wrong = sum(1 for _seen, sign in results if sign is not None and sign != right) / runs
    called = sum(1 for _seen, sign in results if sign is not None) / runs
    return statistics.median(shares), shares[int(0.9 * (len(shares) - 1))], wrong, called


def lift_rows(pairs: int, runs: int, seed: int) -> list[Row]:
    rows = []
    for lift in (0.0, 0.1, 0.3, -0.3):
        median, p90, wrong, called = lift_scenario(pairs, lift, runs, seed)
        goal = f"wrong <= 5% {_met(wrong <= 0.05)}" if lift == 0 else f"median {round(median * pairs)} pairs"
        rows.append(
            Row(
                f"true lift {lift:+.1f}",
                f"{median:.1%} (p90 {p90:.1%})",
                (f"{wrong:.1%}", f"{called:.1%}"),
                "pairs saved",
                1 - median,
                goal,
                " of N",
            )
        )
    return rows


def _met(condition: bool) -> str:
    return "met" if condition else "NOT MET"


def more_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=1000, help="simulated runs per scenario")
    parser.add_argument("--cases", type=int, default=2000, help="cases in the simulated suite")
    parser.add_argument("--pairs", type=int, default=400, help="paired cases in the simulated lift runs")
    parser.add_argument("--seed", type=int, default=2026)


def main() -> None:
    args = parse_args(__doc__ or "", repeat=1, more=more_options)
    runs, cases, pairs = (40, 400, 100) if args.quick else (args.runs, args.cases, args.pairs)
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
    print_table(
        f"Lift's sign: {runs} runs of {pairs} pairs, control passing {CONTROL_RATE}, alpha {ALPHA}",
        ["wrong signs", "decided"],
        lift_rows(pairs, runs, args.seed),
        first="median pairs run",
    )


if __name__ == "__main__":
    main()
