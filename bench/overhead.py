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

The last rows price a case's ``workspace/``: what the harness adds to one
step to copy a 100-file project into the workdir, and to remove it again,
next to the floor's cost of one session measured in the same run, in TMPDIR
(where workdirs are made) and on tmpfs. Goal: copying under 5 ms.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
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

from pytest_recall.cases.model import make_case
from pytest_recall.cases.workspace_tree import CaseWorkspace, make_tree
from pytest_recall.sessions.rooms import remove_tree
from pytest_recall.sessions.workspace import WorkspaceKeeper

RECIPE = ROOT / "bench" / "recipe.sh"
WORKSPACE_FILES = 100
WORKSPACE_GOAL_S = 0.005
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


def workspace_copy_s(work: Path, repeat: int, steps: int = 200) -> tuple[float, float]:
    """Best of ``repeat`` mean costs of filling one step's workdir with a 100-file project, and of removing it."""
    files = {
        f"src/pkg{n % 10}/module_{n:03d}.py": f'"""Module {n}."""\n\n' + f"VALUE_{n} = {n}\n" * (20 + n % 40)
        for n in range(WORKSPACE_FILES - 2)
    }
    files.update({"pyproject.toml": '[project]\nname = "bench"\n', "tests/test_all.py": "def test():\n    pass\n"})
    case = make_case(
        case_id="bench",
        suite="bench",
        prompts=["one", "two"],
        expected={"id": "bench", "category": "c", "answer": "1234.56", "answer_kind": "money"},
        source="bench",
        workspace=CaseWorkspace(make_tree(files)),
    )
    keeper = WorkspaceKeeper(case, work, last_step=2)
    best_copy = best_remove = float("inf")
    for _ in range(repeat):
        copying = removing = 0.0
        for _ in range(steps):
            workdir = Path(tempfile.mkdtemp(dir=work))
            started = time.perf_counter()
            keeper.enter(1, workdir)
            copied = time.perf_counter()
            remove_tree(workdir)
            copying, removing = copying + copied - started, removing + time.perf_counter() - copied
        best_copy, best_remove = min(best_copy, copying / steps), min(best_remove, removing / steps)
    return best_copy, best_remove


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
                if agent == "echo" and metric == "wall":
                    floor_step = cost["floor"] / 2
        # Where the harness makes workdirs (TMPDIR), and on tmpfs when the machine has one: the disk decides.
        places = {"TMPDIR": work, "tmpfs": Path("/dev/shm")}
        for place, folder in places.items():
            if not folder.is_dir():
                continue
            with tempfile.TemporaryDirectory(dir=folder) as where:
                copy, remove = workspace_copy_s(Path(where), args.repeat, steps=20 if args.quick else 200)
            met = "met" if copy < WORKSPACE_GOAL_S else "NOT MET"
            label = f"{WORKSPACE_FILES}-file workspace"
            rows += [
                Row(
                    f"{label} copy, per step ({place})",
                    ms(copy),
                    (ms(floor_step), "-"),
                    "copy/floor",
                    ratio_of(copy, floor_step),
                    f"< {WORKSPACE_GOAL_S * 1000:g} ms {met}",
                ),
                # Removing the tree again is the workdir's removal, which every step pays; the files add to it.
                Row(
                    f"{label} removal, per step ({place})",
                    ms(remove),
                    (ms(floor_step), "-"),
                    "removal/floor",
                    ratio_of(remove, floor_step),
                ),
            ]
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
