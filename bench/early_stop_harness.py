"""Stopping when decided, through the harness: a real run of a scripted agent with known per-case rates.

``bench/early_stop.py`` simulates the gate alone; this runs it as a user
would, with pytest, the plugin and an agent process per session. The agent
(written here) remembers in step 1 and in step 2 answers right with the
case's own probability, written in the case, so the suite's true score is
known. Each scenario runs the same suite with ``--recall-stop=decided`` and
with ``--recall-stop=never`` (``--recall-gate=score``, threshold 0.70) and
reports the sessions each started, the wall time, and whether the early
verdict agreed with running every case.

    python bench/early_stop_harness.py [--cases 200] [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from _common import ANSWER, PYTHON, Row, parse_args, print_table, pytest_argv, run_checked, scratch, secs, timed
from _common import write_script as _write_script

THRESHOLD = 0.70
STEPS = 2
AGENT = f"""import os, pathlib, random, sys
prompt = sys.argv[-1]
rate = float(prompt.split("p=")[1].split()[0])
if prompt.startswith("remember"):
    print("noted")
else:
    print({ANSWER!r} if random.random() < rate else "UNKNOWN")
"""


def write_suite(root: Path, cases: int, score: float, seed: int) -> Path:
    """``cases`` cases whose per-case rates average ``score``: half always right or wrong, half at random."""
    generator = random.Random(seed)
    folder = root / "rates"
    for index in range(cases):
        rate = score if index % 2 else float(generator.random() < score)
        case = folder / f"case_{index:05d}"
        case.mkdir(parents=True)
        (case / "step1.txt").write_text(f"remember p={rate:.3f}\n")
        (case / "step2.txt").write_text(f"answer p={rate:.3f}\n")
        expected = {"id": case.name, "category": "rates", "answer": ANSWER, "answer_kind": "money"}
        (case / "answer.json").write_text(json.dumps(expected))
    return folder


def one_run(suite: Path, agent: Path, report: Path, stop: str) -> tuple[float, dict[str, object]]:
    argv = pytest_argv(
        suite,
        f"--recall-cmd={PYTHON} {agent}",
        "--recall-gate=score",
        f"--recall-threshold={THRESHOLD}",
        f"--recall-stop={stop}",
        "--recall-concurrency=4",
        f"--recall-report={report}",
    )
    seconds = timed(lambda: run_checked(argv, ok_codes=(0, 1)))
    loaded: dict[str, object] = json.loads(report.read_text())
    return seconds, loaded


def more_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cases", type=int, default=200, help="cases in each suite")
    parser.add_argument("--seed", type=int, default=2026)


def main() -> None:
    args = parse_args(__doc__ or "", repeat=1, more=more_options)
    cases = 40 if args.quick else args.cases
    rows = []
    with scratch("early-stop") as root:
        agent = _write_script(root, "rates_agent.py", AGENT)
        for score in (0.95, 0.85, 0.50):
            suite = write_suite(root / f"s{score}", cases, score, args.seed)
            early_s, early = one_run(suite, agent, root / "early.json", "decided")
            full_s, full = one_run(suite, agent, root / "full.json", "never")
            ran = int(early["n_total"])  # type: ignore[call-overload]
            stop = early["stop"]
            assert isinstance(stop, dict)
            agreed = "agrees" if early["passed"] == full["passed"] else "DISAGREES"
            rows.append(
                Row(
                    f"true {score:.2f}: decided after {stop['decided_after']} of {cases}",
                    f"{ran * STEPS} sessions, {secs(early_s)}",
                    (f"{int(full['n_total']) * STEPS} sessions, {secs(full_s)}",),  # type: ignore[call-overload]
                    "sessions saved",
                    1 - ran / cases,
                    f"verdict {agreed} with running all",
                    " of N",
                )
            )
    print_table(
        f"Stop when decided through the harness: {cases} two-step cases, threshold {THRESHOLD}",
        ["--recall-stop=never"],
        rows,
        first="--recall-stop=decided",
    )


if __name__ == "__main__":
    main()
