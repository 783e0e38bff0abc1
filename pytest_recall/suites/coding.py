"""The coding suite: a fresh session must apply what an earlier one learned, in the files it writes.

Each case has a small Python project as its workspace. Step 1 teaches
something in the course of a small task; the last step gives a new task in
which it must be applied, without restating it; the files judge reads what
the last session left. Seven categories rotate: ``convention`` (a rule with
a hard-to-guess value), ``decision`` (a named choice and its reason),
``failed_path`` (an approach that failed), ``superseded`` (a rule replaced by
a later session), ``stale_memory`` (a fact a later workspace no longer
holds), ``scoped`` (a rule for another project, which must not be applied)
and ``carry`` (``convention`` with ``workspace = "carry"``).

Every value is drawn from a large seeded set and every alternative is drawn
uniformly, so a guess is right only as often as chance. The same seed and
index give the same bytes on every machine.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pytest_recall.cases import Case, CaseWorkspace, make_case, make_tree
from pytest_recall.suites.coding_words import (
    ADJECTIVES,
    ANIMALS,
    DECISIONS,
    FAILURES,
    HEADER_LABELS,
    NOUNS,
    REASONS,
    VARIANTS,
    VERBS,
)
from pytest_recall.suites.rng import SplitMix64

CATEGORIES = ("convention", "decision", "failed_path", "superseded", "stale_memory", "scoped", "carry")
RULE_KINDS = ("header", "prefix", "tag", "logger", "registry")
# 2: carry shows only a convention session 1 superseded, scoped pairs the rule's own project with another,
# decision and failed_path have two things to get right. 1: the first cases, byte for byte.
VERSION = 2
VERSIONS = (1, 2)

TASK_END = "Follow the project's rules. Reply DONE when the files are written."
NOTE_ONLY = "There is no code to write in this session: keep the rule for the sessions to come. Reply DONE."
JOBS_JOINER = ", and to "
N_HELPERS = 12


@dataclass(frozen=True, slots=True)
class Rule:
    """A project rule: its kind and its value (a header line, a prefix, a tag, a logger name, a registry code)."""

    kind: str
    value: str

    def sentence(self, pkg: str) -> str:
        where = f"every new module in src/{pkg}/"
        if self.kind == "header":
            return f'Project rule: {where} starts with the line "{self.value}".'
        if self.kind == "prefix":
            return f'Project rule: {where} has a file name that starts with "{self.value}".'
        if self.kind == "tag":
            return f'Project rule: {where} has a module docstring holding the tag "{self.value}".'
        if self.kind == "logger":
            return f'Project rule: {where} defines logger = logging.getLogger("{self.value}").'
        return (
            f"Project rule: {where} is registered in pyproject.toml, in the table [tool.{pkg}.modules], "
            f'as <module name> = "{self.value}".'
        )


@dataclass(frozen=True, slots=True)
class Task:
    stem: str
    function: str
    returns: str
    needs: tuple[str, ...] = ()

    def sentence(self, pkg: str) -> str:
        text = (
            f"Task: add a module {self.stem} to package {pkg} (src/{pkg}/) "
            f"with a function {self.function}() that returns {self.returns}."
        )
        return f"{text} The module needs to {JOBS_JOINER.join(self.needs)}." if self.needs else text


class _Draw:
    """The seeded draws of one case."""

    def __init__(self, seed: int, index: int, version: int = 1) -> None:
        parts = (seed, index, 0xC0D1) if version == 1 else (seed, index, 0xC0D1, version)
        self.rng = SplitMix64.from_parts(*parts)
        self.used: set[str] = set()

    def pick(self, items: tuple[str, ...] | list[str]) -> str:
        return self.rng.choice(items)

    def number(self, low: int, high: int) -> int:
        return self.rng.between(low, high)

    def fresh(self, make: Callable[[], str]) -> str:
        """A drawn name not used before in this case."""
        for _ in range(100):
            name = str(make())
            if name not in self.used:
                self.used.add(name)
                return name
        raise ValueError("coding suite: could not draw a fresh name")

    def code(self) -> str:
        return f"{self.pick(ADJECTIVES)}-{self.pick(ANIMALS)}-{self.number(1000, 9999)}"

    def rule(self, kind: str) -> Rule:
        if kind == "header":
            return Rule(kind, f"# {self.pick(HEADER_LABELS)}: team-{self.code()}")
        if kind == "prefix":
            letters = "abcdefghjkmnpqrstuvwxyz"
            return Rule(kind, f"{self.pick(list(letters))}{self.pick(list(letters))}{self.number(2, 9)}_")
        if kind == "tag":
            return Rule(kind, f":component: {self.pick(NOUNS)}-{self.number(1000, 9999)}")
        if kind == "logger":
            return Rule(kind, f"{self.pick(ANIMALS)}.{self.pick(NOUNS)}.{self.pick(ADJECTIVES)}{self.number(10, 99)}")
        return Rule(kind, f"{self.pick(ANIMALS)[:3].upper()}-{self.number(1000, 9999)}")

    def task(self, needs: tuple[str, ...] = (), returns: str | None = None) -> Task:
        stem = self.fresh(lambda: f"{self.pick(VERBS)}_{self.pick(NOUNS)}")
        function = self.fresh(lambda: f"{self.pick(VERBS)}_{self.pick(NOUNS)}_{self.pick(NOUNS)}")
        return Task(stem, function, returns or str(self.number(100, 99999)), needs)


@dataclass(frozen=True, slots=True)
class Project:
    name: str
    pkg: str
    helpers: tuple[str, ...]

    def header(self) -> str:
        return f"Project {self.name} (package {self.pkg})."


def _project(draw: _Draw, index: int) -> Project:
    noun = draw.fresh(lambda: draw.pick(NOUNS))
    pkg = f"{noun}{index + 1}{draw.pick(list('abcdefghk'))}"
    helpers = tuple(
        draw.fresh(lambda: f"{draw.pick(VERBS)}_{draw.pick(NOUNS)}_{draw.pick(VARIANTS)}") for _ in range(N_HELPERS)
    )
    return Project(pkg.replace("_", "-") + "-service", pkg, helpers)


def workspace_files(project: Project, draw: _Draw, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A small Python project: a package of a few modules, tests and a pyproject.toml."""
    pkg = project.pkg
    helper_text = "".join(
        f'\n\ndef {name}(source):\n    """Helper {name}."""\n    return []\n' for name in project.helpers
    )
    files = {
        "pyproject.toml": (
            f'[project]\nname = "{project.name}"\nversion = "0.{draw.number(1, 40)}.{draw.number(0, 9)}"\n'
            f'requires-python = ">=3.10"\n\n[tool.ruff]\nline-length = {draw.number(88, 120)}\n'
        ),
        "README.md": f"# {project.name}\n\nThe {pkg} package.\n",
        f"src/{pkg}/__init__.py": f'"""The {pkg} package."""\n',
        f"src/{pkg}/core.py": f'"""Core of {pkg}."""\n\n\ndef version_tuple():\n    return (0, 1)\n',
        f"src/{pkg}/helpers.py": f'"""Helpers shared by the modules of {pkg}."""{helper_text}',
        "tests/test_core.py": (
            f"from {pkg}.core import version_tuple\n\n\ndef test_version():\n    assert version_tuple()\n"
        ),
    }
    files.update(extra or {})
    return dict(sorted(files.items()))


def module_path(pkg: str, task: Task, rules: tuple[Rule, ...]) -> str:
    prefix = next((r.value for r in rules if r.kind == "prefix"), "")
    return f"src/{pkg}/{prefix}{task.stem}.py"


def task_checks(pkg: str, task: Task, rules: tuple[Rule, ...]) -> list[dict[str, object]]:
    """What the files must show for a task done under ``rules``."""
    path = module_path(pkg, task, rules)
    checks: list[dict[str, object]] = [
        {"path": path, "matches": rf"^def {task.function}\(", "flags": "m"},
        {"path": path, "contains": f"return {task.returns}"},
    ]
    for rule in rules:
        if rule.kind == "header":
            checks.append({"path": path, "matches": f"^{re.escape(rule.value)}$", "flags": "m"})
        elif rule.kind == "prefix":
            checks.append({"path": f"src/{pkg}/{task.stem}.py", "absent": True})
        elif rule.kind in ("tag", "logger"):
            text = rule.value if rule.kind == "tag" else f'logging.getLogger("{rule.value}")'
            checks.append({"path": path, "contains": text})
        else:
            checks.append({"path": "pyproject.toml", "toml": ["tool", pkg, "modules", task.stem], "equals": rule.value})
    return checks


def broken_rule_checks(pkg: str, task: Task, rule: Rule) -> list[dict[str, object]]:
    """What the files must not show: a rule that is not (or no longer) to be applied."""
    if rule.kind == "header":
        return [{"path": module_path(pkg, task, ()), "not_contains": rule.value}]
    if rule.kind == "prefix":
        return [{"path": f"src/{pkg}/{rule.value}{task.stem}.py", "absent": True}]
    if rule.kind == "tag":
        return [{"path": module_path(pkg, task, ()), "not_contains": rule.value}]
    if rule.kind == "logger":
        return [{"path": module_path(pkg, task, ()), "not_contains": f'getLogger("{rule.value}")'}]
    # A registry entry is one key: the new value there already says the old one is not.
    return []


def _session(project: Project, teaching: list[str], task: Task) -> str:
    parts = [project.header(), "\n".join(teaching), f"{task.sentence(project.pkg)}\n{TASK_END}"]
    return "\n\n".join(part for part in parts if part) + "\n"


Built = tuple[list[str], list[dict[str, object]], CaseWorkspace]
TESTS_UNCHANGED: dict[str, object] = {"path": "tests/", "unchanged": True}


def _convention(project: Project, draw: _Draw, index: int) -> Built:
    """A rule taught in step 1, to follow in the last step's new module (also the carry category)."""
    pkg = project.pkg
    rule = draw.rule(draw.pick(RULE_KINDS))
    first, last = draw.task(), draw.task()
    prompts = [_session(project, [rule.sentence(pkg)], first), _session(project, [], last)]
    return (
        prompts,
        [*task_checks(pkg, last, (rule,)), TESTS_UNCHANGED],
        CaseWorkspace(make_tree(workspace_files(project, draw))),
    )


def _decision(project: Project, draw: _Draw, index: int) -> Built:
    """A choice between two libraries and its reason: the new module imports the chosen one."""
    pkg = project.pkg
    purpose = draw.pick(list(DECISIONS))
    chosen, rejected = draw.rng.shuffled(DECISIONS[purpose])[:2]
    adr = f"ADR-{draw.number(100, 9999):04d}"
    teaching = (
        f"Decision {adr}: to {purpose}, this project uses {chosen}, not {rejected}, because "
        f"{draw.pick(REASONS)}. Code that relies on this decision imports {chosen} and cites {adr} in a comment."
    )
    first, last = draw.task(needs=(purpose,)), draw.task(needs=(purpose,))
    path = module_path(pkg, last, ())
    checks: list[dict[str, object]] = [
        *task_checks(pkg, last, ()),
        {"path": path, "matches": f"^import {chosen}$", "flags": "m"},
        {"path": path, "not_contains": f"import {rejected}"},
        {"path": path, "contains": adr},
        TESTS_UNCHANGED,
    ]
    prompts = [_session(project, [teaching], first), _session(project, [], last)]
    return prompts, checks, CaseWorkspace(make_tree(workspace_files(project, draw)))


def _failed_path(project: Project, draw: _Draw, index: int) -> Built:
    """A helper that failed and one that works: the new module calls the one that works."""
    pkg = project.pkg
    verb, noun = draw.pick(VERBS), draw.pick(NOUNS)
    bad, good = draw.rng.shuffled(project.helpers)[:2]
    job = f"{verb} the {noun} records"
    needs = f"{job}, with one of the helpers in src/{pkg}/helpers.py"
    teaching = (
        f"From the last attempt at this kind of task: to {job}, calling helpers.{bad}() was tried and failed: "
        f"{draw.pick(FAILURES)}. Calling helpers.{good}() does it correctly."
    )
    first, last = draw.task(needs=(needs,)), draw.task(needs=(needs,))
    path = module_path(pkg, last, ())
    checks: list[dict[str, object]] = [
        *task_checks(pkg, last, ()),
        {"path": path, "contains": f"helpers.{good}("},
        {"path": path, "not_contains": f"helpers.{bad}("},
        {"path": f"src/{pkg}/helpers.py", "unchanged": True},
        TESTS_UNCHANGED,
    ]
    prompts = [_session(project, [teaching], first), _session(project, [], last)]
    return prompts, checks, CaseWorkspace(make_tree(workspace_files(project, draw)))


def _rule_and_successor(draw: _Draw) -> tuple[Rule, Rule]:
    """A rule and the rule of the same kind that replaces it, with another value."""
    kind = draw.pick(RULE_KINDS)
    old = draw.rule(kind)
    new = draw.rule(kind)
    while new.value == old.value:
        new = draw.rule(kind)
    return old, new


def _superseded(project: Project, draw: _Draw, index: int) -> Built:
    """A rule, then a later session that replaces it: only the latest rule holds."""
    pkg = project.pkg
    old, new = _rule_and_successor(draw)
    tasks = [draw.task(), draw.task(), draw.task()]
    change = f"Rule change: this replaces the earlier rule of the same kind. {new.sentence(pkg)}"
    prompts = [
        _session(project, [old.sentence(pkg)], tasks[0]),
        _session(project, [change], tasks[1]),
        _session(project, [], tasks[2]),
    ]
    checks: list[dict[str, object]] = [*task_checks(pkg, tasks[2], (new,)), *broken_rule_checks(pkg, tasks[2], old)]
    return prompts, [*checks, TESTS_UNCHANGED], CaseWorkspace(make_tree(workspace_files(project, draw)))


def _stale_memory(project: Project, draw: _Draw, index: int) -> Built:
    """A rule and where a constant lives; a teammate moves it: the workspace wins over memory."""
    pkg = project.pkg
    rule = draw.rule(draw.pick(("header", "tag", "logger")))
    constant = draw.fresh(lambda: f"{draw.pick(NOUNS).upper()}_{draw.pick(('LIMIT', 'RATE', 'CODE', 'KEY'))}")
    old_module = draw.fresh(lambda: f"{draw.pick(NOUNS)}_settings")
    new_module = draw.fresh(lambda: f"{draw.pick(NOUNS)}_config")
    value = draw.number(100, 99999)
    first, last = draw.task(returns=constant), draw.task(returns=constant)
    teaching = f"Fact: the constant {constant} lives in src/{pkg}/{old_module}.py; new modules import it from there."
    before = workspace_files(project, draw, {f"src/{pkg}/{old_module}.py": f"{constant} = {value}\n"})
    moved = dict(before)
    del moved[f"src/{pkg}/{old_module}.py"]
    moved[f"src/{pkg}/{new_module}.py"] = f'"""Settings moved here by a teammate."""\n\n{constant} = {value}\n'
    path = module_path(pkg, last, ())
    checks: list[dict[str, object]] = [
        *task_checks(pkg, last, (rule,)),
        {"path": path, "contains": f"from {pkg}.{new_module} import {constant}"},
        {"path": path, "not_contains": f"from {pkg}.{old_module} import"},
        TESTS_UNCHANGED,
    ]
    prompts = [_session(project, [rule.sentence(pkg), teaching], first), _session(project, [], last)]
    workspace = CaseWorkspace(make_tree(before), {2: make_tree(dict(sorted(moved.items())))})
    return prompts, checks, workspace


def _scoped(project: Project, draw: _Draw, index: int) -> Built:
    """A rule for project A; the last task is in project B, where it must not be applied."""
    rule = draw.rule(draw.pick(("header", "prefix", "tag", "logger")))
    other = _project(draw, index)
    first, last = draw.task(), draw.task()
    teaching = f"{rule.sentence(project.pkg)} This rule holds in project {project.name} only."
    prompts = [_session(project, [teaching], first), _session(other, [], last)]
    scoped_checks: list[dict[str, object]] = [
        *task_checks(other.pkg, last, ()),
        *broken_rule_checks(other.pkg, last, rule),
        TESTS_UNCHANGED,
    ]
    workspace = CaseWorkspace(make_tree(workspace_files(project, draw)), {2: make_tree(workspace_files(other, draw))})
    return prompts, scoped_checks, workspace


def _decisions_v2(project: Project, draw: _Draw, index: int) -> Built:
    """Two decisions, each between two of five libraries: the new module imports both chosen ones and cites both.

    A guess of the libraries alone is right once in 25 cases; the decision ids make it never.
    """
    pkg = project.pkg
    purposes = draw.rng.shuffled(list(DECISIONS))[:2]
    teaching, checks = [], []
    adrs = [draw.number(100, 4999), draw.number(5000, 9999)]  # two ids that cannot collide
    for purpose, number in zip(purposes, adrs, strict=True):
        chosen, rejected = draw.rng.shuffled(DECISIONS[purpose])[:2]
        adr = f"ADR-{number:04d}"
        teaching.append(
            f"Decision {adr}: to {purpose}, this project uses {chosen}, not {rejected}, because "
            f"{draw.pick(REASONS)}. Code that relies on this decision imports {chosen} and cites {adr} in a comment."
        )
        checks.append((chosen, rejected, adr))
    first, last = draw.task(needs=tuple(purposes)), draw.task(needs=tuple(purposes))
    path = module_path(pkg, last, ())
    expected: list[dict[str, object]] = [*task_checks(pkg, last, ())]
    for chosen, rejected, adr in checks:
        expected += [
            {"path": path, "matches": f"^import {chosen}$", "flags": "m"},
            {"path": path, "not_contains": f"import {rejected}"},
            {"path": path, "contains": adr},
        ]
    prompts = [_session(project, [" ".join(teaching)], first), _session(project, [], last)]
    return prompts, [*expected, TESTS_UNCHANGED], CaseWorkspace(make_tree(workspace_files(project, draw)))


def _failed_paths_v2(project: Project, draw: _Draw, index: int) -> Built:
    """Two jobs, each with a helper that failed and one that works: a guess is right about once in 130 cases."""
    pkg = project.pkg
    helpers = draw.rng.shuffled(project.helpers)[:4]
    verbs, nouns = draw.rng.shuffled(VERBS)[:2], draw.rng.shuffled(NOUNS)[:2]
    jobs = [f"{verb} the {noun} records" for verb, noun in zip(verbs, nouns, strict=True)]
    pairs = [(helpers[0], helpers[1]), (helpers[2], helpers[3])]
    teaching = " ".join(
        f"From the last attempt at this kind of task: to {job}, calling helpers.{bad}() was tried and failed: "
        f"{draw.pick(FAILURES)}. Calling helpers.{good}() does it correctly."
        for job, (bad, good) in zip(jobs, pairs, strict=True)
    )
    needs = tuple(f"{job}, with one of the helpers in src/{pkg}/helpers.py" for job in jobs)
    first, last = draw.task(needs=needs), draw.task(needs=needs)
    path = module_path(pkg, last, ())
    checks: list[dict[str, object]] = [*task_checks(pkg, last, ())]
    for bad, good in pairs:
        checks += [{"path": path, "contains": f"helpers.{good}("}, {"path": path, "not_contains": f"helpers.{bad}("}]
    checks += [{"path": f"src/{pkg}/helpers.py", "unchanged": True}, TESTS_UNCHANGED]
    prompts = [_session(project, [teaching], first), _session(project, [], last)]
    return prompts, checks, CaseWorkspace(make_tree(workspace_files(project, draw)))


def monorepo_files(projects: tuple[Project, ...], draw: _Draw) -> dict[str, str]:
    """One repository holding several projects, each its own package and tests."""
    files = workspace_files(projects[0], draw)
    listing = "".join(f"- {p.name}: src/{p.pkg}/\n" for p in projects)
    files["README.md"] = f"# {projects[0].name} and neighbours\n\nThe projects of this repository:\n\n{listing}"
    for other in projects[1:]:
        for name, text in workspace_files(other, draw).items():
            if name.startswith("src/"):
                files[name] = text
            elif name.startswith("tests/"):
                files[f"tests/test_{other.pkg}_{name[len('tests/test_') :]}"] = text
    return dict(sorted(files.items()))


def _scoped_v2(project: Project, draw: _Draw, index: int) -> Built:
    """A rule for project A, then work in A (where it is required) and in B (where it is wrong), in one session.

    Doing nothing fails A, applying the rule everywhere fails B: only memory
    kept by project passes.
    """
    rule = draw.rule(draw.pick(("header", "prefix", "tag", "logger")))
    other = _project(draw, index)
    first, mine, theirs = draw.task(), draw.task(), draw.task()
    teaching = f"{rule.sentence(project.pkg)} This rule holds in project {project.name} only."
    prompts = [_session(project, [teaching], first), _session(project, [], mine) + "\n" + _session(other, [], theirs)]
    checks: list[dict[str, object]] = [
        *task_checks(project.pkg, mine, (rule,)),
        *task_checks(other.pkg, theirs, ()),
        *broken_rule_checks(other.pkg, theirs, rule),
        TESTS_UNCHANGED,
    ]
    return prompts, checks, CaseWorkspace(make_tree(monorepo_files((project, other), draw)))


def _follows(rule: Rule, pkg: str, stem: str) -> tuple[str, str]:
    """(path, text) of an existing module that follows ``rule``, as a project that kept it writes one."""
    path = module_path(pkg, Task(stem, "run", "1"), (rule,) if rule.kind == "prefix" else ())
    lines = [rule.value] if rule.kind == "header" else []
    tag = f" {rule.value}" if rule.kind == "tag" else ""
    lines += [f'"""The {stem.replace("_", " ")} step.{tag}"""', ""]
    if rule.kind == "logger":
        lines += ["import logging", "", f'logger = logging.getLogger("{rule.value}")']
    lines += ["", "", "def run():", "    return 1"]
    return path, "\n".join(lines) + "\n"


def _carry_v2(project: Project, draw: _Draw, index: int) -> Built:
    """Carried: the modules in the workspace follow an older rule that session 1 replaced, and nothing shows the new.

    Session 1 only tells the new rule; it writes no code, so the carried
    workspace never shows it. An agent that copies what the repository shows
    follows the old rule and fails; memory kept anywhere, the repository
    included (an ``AGENTS.md``), passes.
    """
    pkg = project.pkg
    old, new = _rule_and_successor(draw)
    kind = old.kind
    stems = [draw.fresh(lambda: f"{draw.pick(VERBS)}_{draw.pick(NOUNS)}") for _ in range(draw.number(2, 4))]
    existing = dict(_follows(old, pkg, stem) for stem in stems)
    files = workspace_files(project, draw, existing)
    if kind == "registry":
        entries = "".join(f'{stem} = "{old.value}"\n' for stem in stems)
        files["pyproject.toml"] += f"\n[tool.{pkg}.modules]\n{entries}"
    change = (
        f"Rule change: the modules already in src/{pkg}/ follow an older rule of this kind, which no longer "
        f"holds for new modules; leave them as they are. {new.sentence(pkg)}"
    )
    last = draw.task()
    prompts = [f"{project.header()}\n\n{change}\n\n{NOTE_ONLY}\n", _session(project, [], last)]
    checks = [*task_checks(pkg, last, (new,)), *broken_rule_checks(pkg, last, old), TESTS_UNCHANGED]
    return prompts, checks, CaseWorkspace(make_tree(files))


_BUILDERS: dict[str, Callable[[Project, _Draw, int], Built]] = {
    "convention": _convention,
    "decision": _decision,
    "failed_path": _failed_path,
    "superseded": _superseded,
    "stale_memory": _stale_memory,
    "scoped": _scoped,
    "carry": _convention,
}
_BUILDERS_V2 = {
    **_BUILDERS,
    "decision": _decisions_v2,
    "failed_path": _failed_paths_v2,
    "scoped": _scoped_v2,
    "carry": _carry_v2,
}


def generate_one(seed: int, index: int, *, suite: str = "coding", version: int = VERSION) -> Case:
    """Case ``index`` (from 0) of ``seed``, from those numbers alone; categories rotate."""
    if index < 0:
        raise ValueError(f"coding suite: case index must be 0 or more, not {index}")
    if version not in VERSIONS:
        raise ValueError(f"coding suite: version must be one of {', '.join(map(str, VERSIONS))}, not {version!r}")
    category = CATEGORIES[index % len(CATEGORIES)]
    draw = _Draw(seed, index, version)
    builders = _BUILDERS if version == 1 else _BUILDERS_V2
    prompts, checks, workspace = builders[category](_project(draw, index), draw, index)
    case_id = f"coding_{index + 1:04d}"
    expected = {"id": case_id, "category": category, "answer_kind": "files", "answer": {"checks": checks}}
    settings = {"workspace": "carry"} if category == "carry" else {}
    return make_case(
        case_id=case_id,
        suite=suite,
        prompts=prompts,
        expected=expected,
        source=f"coding v{version} seed={seed} #{index}" if version != 1 else f"coding seed={seed} #{index}",
        settings=settings,
        known_kinds=frozenset({"files"}),
        workspace=workspace,
    )


def iter_cases(seed: int, count: int, *, suite: str = "coding", version: int = VERSION) -> Iterator[Case]:
    if count < 0:
        raise ValueError(f"coding suite: count must be 0 or more, not {count}")
    for index in range(count):
        yield generate_one(seed, index, suite=suite, version=version)
