"""Per-session overhead: what the harness adds to each case, next to the cheapest ways to run the same sessions.

Every case has two steps, so two sessions. The figure is the marginal cost
of one case, ``(T(large) - T(small)) / (large - small)``, so start-up costs
(pytest's import and collection, bash's own start) cancel out. Three ways to
run the same suite, each with the same agent:

- harness: ``python -m pytest <suite> --recall-cmd=AGENT -p no:cacheprovider -q``,
  a real run: collection, two sessions on a pty, judging, records, reports;
- floor: a bare Python loop, ``subprocess.run`` per session, each in a fresh
  ``mkdtemp`` directory removed afterwards: the least any harness can do;
- recipe: ``bench/recipe.sh``, the task's run_case.sh recipe as a bash loop.

Two agents: ``/bin/echo 1234.56`` costs about a millisecond, so it exposes
the harness's own cost; a tiny Python script is closer to a real agent.
Goals: harness at most 2x the floor; at least 2x faster than the recipe.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from _common import (
    ANSWER,
    PYTHON,
    ROOT,
    Row,
    best_timings,
    clocked,
    goal_text,
    ms,
    parse_args,
    print_table,
    pytest_argv,
    ratio_of,
    run_checked,
    scratch,
    write_script,
    write_trivial_cases,
)

RECIPE = ROOT / "bench" / "recipe.sh"
# (small, large) suite sizes per agent: the Python agent is ~30x slower, so fewer cases keep the run short.
SIZES = {"echo": (40, 400), "python": (10, 100)}
QUICK_SIZES = {"echo": (2, 6), "python": (2, 4)}


def floor_run(suite: Path, argv: list[str]) -> None:
    """The least a harness can do: each session in a fresh directory, stdout kept, nothing else."""
    env = {key: value for key, value in os.environ.items() if key != "TRAP_MANIFEST"}
    for case in sorted(suite.iterdir()):
        for step in ("step1.txt", "step2.txt"):
            prompt = (case / step).read_text()
            workdir = tempfile.mkdtemp()
            try:
                subprocess.run(
                    [*argv, prompt], cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True
                )
            finally:
                shutil.rmtree(workdir)


def _rows(label: str, harness: float, floor: float, recipe: float) -> list[Row]:
    """The two goals, then how the harness's cost above the floor compares with the recipe's."""
    baselines = (ms(floor), ms(recipe))
    versus_floor = ratio_of(harness, floor)
    versus_recipe = ratio_of(recipe, harness)
    return [
        Row(label, ms(harness), baselines, "harness/floor", versus_floor, goal_text(versus_floor, at_most=2)),
        Row(label, ms(harness), baselines, "recipe/harness", versus_recipe, goal_text(versus_recipe, at_least=2)),
        Row(
            f"{label}, above floor",
            ms(harness - floor),
            ("-", ms(recipe - floor)),
            "recipe/harness",
            ratio_of(recipe - floor, harness - floor),
        ),
    ]


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    sizes = QUICK_SIZES if args.quick else SIZES
    rows: list[Row] = []
    raw: list[str] = []
    with scratch("overhead") as work:
        agent_script = write_script(work, "agent.py", f"print({ANSWER!r})\n")
        agents = {"echo": ["/bin/echo", ANSWER], "python": [PYTHON, "-S", str(agent_script)]}
        out = work / "recipe-out"
        out.mkdir()
        for agent, argv in agents.items():
            small, large = sizes[agent]
            suites = {n: write_trivial_cases(work / f"{agent}-{n}", n) for n in (small, large)}
            command = shlex.join(argv)
            variants = {}
            for n, suite in suites.items():
                variants[f"harness {n}"] = lambda s=suite, c=command: clocked(
                    lambda: run_checked(pytest_argv(s.parent, f"--recall-cmd={c}"))
                )
                variants[f"floor {n}"] = lambda s=suite, a=argv: clocked(lambda: floor_run(s, a))
                variants[f"recipe {n}"] = lambda s=suite, a=argv: clocked(
                    lambda: run_checked(["bash", str(RECIPE), str(s), str(out), *a])
                )
            best = best_timings(variants, args.repeat)
            raw.append(f"{agent:<6} " + "  ".join(f"{name} {t.wall:.3f}s/{t.cpu:.3f}s" for name, t in best.items()))
            for metric in ("wall", "cpu"):
                cost = {
                    way: (getattr(best[f"{way} {large}"], metric) - getattr(best[f"{way} {small}"], metric))
                    / (large - small)
                    for way in ("harness", "floor", "recipe")
                }
                rows += _rows(f"{agent} agent, {metric}", cost["harness"], cost["floor"], cost["recipe"])
    print_table(
        f"per-session overhead: marginal cost of one two-session case, best of {args.repeat}",
        ("floor", "recipe"),
        rows,
    )
    print("\nraw best times, wall/cpu (cases in suite, seconds):")
    for line in raw:
        print(f"  {line}")


if __name__ == "__main__":
    main()
