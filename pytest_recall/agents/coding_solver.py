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


def is_session(prompt: str) -> bool:
    return SESSION.search(prompt) is not None and TASK.search(prompt) is not None


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


def respond(prompt: str, memory: Memory, workdir: Path | None = None) -> str:
    """Learn from the prompt, then do its task in ``workdir`` (the current directory by default)."""
    root = workdir or Path.cwd()
    session = SESSION.search(prompt)
    task = TASK.search(prompt)
    if session is None or task is None:
        return "UNKNOWN"
    project, pkg = session.group(1), session.group(2)
    learn(prompt, project, memory)
    rules = {key.rsplit("/", 1)[1]: value for key, value in memory.recall_prefix(f"coding/{project}/rule/")}
    stem, _, function, returns, needs = task.groups()
    path = root / "src" / pkg / f"{rules.get('prefix', '')}{stem}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_module_text(root, project, pkg, function, returns, needs or "", rules, memory), encoding="utf-8")
    if "registry" in rules:
        _register(root / "pyproject.toml", pkg, stem, rules["registry"])
    return f"DONE: wrote {path.relative_to(root).as_posix()}"


def _module_text(
    root: Path, project: str, pkg: str, function: str, returns: str, needs: str, rules: dict[str, str], memory: Memory
) -> str:
    job = needs.split(HELPERS_CLAUSE)[0]
    lines = [rules["header"]] if "header" in rules else []
    tag = f" {rules['tag']}" if "tag" in rules else ""
    lines.append(f'"""A module added for a task.{tag}"""')
    lines.append("")
    if "logger" in rules:
        lines.append("import logging")
    decision = memory.recall(f"coding/{project}/decision/{job}") if job else None
    if decision is not None:
        adr, chosen = decision.split(" ", 1)
        lines += [f"# {adr}: {job}", f"import {chosen}"]
    helper = memory.recall(f"coding/{project}/helper/{job}") if HELPERS_CLAUSE in needs else None
    if helper is not None:
        lines.append(f"from {pkg} import helpers")
    if not returns.isdigit():
        module = _module_defining(root, pkg, returns, memory.recall(f"coding/{project}/constant/{returns}"))
        if module is not None:
            lines.append(f"from {pkg}.{module} import {returns}")
    if "logger" in rules:
        lines += ["", f'logger = logging.getLogger("{rules["logger"]}")']
    lines += ["", "", f"def {function}():"]
    if helper is not None:
        lines.append(f'    helpers.{helper}("{job}")')
    lines.append(f"    return {returns}")
    return "\n".join(lines) + "\n"


def _module_defining(root: Path, pkg: str, name: str, remembered: str | None) -> str | None:
    """Where ``name`` is defined: the remembered module if the workspace still says so, else wherever it is now."""
    defines = re.compile(rf"^{re.escape(name)}\s*=", re.MULTILINE)
    package = root / "src" / pkg
    candidates = [package / f"{remembered}.py"] if remembered else []
    candidates += sorted(package.glob("*.py"))
    for candidate in candidates:
        try:
            if defines.search(candidate.read_text(encoding="utf-8")):
                return candidate.stem
        except OSError:
            continue
    return None


def _register(pyproject: Path, pkg: str, stem: str, code: str) -> None:
    """Add ``stem = "code"`` to ``[tool.<pkg>.modules]``, making the table when it is not there yet."""
    header = f"[tool.{pkg}.modules]"
    entry = f'{stem} = "{code}"'
    text = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
    if header in text:
        text = text.replace(header, f"{header}\n{entry}", 1)
    else:
        text = text + ("" if text.endswith("\n") or not text else "\n") + f"\n{header}\n{entry}\n"
    pyproject.write_text(text, encoding="utf-8")
