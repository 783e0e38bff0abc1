"""How fast are generated suites made, and how fast does pytest collect a big one?

Two tables:

- generation: ledger and audit cases built per second in memory, and ledger
  cases written as folders per second (what ``pytest-recall generate`` does),
  against the goal of thousands per second;
- collection: ``pytest --collect-only`` over a ``suite.toml`` of N ledger
  cases, against the same N cases written out as folders, and against pytest
  collecting nothing (its own start-up). The goal: 10,000 cases in a few
  seconds, and no slower than the same cases on disk.

    python bench/generation.py            # 10,000 cases
    python bench/generation.py --quick    # 1,000 cases, one attempt: checks it runs
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from _common import (
    Row,
    best_times,
    goal_text,
    parse_args,
    print_table,
    pytest_argv,
    scratch,
    secs,
    timed,
    timed_run,
)

from pytest_recall.cases.model import write_case_folders
from pytest_recall.suites import audit, ledger

SEED = 20260401
GOAL_CASES_PER_S = 1000.0
GOAL_COLLECT_S = 5.0


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f} cases/s"


def generation_rows(count: int, repeat: int) -> list[Row]:
    audit_count = min(count, audit.MAX_SIZE)
    with scratch("generate") as root:
        attempts = iter(range(repeat))

        def write() -> float:
            return timed(lambda: write_case_folders(ledger.generate(SEED, count), root / f"out{next(attempts)}"))

        best = best_times(
            {
                "ledger": lambda: timed(lambda: ledger.generate(SEED, count)),
                "audit": lambda: timed(lambda: audit.generate("eval", audit_count)),
                "write": write,
            },
            repeat,
        )
    goal = f"{GOAL_CASES_PER_S:,.0f} cases/s"
    rows = []
    for what, name, n in (
        (f"ledger.generate, {count} cases", "ledger", count),
        (f"audit.generate, {audit_count} cases", "audit", audit_count),
        (f"generate + write folders, {count} cases", "write", count),
    ):
        ratio = n / best[name] / GOAL_CASES_PER_S
        rows.append(Row(what, rate(n, best[name]), (goal,), "rate/goal", ratio, goal_text(ratio, at_least=1.0)))
    return rows


def collection_rows(count: int, repeat: int) -> list[Row]:
    with scratch("collect") as root:
        suite = root / "suite-file" / "ledger"
        suite.mkdir(parents=True)
        (suite / "suite.toml").write_text(f'family = "ledger"\nseed = {SEED}\ncount = {count}\n')
        write_case_folders(ledger.generate(SEED, count), root / "folders" / "ledger")
        (root / "empty").mkdir()
        # --collect-only still checks the agent command; `true` is on every PATH.
        extra = ("--collect-only", "--recall-cmd=true")
        best = best_times(
            {
                "suite": lambda: timed_run(pytest_argv(root / "suite-file", *extra), cwd=root),
                "folders": lambda: timed_run(pytest_argv(root / "folders", *extra), cwd=root),
                "startup": lambda: _startup(root, extra),
            },
            repeat,
        )
    ratio = best["suite"] / best["folders"]
    within = best["suite"] / GOAL_COLLECT_S
    baselines = (secs(best["folders"]), secs(best["startup"]))
    return [
        Row(
            f"collect suite.toml, {count} cases",
            secs(best["suite"]),
            baselines,
            "suite/folders",
            ratio,
            goal_text(ratio, at_most=1.0),
        ),
        Row(
            f"collect suite.toml, {count} cases",
            secs(best["suite"]),
            baselines,
            f"time/{GOAL_COLLECT_S:g}s",
            within,
            goal_text(within, at_most=1.0),
        ),
    ]


def _startup(root: Path, extra: tuple[str, ...]) -> float:
    """pytest over an empty folder: exit 5 (nothing collected) is the expected outcome, so no check."""
    argv = pytest_argv(root / "empty", *extra)
    devnull = subprocess.DEVNULL
    return timed(lambda: subprocess.run(argv, cwd=root, stdout=devnull, stderr=devnull, check=False))


def main() -> int:
    args = parse_args(__doc__.splitlines()[0] if __doc__ else "generation benchmark")
    count = 1000 if args.quick else 10_000
    print_table("generation", ["goal"], generation_rows(count, args.repeat))
    print_table("collection", ["same cases as folders", "pytest start-up"], collection_rows(count, args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
