"""No-memory baselines for every generated suite: what a score is worth to an agent that remembers nothing.

A memory score means something only if an agent without memory cannot earn
it, and a real agent without memory still reads everything it is shown. Each
baseline here keeps nothing between sessions and does the most it can with
the session in front of it::

    python -m pytest_recall.agents.no_memory NAME PROMPT

- ``null``: says UNKNOWN (the null answer on the audit suite), and writes no file.
- ``plain``: an agent that does its job from this prompt alone and admits what
  it was never given: ``NOT GIVEN`` where the prompt offers that answer, and a
  coding task done with the rules this prompt states (``recall-amnesiac``).
  On abstention questions it is the always-abstain answer.
- ``copy``: copies whatever it is shown. In a coding task it reads the
  workspace and follows its most common style (a header line, a file-name
  prefix, a docstring tag, a logger, the registry value already present),
  imports the first library listed for a purpose, calls the first helper
  listed and imports a constant from where the workspace defines it; in a
  question it answers with the first value the prompt shows.
- ``last_step``: answers from the last prompt alone, using every cue in it:
  ``NOT GIVEN`` when the period asked about ends after the session's own date,
  the popular library for a purpose, the rules the prompt states.

Every one of them scores at most 0.10 in every category of every bundled
generated suite, except ``plain`` on ``abstention`` (the report's
``false_abstention_rate`` exposes an always-abstain agent) and the frozen
first version of the audit suite, ``agent-supermemory-v1``; the table in
``docs/cases.md`` comes from :mod:`pytest_recall.agents.baseline_table`.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pytest_recall.agents import abilities_solver, audit_solver, coding_solver
from pytest_recall.agents.notebook import Notebook

NAMES = ("null", "plain", "copy", "last_step")
NOT_GIVEN = "NOT GIVEN"
UNKNOWN = "UNKNOWN"
NULL_AUDIT = json.dumps({"value": None, "evidence": []})
_MONEY = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})*\.\d\d(?!\d)")
_VOUCHER = re.compile(r"\bAR-\d{4}-\d{4}\b")
_JSON_ANSWER = re.compile(r'\{"value":.*?\]\}')
_HEADER_LINE = re.compile(r"\A(# [\w-]+: \S+)\n")
_TAG = re.compile(r"(:component: \S+?)(?=[\s\"])")
_LOGGER = re.compile(r'logging\.getLogger\("([^"]+)"\)')
_PREFIX = re.compile(r"\A([a-z]{2}\d_)")
_REGISTRY_VALUE = re.compile(r'^\w+ = "([^"]+)"$', re.MULTILINE)


def respond(name: str, prompt: str, workdir: Path) -> str:
    """One session of baseline ``name`` in ``workdir``: nothing is kept for the next one."""
    if name not in NAMES:
        raise ValueError(f"no-memory baseline: unknown name {name!r}; choose one of {', '.join(NAMES)}")
    if coding_solver.is_session(prompt):
        return _coding(name, prompt, workdir)
    if _asks_audit_question(prompt):
        return _audit(name, prompt)
    if "Question:" not in prompt and "Report that value now" not in prompt:
        return "Noted."
    if name == "plain":
        return NOT_GIVEN if f"output exactly: {NOT_GIVEN}" in prompt else UNKNOWN
    if name == "copy":
        shown = _MONEY.findall(prompt) or _VOUCHER.findall(prompt)
        return shown[0] if shown else UNKNOWN
    if name == "last_step":
        return NOT_GIVEN if _asks_after_its_date(prompt) else UNKNOWN
    return UNKNOWN


def _asks_audit_question(prompt: str) -> bool:
    question = audit_solver.question_of(prompt)
    try:
        return question is not None and audit_solver.parse_question(question) is not None
    except ValueError:
        return False


def _asks_after_its_date(prompt: str) -> bool:
    """Whether the question's period ends after the session's own date: it cannot have been shown yet."""
    dated = abilities_solver.session_date(prompt)
    asked = abilities_solver.parse_ask(prompt)
    if dated is None or asked is None:
        return False
    ends = asked.end or asked.as_of or ""
    return bool(ends) and ends >= dated


def _audit(name: str, prompt: str) -> str:
    if name == "copy":
        shown = _JSON_ANSWER.findall(prompt)
        return shown[-1] if shown else NULL_AUDIT
    return NULL_AUDIT


# --- coding ------------------------------------------------------------------------------


def _coding(name: str, prompt: str, workdir: Path) -> str:
    if name == "null":
        return "DONE"
    memory = Notebook(None)  # in memory: gone when the session ends
    try:
        if name in ("copy", "last_step"):
            for project, pkg in coding_solver.SESSION.findall(prompt):
                seed = _copied_notes if name == "copy" else _popular_notes
                for key, value in seed(project, pkg, prompt, coding_solver.DiskFiles(workdir)):
                    memory.remember(key, value)
        return coding_solver.respond(prompt, memory, workdir)
    finally:
        memory.close()


Notes = list[tuple[str, str]]


def _popular_notes(project: str, pkg: str, prompt: str, files: coding_solver.DiskFiles) -> Notes:
    """What the prompt's own words suggest: the first library listed for each purpose it names."""
    from pytest_recall.suites import DECISIONS

    notes: Notes = []
    for job in coding_solver.jobs_of(prompt):
        if job in DECISIONS:
            notes.append((f"coding/{project}/decision/{job}", f"ADR-0000 {DECISIONS[job][0]}"))
    return notes


def _copied_notes(project: str, pkg: str, prompt: str, files: coding_solver.DiskFiles) -> Notes:
    """What the workspace shows: its most common style, the values already present, the first option listed."""
    texts = {stem: files.read_text(f"src/{pkg}/{stem}.py") or "" for stem in files.python_modules(pkg)}
    notes: Notes = []

    def most_common(found: Sequence[str], kind: str) -> None:
        if found:
            notes.append((f"coding/{project}/rule/{kind}", Counter(found).most_common(1)[0][0]))

    most_common([m.group(1) for t in texts.values() if (m := _HEADER_LINE.match(t))], "header")
    most_common([m.group(1) for stem in texts if (m := _PREFIX.match(stem))], "prefix")
    most_common([tag for t in texts.values() for tag in _TAG.findall(t)], "tag")
    most_common([name for t in texts.values() for name in _LOGGER.findall(t)], "logger")
    pyproject = files.read_text("pyproject.toml") or ""
    table = pyproject.split(f"[tool.{pkg}.modules]", 1)
    if len(table) == 2:
        most_common(_REGISTRY_VALUE.findall(table[1].split("\n[", 1)[0]), "registry")
    notes += _popular_notes(project, pkg, prompt, files)
    helpers = re.findall(r"^def (\w+)\(", texts.get("helpers", ""), re.MULTILINE)
    for job in coding_solver.jobs_of(prompt):
        imported = _imported_for(job, texts)
        if imported is not None:
            notes.append((f"coding/{project}/decision/{job}", f"ADR-0000 {imported}"))
        if helpers:
            notes.append((f"coding/{project}/helper/{job}", helpers[0]))
    return notes


def _imported_for(job: str, texts: dict[str, str]) -> str | None:
    """A library the workspace already imports for ``job``'s purpose, if any module does."""
    from pytest_recall.suites import DECISIONS

    for library in DECISIONS.get(job, ()):
        if any(re.search(rf"^import {library}$", text, re.MULTILINE) for text in texts.values()):
            return library
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[0] not in NAMES:
        print(f"usage: python -m pytest_recall.agents.no_memory {{{','.join(NAMES)}}} PROMPT", file=sys.stderr)
        return 2
    print(respond(args[0], args[-1], Path.cwd()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
