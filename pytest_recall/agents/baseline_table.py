"""The baseline table: every shipped baseline's score on every bundled generated suite, per category.

A suite measures memory only where no agent without memory scores well, so
the no-memory baselines (:mod:`pytest_recall.agents.no_memory`, and the audit
suite's own guessers in :mod:`pytest_recall.agents.baselines`) are played
over every bundled ``suite.toml`` suite, next to the notebook, whose 1.000
shows each case can be solved. The sessions are played in process exactly as
the harness plays them: a new working directory per step filled by the
harness's own workspace keeper, feedback judged for real, the last step
judged by the harness's judge. ::

    python -m pytest_recall.agents.baseline_table              # the Markdown table of docs/cases.md
    python -m pytest_recall.agents.baseline_table coding       # one bundled suite
    python -m pytest_recall.agents.baseline_table --dir DIR    # every suite.toml folder in DIR
    python -m pytest_recall.agents.baseline_table --json       # the figures as JSON

The project's tests hold every figure to its bound and run some baselines
through the real harness to check these figures are the harness's.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_recall.agents import baselines, coding_solver, no_memory
from pytest_recall.agents import notebook as notebook_agent
from pytest_recall.cases import Case, read_toml
from pytest_recall.scoring import feedback_text, judge_answer
from pytest_recall.sessions import WorkspaceKeeper, uses_workspace
from pytest_recall.suites import SUITE_FILE, suite_cases
from pytest_recall.suites import bundled_suites as bundled_folders

# An agent for the table: (prompt, its workdir, the case's scope directory) -> stdout.
Agent = Callable[[str, Path, Path], str]
# Makes the agent that plays one case: a new one per case, so nothing leaks between cases.
AgentFactory = Callable[[], Agent]
# A bound every no-memory baseline must keep, per category (the floor).
BOUND = 0.10
# Where an always-abstain answer is right by construction; the report's false_abstention_rate exposes it.
ABSTAIN_EXEMPT = frozenset({("plain", "abstention")})


def _no_memory(name: str) -> AgentFactory:
    return lambda: lambda prompt, workdir, scope: no_memory.respond(name, prompt, workdir)


def _audit_baseline(name: str, version: int) -> AgentFactory:
    return lambda: lambda prompt, workdir, scope: baselines.respond(name, prompt, scope, version)


def _notebook() -> Agent:
    """The notebook agent of one case, its notes kept in memory across the case's steps (no disk sync per note)."""
    kept = notebook_agent.Notebook(None)

    def respond(prompt: str, workdir: Path, scope: Path) -> str:
        if coding_solver.is_session(prompt):
            return coding_solver.respond(prompt, kept, workdir)
        return notebook_agent.respond(prompt, kept)

    return respond


def agents_for(settings: Mapping[str, Any]) -> dict[str, AgentFactory]:
    """The baselines that apply to a suite, and the notebook last as the reference that solves it."""
    agents = {name: _no_memory(name) for name in no_memory.NAMES}
    if settings.get("family") == "audit":
        version = int(settings.get("version", 2))
        agents.update({name: _audit_baseline(name, version) for name in baselines.BASELINES if name != "null"})
    agents["notebook"] = _notebook
    return agents


def play(agent: Agent, case: Case, root: Path) -> float:
    """One case's score for ``agent``, its steps run one after another as the harness runs them.

    ``root`` is a new, empty directory for this case alone. Only a case with
    a workspace gets working directories on disk: the other families' agents
    never look at theirs, and a busy disk makes thousands of them slow.
    """
    scope, harness = root / "scope", root / "harness"
    last = case.steps[-1].number
    keeper = None
    if uses_workspace(case):
        harness.mkdir(parents=True)
        keeper = WorkspaceKeeper(case, harness, last_step=last)
    stdout = ""
    for step in case.steps:
        prompt = step.prompt
        if step.feedback is not None:
            prompt = feedback_text(judge_answer(stdout, step.feedback), step.feedback) + prompt
        workdir = root / f"step{step.number}"
        if keeper is not None:
            workdir.mkdir()
            keeper.enter(step.number, workdir)
        stdout = agent(prompt, workdir, scope)
        if keeper is not None:
            keeper.leave(step.number, workdir)
    snapshot = keeper.snapshot if keeper is not None else None
    return float(judge_answer(stdout, case.expected, snapshot=snapshot)["score"])


def scratch_dir() -> str | None:
    """Where the workdirs go: ``$TMPDIR`` if set, else shared memory where Linux has it, else the default.

    A coding suite's table makes thousands of small workspaces; on a busy
    disk that is minutes, in memory a second.
    """
    if os.environ.get("TMPDIR"):
        return None
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def score_suite(agent: AgentFactory, cases: Sequence[Case]) -> dict[str, float]:
    """The mean score overall and per category."""
    by_category: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="recall-baselines-", dir=scratch_dir()) as tmp:
        for number, case in enumerate(cases):
            score = play(agent(), case, Path(tmp) / str(number))
            by_category.setdefault(str(case.category), []).append(score)
    every = [score for scores in by_category.values() for score in scores]
    row = {"overall": sum(every) / len(every) if every else 0.0}
    row.update({category: sum(s) / len(s) for category, s in by_category.items()})
    return row


def bundled_suites() -> dict[str, Path]:
    """Every bundled generated suite by name: the bundled folders that hold a suite.toml."""
    return {name: folder for name, folder in bundled_folders().items() if (folder / SUITE_FILE).is_file()}


def table(suites: Mapping[str, Path] | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """suite -> agent -> overall and per-category score."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, folder in (suites or bundled_suites()).items():
        cases = list(suite_cases(folder, f"{name}/{SUITE_FILE}"))
        settings = read_toml(folder / SUITE_FILE, f"{name}/{SUITE_FILE}")
        out[name] = {agent: score_suite(play_as, cases) for agent, play_as in agents_for(settings).items()}
    return out


def over_bound(figures: Mapping[str, Mapping[str, Mapping[str, float]]]) -> list[str]:
    """Every (suite, baseline, category) above the bound, but the always-abstain answer on abstention."""
    return [
        f"{suite} {agent} {category} {score:.3f}"
        for suite, rows in figures.items()
        for agent, row in rows.items()
        if agent != "notebook"
        for category, score in row.items()
        if category != "overall" and score > BOUND and (agent, category) not in ABSTAIN_EXEMPT
    ]


def format_markdown(figures: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    """One Markdown table per suite: a row per agent, a column per category."""
    blocks = []
    for suite, rows in figures.items():
        categories = [c for c in next(iter(rows.values())) if c != "overall"]
        lines = [
            f"`{suite}`\n",
            "| agent | overall | " + " | ".join(f"`{c}`" for c in categories) + " |",
            "|---|---|" + "---|" * len(categories),
        ]
        for agent, row in rows.items():
            cells = [f"{row['overall']:.3f}", *(f"{row[c]:.3f}" for c in categories)]
            lines.append(f"| {agent} | " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def suites_in(folder: Path) -> dict[str, Path]:
    """Every generated suite in ``folder``: its subfolders that hold a suite.toml."""
    return {sub.name: sub for sub in sorted(folder.iterdir()) if (sub / SUITE_FILE).is_file()}


USAGE = "usage: python -m pytest_recall.agents.baseline_table [--json] [--dir DIR] [SUITE ...]"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    suites = bundled_suites()
    if "--dir" in args:
        at = args.index("--dir")
        if at + 1 >= len(args) or not Path(args[at + 1]).is_dir():
            print(f"baseline table: --dir needs a folder of suites\n{USAGE}", file=sys.stderr)
            return 2
        suites = suites_in(Path(args[at + 1]))
        del args[at : at + 2]
    chosen = [a for a in args if not a.startswith("--")]
    unknown = sorted(set(chosen) - set(suites)) + sorted(a for a in args if a.startswith("--") and a != "--json")
    if unknown:
        print(f"baseline table: no generated suite or option {', '.join(unknown)}\n{USAGE}", file=sys.stderr)
        return 2
    if chosen:
        suites = {name: suites[name] for name in chosen}
    figures = table(suites)
    print(json.dumps(figures, indent=1, sort_keys=True) if "--json" in args else format_markdown(figures), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
