"""pytest-recall beside inspect_ai: the same ledger cases, the same agent, serially and 32 at once.

Three ways run the same generated ledger suite with the bundled ``recall-notebook``:

- floor: a bare Python loop, each case's steps one after another with
  ``subprocess.run`` in fresh ``mkdtemp`` directories, the case's scope folder
  shared by its steps; ``--wide`` cases at once on a thread pool;
- harness: ``pytest SUITE --recall-cmd=recall-notebook`` (``--recall-concurrency=W`` when wide);
- inspect: ``bench/_inspect_task.py`` under a Python with inspect-ai
  (``--inspect-python``): one sample per case, a solver that runs the steps
  the floor's way through ``inspect_ai.util.subprocess``, ``max_samples=W``.

Each figure is a marginal cost per case, ``(T(large) - T(small)) / (large - small)``, so
start-ups (pytest's, inspect's, a thread pool's) cancel out; best of ``--repeat``, interleaved.
The goals: the harness within 5% of the floor's wall time at 32 wide, and ahead of inspect both ways.
Each run's score is checked too: the harness and inspect must agree on how many cases the agent passed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import (
    NOTEBOOK,
    PYTHON,
    ROOT,
    Row,
    Timing,
    best_timings,
    clock_of,
    goal_text,
    ms,
    parse_args,
    print_table,
    pytest_argv,
    ratio_of,
    run_checked,
    scratch,
)

SIZES = (20, 200)
QUICK_SIZES = (2, 4)
WIDE_GOAL = 1.05
INSPECT_VERSION = "0.3.285"


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wide", type=int, default=32, help="cases at once in the wide runs (default 32)")
    parser.add_argument(
        "--inspect-python",
        default=None,
        help=f"a Python with inspect-ai installed (pip install inspect-ai=={INSPECT_VERSION}); "
        "default: this one, if it has it; without one, the inspect rows are left out",
    )


def steps_of(case: Path) -> list[str]:
    files = sorted(case.glob("step*.txt"), key=lambda path: int(path.stem.removeprefix("step")))
    return [path.read_text(encoding="utf-8") for path in files]


def floor_case(case: Path, argv: list[str]) -> None:
    env = dict(os.environ)
    scope = tempfile.mkdtemp()
    env["RECALL_SCOPE_DIR"] = scope
    try:
        for prompt in steps_of(case):
            workdir = tempfile.mkdtemp()
            try:
                subprocess.run(
                    [*argv, prompt], cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True
                )
            finally:
                shutil.rmtree(workdir)
    finally:
        shutil.rmtree(scope)


def floor_run(suite: Path, argv: list[str], wide: int) -> None:
    cases = sorted(path for path in suite.iterdir() if path.is_dir())
    if wide == 1:
        for case in cases:
            floor_case(case, argv)
        return
    with ThreadPoolExecutor(max_workers=wide) as pool:
        for done in [pool.submit(floor_case, case, argv) for case in cases]:
            done.result()


def harness_run(suite: Path, wide: int) -> str:
    extra = [f"--recall-concurrency={wide}"] if wide > 1 else []
    done = run_checked(pytest_argv(suite, f"--recall-cmd={NOTEBOOK}", *extra), ok_codes=(0, 1))
    lines = [line for line in done.stdout.decode(errors="replace").splitlines() if line.startswith("recall:")]
    return lines[-1] if lines else "recall: no summary"


def inspect_run(python: str, suite: Path, wide: int, logs: Path) -> str:
    task = [python, str(ROOT / "bench" / "_inspect_task.py"), str(suite), f"--max-samples={wide}"]
    done = run_checked([*task, f"--log-dir={logs}", "--", NOTEBOOK])
    return done.stdout.decode(errors="replace").strip().splitlines()[-1]


def find_inspect_python(asked: str | None) -> str | None:
    for python in [asked] if asked else [PYTHON]:
        probe = subprocess.run([python, "-c", "import inspect_ai"], capture_output=True, check=False)
        if probe.returncode == 0:
            return python
        if asked:
            raise SystemExit(
                f"--inspect-python {asked} cannot import inspect_ai: pip install inspect-ai=={INSPECT_VERSION}"
            )
    return None


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], more=_options)
    small, large = QUICK_SIZES if args.quick else SIZES
    inspect_python = find_inspect_python(args.inspect_python)
    ways = ["harness", "floor"] + (["inspect"] if inspect_python else [])
    rows: list[Row] = []
    scores: list[str] = []

    def scored(label: str, run: Callable[..., str], *args: object) -> None:
        scores.append(f"{label}: {run(*args)}")

    with scratch("inspect-peer") as work:
        suites = {}
        for n in (small, large):
            suites[n] = work / f"ledger-{n}"
            run_checked(
                [
                    PYTHON,
                    "-m",
                    "pytest_recall.cli",
                    "generate",
                    "ledger",
                    "--seed=27",
                    f"--count={n}",
                    f"--out={suites[n]}",
                ]
            )
        for wide in (1, args.wide):
            variants = {}
            for n, suite in suites.items():
                variants[f"harness {n}"] = clock_of(scored, f"harness x{wide} {suite.name}", harness_run, suite, wide)
                variants[f"floor {n}"] = clock_of(floor_run, suite, [NOTEBOOK], wide)
                if inspect_python:
                    variants[f"inspect {n}"] = clock_of(
                        scored, f"inspect x{wide} {suite.name}", inspect_run, inspect_python, suite, wide, work / "logs"
                    )
            best = best_timings(variants, args.repeat)
            rows += _rows(wide, best, ways, small, large)
    title = f"beside inspect_ai: marginal cost of one ledger case (recall-notebook), best of {args.repeat}"
    print_table(title, ("floor", "inspect"), rows)
    if not inspect_python:
        print(
            f"\ninspect rows left out: no inspect_ai here (pip install inspect-ai=={INSPECT_VERSION}; --inspect-python)"
        )
    print("\nscores, each run:")
    for line in dict.fromkeys(scores):
        print(f"  {line}")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} on {os.cpu_count()} cores")


def _rows(wide: int, best: dict[str, Timing], ways: list[str], small: int, large: int) -> list[Row]:
    """Per metric: the harness against the floor, then against inspect (inspect's cost over the harness's)."""
    rows = []
    label = "serial" if wide == 1 else f"{wide} at once"
    for metric in ("wall", "cpu"):
        cost = {
            way: (getattr(best[f"{way} {large}"], metric) - getattr(best[f"{way} {small}"], metric)) / (large - small)
            for way in ways
        }
        figures = (ms(cost["floor"]), ms(cost["inspect"]) if "inspect" in cost else "-")
        over_floor = ratio_of(cost["harness"], cost["floor"])
        floor_goal = goal_text(over_floor, at_most=WIDE_GOAL) if wide > 1 and metric == "wall" else ""
        rows.append(
            Row(f"{label}, {metric} a case", ms(cost["harness"]), figures, "harness/floor", over_floor, floor_goal)
        )
        if "inspect" in cost:
            behind = ratio_of(cost["inspect"], cost["harness"])
            peer_goal = goal_text(behind, at_least=1.0) if metric == "wall" else ""
            rows.append(
                Row(f"{label}, {metric} a case", ms(cost["harness"]), figures, "inspect/harness", behind, peer_goal)
            )
    return rows


if __name__ == "__main__":
    main()
