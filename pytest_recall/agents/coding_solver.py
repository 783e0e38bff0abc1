"""How the notebook does a coding-suite task: learn what a session teaches, then write the files.

A session names its project, may teach a rule, a decision, a failed approach
or a fact, and ends with a task. What it teaches goes into the notebook under
the project's name, so a rule for one project never leaks into another and a
newer rule of a kind replaces the older one. The task is then done with
everything the notebook holds for the project, in the session's working
directory. With a notebook that lives in memory only, the same code is an
agent that applies what it was told in this session and nothing more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

SESSION = re.compile(r"^Project (\S+) \(package (\w+)\)\.$", re.MULTILINE)
TASK = re.compile(
    r"^Task: add a module (\w+) to package (\w+) \(src/\w+/\) with a function (\w+)\(\) that returns (\w+)\."
    r"(?: The module needs to (.+?)\.)?$",
    re.MULTILINE,
)
_WHERE = r"Project rule: every new module in src/\w+/ "
RULES = {
    "header": re.compile(_WHERE + r'starts with the line "([^"]+)"\.'),
    "prefix": re.compile(_WHERE + r'has a file name that starts with "([^"]+)"\.'),
    "tag": re.compile(_WHERE + r'has a module docstring holding the tag "([^"]+)"\.'),
    "logger": re.compile(_WHERE + r'defines logger = logging\.getLogger\("([^"]+)"\)\.'),
    "registry": re.compile(
        _WHERE
        + r'is registered in pyproject\.toml, in the table \[tool\.\w+\.modules\], as <module name> = "([^"]+)"\.'
    ),
}
DECISION = re.compile(r"Decision (ADR-\d+): to (.+?), this project uses (\w+), not (\w+), because")
FAILED = re.compile(
    r"to (.+?), calling helpers\.(\w+)\(\) was tried and failed: .*? Calling helpers\.(\w+)\(\) does it correctly\."
)
FACT = re.compile(r"Fact: the constant (\w+) lives in src/\w+/(\w+)\.py;")
HELPERS_CLAUSE = ", with one of the helpers in "
# A task that needs several things names them in one sentence: "needs to A, and to B."
JOBS_JOINER = ", and to "
AGENTS_MD = "AGENTS.md"
_NOTE = re.compile(r"^- `([^`]+)`: (.*)$", re.MULTILINE)


class Memory(Protocol):
    """What the solver needs of a notebook."""

    def remember(self, key: str, value: str) -> None: ...

    def recall(self, key: str) -> str | None: ...

    def recall_prefix(self, prefix: str) -> list[tuple[str, str]]: ...


class AgentsMdMemory:
    """Notes kept in the repository's ``AGENTS.md``, as agents that remember through it do.

    Such memory lives and dies with the workspace: it carries from step to
    step under ``workspace = "carry"`` and is gone under ``fresh``.
    """

    def __init__(self, root: Path) -> None:
        self.path = root / AGENTS_MD

    def _notes(self) -> list[tuple[str, str]]:
        text = self.path.read_text(encoding="utf-8") if self.path.is_file() else ""
        return [(key, value) for key, value in _NOTE.findall(text)]

    def remember(self, key: str, value: str) -> None:
        text = self.path.read_text(encoding="utf-8") if self.path.is_file() else "# Notes for agents\n\n"
        self.path.write_text(f"{text}- `{key}`: {value}\n", encoding="utf-8")

    def recall(self, key: str) -> str | None:
        found = [value for noted, value in self._notes() if noted == key]
        return found[-1] if found else None

    def recall_prefix(self, prefix: str) -> list[tuple[str, str]]:
        newest = {key: value for key, value in self._notes() if key.startswith(prefix)}
        return sorted(newest.items())


NOTE_ONLY = re.compile(r"^There is no code to write in this session\b", re.MULTILINE)


def is_session(prompt: str) -> bool:
    """A coding session: a project, and a task or a session that only teaches."""
    return SESSION.search(prompt) is not None and (
        TASK.search(prompt) is not None or NOTE_ONLY.search(prompt) is not None
    )


def learn(prompt: str, project: str, memory: Memory) -> None:
    """Everything the prompt teaches, under the project's name; a later note of a key replaces the earlier."""
    for kind, pattern in RULES.items():
        for value in pattern.findall(prompt):
            memory.remember(f"coding/{project}/rule/{kind}", value)
    for adr, purpose, chosen, _rejected in DECISION.findall(prompt):
        memory.remember(f"coding/{project}/decision/{purpose}", f"{adr} {chosen}")
    for job, _bad, good in FAILED.findall(prompt):
        memory.remember(f"coding/{project}/helper/{job}", good)
    for constant, module in FACT.findall(prompt):
        memory.remember(f"coding/{project}/constant/{constant}", module)


class Files(Protocol):
    """What the solver may see of a workspace: a file's text, and the modules of a package."""

    def read_text(self, relative: str) -> str | None: ...

    def python_modules(self, pkg: str) -> list[str]: ...


class DiskFiles:
    """The workspace on disk, for an agent that runs in it."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read_text(self, relative: str) -> str | None:
        try:
            return (self.root / relative).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def python_modules(self, pkg: str) -> list[str]:
        return [path.stem for path in sorted((self.root / "src" / pkg).glob("*.py"))]


class NoFiles:
    """A workspace nothing of which was shown: a model that sees only its request knows no file it did not read."""

    def read_text(self, relative: str) -> str | None:
        return None

    def python_modules(self, pkg: str) -> list[str]:
        return []


@dataclass(frozen=True, slots=True)
class Registration:
    """An entry ``stem = "code"`` the registry rule wants in ``[tool.<pkg>.modules]`` of pyproject.toml."""

    pkg: str
    stem: str
    code: str

    def applied(self, text: str) -> str:
        """``text`` (a pyproject.toml) with the entry added, the table made when it is not there yet."""
        header = f"[tool.{self.pkg}.modules]"
        entry = f'{self.stem} = "{self.code}"'
        if header in text:
            return text.replace(header, f"{header}\n{entry}", 1)
        return text + ("" if text.endswith("\n") or not text else "\n") + f"\n{header}\n{entry}\n"


@dataclass(frozen=True, slots=True)
class Work:
    """What a session's task asks to be written, decided from the prompt, the memory and the files seen.

    Kept apart from the writing, so an agent that writes through someone
    else's tools (a real CLI driven by the fake model) computes the same
    files as the notebook does on disk.
    """

    module: str  # the new module's path, relative POSIX
    text: str
    registration: Registration | None = None


def plan(prompt: str, memory: Memory, files: Files) -> Work | None:
    """Learn from the prompt, then say what its first task asks to be written; None for a prompt with no task."""
    works = plan_all(prompt, memory, files)
    return works[0] if works else None


def plan_all(prompt: str, memory: Memory, files: Files) -> list[Work]:
    """Learn from every project's part of the prompt, then say what each part's task asks to be written.

    A session may hold work in more than one project (a rule's own project
    and another one): each part is learned and done under its own project's
    name, so what one project was taught never reaches the other.
    """
    starts = [found.start() for found in SESSION.finditer(prompt)]
    parts = [prompt[start:end] for start, end in zip(starts, [*starts[1:], len(prompt)], strict=True)]
    for part in parts:
        session = SESSION.search(part)
        assert session is not None
        learn(part, session.group(1), memory)
    works = []
    for part in parts:
        session, task = SESSION.search(part), TASK.search(part)
        if session is not None and task is not None:
            works.append(_work(session.group(1), session.group(2), task, memory, files))
    return works


def _work(project: str, pkg: str, task: re.Match[str], memory: Memory, files: Files) -> Work:
    rules = {key.rsplit("/", 1)[1]: value for key, value in memory.recall_prefix(f"coding/{project}/rule/")}
    stem, _, function, returns, needs = task.groups()
    module = f"src/{pkg}/{rules.get('prefix', '')}{stem}.py"
    text = _module_text(files, project, pkg, function, returns, needs or "", rules, memory)
    registration = Registration(pkg, stem, rules["registry"]) if "registry" in rules else None
    return Work(module, text, registration)


def jobs_of(prompt: str) -> list[str]:
    """Every job the prompt's tasks say their module needs to do (a purpose, or a job for a helper)."""
    return [job for task in TASK.finditer(prompt) for job in _jobs(task.group(5) or "")]


def _jobs(needs: str) -> list[str]:
    return [need.split(HELPERS_CLAUSE)[0] for need in needs.split(JOBS_JOINER)] if needs else []


def respond(prompt: str, memory: Memory, workdir: Path | None = None) -> str:
    """Learn from the prompt, then do its tasks in ``workdir`` (the current directory by default)."""
    root = workdir or Path.cwd()
    works = plan_all(prompt, memory, DiskFiles(root))
    if not works:
        return "DONE: noted" if SESSION.search(prompt) else "UNKNOWN"
    for work in works:
        path = root / work.module
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(work.text, encoding="utf-8")
        if work.registration is not None:
            pyproject = root / "pyproject.toml"
            text = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
            pyproject.write_text(work.registration.applied(text), encoding="utf-8")
    return "DONE: wrote " + ", ".join(work.module for work in works)


def _module_text(
    files: Files, project: str, pkg: str, function: str, returns: str, needs: str, rules: dict[str, str], memory: Memory
) -> str:
    lines = [rules["header"]] if "header" in rules else []
    tag = f" {rules['tag']}" if "tag" in rules else ""
    lines.append(f'"""A module added for a task.{tag}"""')
    lines.append("")
    if "logger" in rules:
        lines.append("import logging")
    calls = []
    for need in needs.split(JOBS_JOINER) if needs else []:
        job = need.split(HELPERS_CLAUSE)[0]
        decision = memory.recall(f"coding/{project}/decision/{job}")
        if decision is not None:
            adr, chosen = decision.split(" ", 1)
            lines += [f"# {adr}: {job}", f"import {chosen}"]
        helper = memory.recall(f"coding/{project}/helper/{job}") if HELPERS_CLAUSE in need else None
        if helper is not None:
            calls.append(f'    helpers.{helper}("{job}")')
    if calls:
        lines.append(f"from {pkg} import helpers")
    if not returns.isdigit():
        module = _module_defining(files, pkg, returns, memory.recall(f"coding/{project}/constant/{returns}"))
        if module is not None:
            lines.append(f"from {pkg}.{module} import {returns}")
    if "logger" in rules:
        lines += ["", f'logger = logging.getLogger("{rules["logger"]}")']
    lines += ["", "", f"def {function}():", *calls]
    lines.append(f"    return {returns}")
    return "\n".join(lines) + "\n"


def _module_defining(files: Files, pkg: str, name: str, remembered: str | None) -> str | None:
    """Where ``name`` is defined: the remembered module if the workspace still says so, else wherever it is now."""
    defines = re.compile(rf"^{re.escape(name)}\s*=", re.MULTILINE)
    candidates = [remembered] if remembered else []
    candidates += files.python_modules(pkg)
    for candidate in candidates:
        text = files.read_text(f"src/{pkg}/{candidate}.py")
        if text is not None and defines.search(text):
            return candidate
    return None
