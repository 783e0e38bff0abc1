"""Per-session overhead: what the harness adds to each case, next to the cheapest ways to run the same sessions.

Every case has two steps, so two sessions. The figure is the marginal cost
of one case, ``(T(large) - T(small)) / (large - small)``, so start-up costs
(pytest's import and collection, bash's own start) cancel out. Three ways to
run the same suite, each with the same agent:

- harness: ``python -m pytest <suite> --recall-cmd=AGENT -p no:cacheprovider -q``,
  a real run: collection, two sessions on a pty, judging, records, reports;
- floor: a bare Python loop, ``subprocess.run`` per session, each in a fresh
  ``mkdtemp`` directory removed afterwards: the least any harness can do;
- item: pytest with one test per case that runs the floor's sessions the
  floor's way: the least a harness built on one pytest item a case can do;
- recipe: ``bench/recipe.sh``, the task's run_case.sh recipe as a bash loop.

Three agents: ``/bin/echo 1234.56`` costs about a millisecond, so it exposes
the harness's own cost; a tiny Python script is closer to a real agent; the
bundled ``recall-notebook`` is a real one (SQLite, the solvers), for which the
recipe is left out. Goals (issue 60's gates): with the notebook, harness CPU at
most 1.10x the floor and at most 3 ms of wall time a session above it; the
echo agent kept from regressing (its own 1.5x goal is retired: isolation and
pytest's item alone cost 1.24-1.34x the floor); at least 2.5x faster than the
recipe. That last goal is 2% of the
notebook's marginal run time, so it is judged over 10 and 80 cases, by the
median over rounds of each round's own difference from the floor (see
:func:`paired_above_floor`); the best-of figure is printed beside it.

``--check`` exits 1 when the notebook's CPU is over 1.10x the floor or its
wall time over 3 ms a session above it, or, with ``--baseline-tree``, when the
echo agent's CPU above the floor is over 1.10x the baseline tree's (a
regression; without a baseline its ratio to the floor moves with the host,
1.8x to 2.6x, so it is printed, not checked): a check for a developer to run
before a change lands, never a timed test. ``--baseline-tree DIR`` adds
the harness of another checkout (its ``pytest_recall`` put first on
``PYTHONPATH``), interleaved with the rest, for a before/after in one run.

The last rows price a case's ``workspace/``: what the harness adds to one
step to copy a 100-file project into the workdir, and to remove it again,
next to the floor's cost of one session measured in the same run, in TMPDIR
(where workdirs are made) and on tmpfs. Goal: copying under 5 ms.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _common import (
    ANSWER,
    NOTEBOOK,
    PYTHON,
    ROOT,
    Row,
    Timing,
    best_of,
    clock_of,
    compile_trees,
    goal_text,
    ms,
    parse_args,
    print_table,
    pytest_argv,
    ratio_of,
    run_checked,
    scratch,
    timings_by_round,
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
# (small, large) suite sizes per agent: the Python agents are ~30x slower, so fewer cases keep the run short.
SIZES = {"echo": (40, 400), "python": (10, 100), "notebook": (10, 80)}
QUICK_SIZES = {"echo": (2, 6), "python": (2, 4), "notebook": (1, 2)}
# What --check holds the harness to: a real agent's CPU against the floor and its wall time above it; the
# echo agent's CPU above the floor against the baseline tree's, when one is given.
CHECK_NOTEBOOK_CPU_RATIO = 1.10
CHECK_NOTEBOOK_WALL_S = 0.003
CHECK_ECHO_REGRESSION = 1.10
# The echo agent's CPU ratio shown against the old goal, for the table only.
ECHO_CPU_RATIO_SHOWN = 1.5


def floor_run(suite: Path, argv: list[str]) -> None:
    """The least a harness can do: each session in a fresh directory, stdout kept, nothing else."""
    env = floor_env()
    for case in sorted(suite.iterdir()):
        floor_case(case, argv, env)


def floor_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "TRAP_MANIFEST"}


def floor_case(case: Path, argv: list[str], env: dict[str, str]) -> None:
    """One case the floor's way, with a scope folder (``RECALL_SCOPE_DIR``), where the notebook keeps its memory."""
    scope = tempfile.mkdtemp()
    env["RECALL_SCOPE_DIR"] = scope
    for step in ("step1.txt", "step2.txt"):
        prompt = (case / step).read_text()
        workdir = tempfile.mkdtemp()
        try:
            subprocess.run(
                [*argv, prompt], cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True
            )
        finally:
            shutil.rmtree(workdir)
    shutil.rmtree(scope)


# One test a case that runs its case with floor_case: pytest's own share of the harness's cost.
ITEM_TEST = """
import json, sys
from pathlib import Path

import pytest

sys.path.insert(0, {bench!r})
from overhead import floor_case, floor_env

ARGV = json.loads({argv!r})
ENV = floor_env()


@pytest.mark.parametrize("case", sorted(Path({suite!r}).iterdir()), ids=lambda path: path.name)
def test_case(case):
    floor_case(case, ARGV, ENV)
"""


def item_test(suite: Path, argv: list[str], folder: Path) -> Path:
    """The item way's test module for ``suite``, in ``folder``: apart from the suite, which the harness collects."""
    folder.mkdir()
    path = folder / "test_items.py"
    text = ITEM_TEST.format(argv=json.dumps(argv), suite=str(suite), bench=str(Path(__file__).resolve().parent))
    path.write_text(text, encoding="utf-8")
    return path


def item_run(test: Path) -> None:
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    run_checked(pytest_argv(test), env=env)


def harness_run(suite: Path, command: str, tree: str | None = None) -> None:
    """A real run of the suite; with ``tree``, that checkout's harness. Failed cases are fine (the notebook's)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (tree, env.get("PYTHONPATH"))))
    # The plugin named, not found by its entry point: the installed entry point names this checkout's
    # module, which another checkout may keep elsewhere. Every harness run loads the same plugins this way.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    root = Path(tree) if tree is not None else ROOT
    plugin = (
        "pytest_recall.plugin.hooks" if (root / "pytest_recall/plugin/hooks.py").exists() else "pytest_recall.plugin"
    )
    argv = pytest_argv(suite.parent, "-p", plugin, f"--recall-cmd={command}")
    run_checked(argv, env=env, ok_codes=(0, 1))


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


def _rows(label: str, cost: dict[str, float], floor_goal: float, before: bool) -> list[Row]:
    """The goals, then how the harness's cost above the floor compares with the recipe's (and the baseline tree's)."""
    harness, floor, recipe = cost["harness"], cost["floor"], cost.get("recipe", math.nan)
    baselines: tuple[str, ...] = (ms(floor), ms(cost["item"]), ms(recipe) if "recipe" in cost else "-")
    baselines += (ms(cost["before"]),) if before else ()
    versus_floor = ratio_of(harness, floor)
    rows = [
        Row(label, ms(harness), baselines, "harness/floor", versus_floor, goal_text(versus_floor, at_most=floor_goal)),
        # What pytest alone costs: the floor's sessions, one test a case.
        Row(label, ms(harness), baselines, "item/floor", ratio_of(cost["item"], floor)),
        # What the harness adds to that least: reading, isolating, running, judging and recording a case.
        Row(label, ms(harness), baselines, "harness/item", ratio_of(harness, cost["item"])),
    ]
    dashes = ("-",) * len(baselines)
    if "recipe" in cost:
        versus_recipe = ratio_of(recipe, harness)
        rows.append(
            Row(label, ms(harness), baselines, "recipe/harness", versus_recipe, goal_text(versus_recipe, at_least=2.5))
        )
    above = ms(harness - floor)
    if "recipe" in cost:
        rows.append(
            Row(
                f"{label}, above floor",
                above,
                ("-", "-", ms(recipe - floor), *dashes[3:]),
                "recipe/harness",
                ratio_of(recipe - floor, harness - floor),
            )
        )
    if before:
        rows.append(
            Row(
                f"{label}, above floor",
                above,
                ("-", "-", "-", ms(cost["before"] - floor)),
                "before/harness",
                ratio_of(cost["before"] - floor, harness - floor),
            )
        )
    return rows


def paired_above_floor(rounds: dict[str, list[Timing]], way: str, small: int, large: int) -> list[float]:
    """Per round, ``way``'s marginal wall time a session minus the floor's in the same round.

    A real agent's own time drifts with the machine by more than the 3 ms
    goal over a run of seconds. Four best-of times taken from different
    rounds carry that drift into their difference; the two ways measured
    back to back in one round share it, and it cancels.
    """

    def marginal(name: str, index: int) -> float:
        return (rounds[f"{name} {large}"][index].wall - rounds[f"{name} {small}"][index].wall) / (large - small)

    return [(marginal(way, i) - marginal("floor", i)) / 2 for i in range(len(rounds[f"floor {small}"]))]


def _met(held: bool) -> str:
    return "met" if held else "NOT MET"


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true", help="exit 1 when the harness is over its goals (see above)")
    parser.add_argument("--baseline-tree", help="also time the harness of this checkout, for a before/after")
    parser.add_argument("--agents", default=",".join(SIZES), help=f"which agents, comma-separated ({', '.join(SIZES)})")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], more=_options)
    sizes = QUICK_SIZES if args.quick else SIZES
    before = args.baseline_tree is not None
    compile_trees(None, args.baseline_tree)
    rows: list[Row] = []
    raw: list[str] = []
    failed: list[str] = []
    floor_step = math.nan
    with scratch("overhead") as work:
        agent_script = write_script(work, "agent.py", f"print({ANSWER!r})\n")
        known = {"echo": ["/bin/echo", ANSWER], "python": [PYTHON, "-S", str(agent_script)], "notebook": [NOTEBOOK]}
        agents = {name: known[name] for name in args.agents.split(",")}
        out = work / "recipe-out"
        out.mkdir()
        for agent, argv in agents.items():
            small, large = sizes[agent]
            suites = {n: write_trivial_cases(work / f"{agent}-{n}", n) for n in (small, large)}
            command = shlex.join(argv)
            ways = ["harness", "floor", "item"] + ([] if agent == "notebook" else ["recipe"])
            ways += ["before"] if before else []
            variants = {}
            for n, suite in suites.items():
                test = item_test(suite, argv, work / f"{agent}-{n}-item")
                variants[f"harness {n}"] = clock_of(harness_run, suite, command)
                variants[f"floor {n}"] = clock_of(floor_run, suite, argv)
                variants[f"item {n}"] = clock_of(item_run, test)
                if "recipe" in ways:
                    variants[f"recipe {n}"] = clock_of(run_checked, ["bash", str(RECIPE), str(suite), str(out), *argv])
                if before:
                    variants[f"before {n}"] = clock_of(harness_run, suite, command, args.baseline_tree)
            rounds = timings_by_round(variants, args.repeat)
            best = best_of(rounds)
            raw.append(f"{agent:<8} " + "  ".join(f"{name} {t.wall:.3f}s/{t.cpu:.3f}s" for name, t in best.items()))
            for metric in ("wall", "cpu"):
                cost = {
                    way: (getattr(best[f"{way} {large}"], metric) - getattr(best[f"{way} {small}"], metric))
                    / (large - small)
                    for way in ways
                }
                goal = (
                    CHECK_NOTEBOOK_CPU_RATIO
                    if agent == "notebook"
                    else ECHO_CPU_RATIO_SHOWN
                    if metric == "cpu"
                    else 2.0
                )
                rows += _rows(f"{agent} agent, {metric}", cost, goal, before)
                if agent == "echo" and metric == "wall":
                    floor_step = cost["floor"] / 2
                if agent == "echo" and metric == "cpu" and not ratio_of(cost["harness"], cost["floor"]) > 0:
                    failed.append("echo agent CPU: noise, no marginal cost measured (more cases: drop --quick)")
                elif agent == "echo" and metric == "cpu" and before:
                    regression = ratio_of(cost["harness"] - cost["floor"], cost["before"] - cost["floor"])
                    if regression > CHECK_ECHO_REGRESSION:
                        failed.append(f"echo agent CPU above the floor {regression:.2f}x the baseline tree's")
                if (
                    agent == "notebook"
                    and metric == "cpu"
                    and cost["harness"] > CHECK_NOTEBOOK_CPU_RATIO * cost["floor"]
                ):
                    failed.append(f"notebook agent CPU {ratio_of(cost['harness'], cost['floor']):.2f}x the floor")
                if agent == "notebook" and metric == "wall":
                    by_round = paired_above_floor(rounds, "harness", small, large)
                    above = statistics.median(by_round)
                    # Each row's "before" cell: the baseline tree's figure, worked out the same way.
                    paired_before: tuple[str, ...] = ()
                    best_before: tuple[str, ...] = ()
                    if before:
                        paired_before = (ms(statistics.median(paired_above_floor(rounds, "before", small, large))),)
                        best_before = (ms((cost["before"] - cost["floor"]) / 2),)
                    rows += [
                        Row(
                            "notebook agent, wall above floor a session, paired",
                            ms(above),
                            ("-", "-", "-", *paired_before),
                            "",
                            math.nan,
                            f"<= {CHECK_NOTEBOOK_WALL_S * 1000:g} ms {_met(above <= CHECK_NOTEBOOK_WALL_S)}",
                        ),
                        Row(
                            "notebook agent, wall above floor a session, best of",
                            ms((cost["harness"] - cost["floor"]) / 2),
                            ("-", "-", "-", *best_before),
                            "",
                            math.nan,
                        ),
                    ]
                    raw.append(
                        "notebook harness above floor a session, by round (ms): "
                        + " ".join(f"{value * 1000:.2f}" for value in by_round)
                    )
                    if above > CHECK_NOTEBOOK_WALL_S:
                        failed.append(f"notebook agent {above * 1000:.2f} ms wall a session above the floor")
        # Where the harness makes workdirs (TMPDIR), and on tmpfs when the machine has one: the disk decides.
        places = {"TMPDIR": work, "tmpfs": Path("/dev/shm")} if not args.check and "echo" in agents else {}
        for place, folder in places.items():
            if not folder.is_dir():
                continue
            with tempfile.TemporaryDirectory(dir=folder) as where:
                copy, remove = workspace_copy_s(Path(where), args.repeat, steps=20 if args.quick else 200)
            met = "met" if copy < WORKSPACE_GOAL_S else "NOT MET"
            label = f"{WORKSPACE_FILES}-file workspace"
            # The floor's session in the floor's column; no recipe, nor a before, for these rows.
            beside = (ms(floor_step), "-", "-") + (("-",) if before else ())
            rows += [
                Row(
                    f"{label} copy, per step ({place})",
                    ms(copy),
                    beside,
                    "copy/floor",
                    ratio_of(copy, floor_step),
                    f"< {WORKSPACE_GOAL_S * 1000:g} ms {met}",
                ),
                # Removing the tree again is the workdir's removal, which every step pays; the files add to it.
                Row(
                    f"{label} removal, per step ({place})",
                    ms(remove),
                    beside,
                    "removal/floor",
                    ratio_of(remove, floor_step),
                ),
            ]
    print_table(
        f"per-session overhead: marginal cost of one two-session case, best of {args.repeat}",
        ("floor", "item", "recipe", *(["before"] if before else [])),
        rows,
    )
    print("\nraw best times, wall/cpu (cases in suite, seconds):")
    for line in raw:
        print(f"  {line}")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} on {os.cpu_count()} cores")
    if args.check and failed:
        print("\n--check: over the goal: " + "; ".join(failed))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
