"""How the fake model does a coding-suite task: with the CLI's own file tools, from what the request shows.

A CLI runs one session as a loop of requests, each carrying every message
so far, so the model needs no state: the number of tool results already in
the conversation says which step of its plan comes next. The plan is:

1. in ``memory`` (or ``native``) mode, when the prompt teaches something,
   store it as ``recall-coding`` note lines through the CLI's memory, with
   the same shell call as every other note (see :mod:`fake_brain`);
2. write the new module with the CLI's file-writing tool (Claude Code's
   ``Write``; Codex 0.169 offers an unknown model only ``exec_command``, so
   a Codex session gets no coding moves here yet);
3. for a registry rule, read ``pyproject.toml`` (Claude Code writes no file
   it has not read) and write it back with the entry added;

then end the turn with a short text. What is written is computed by the
project's coding solver (:func:`coding_solver.plan`) from the prompt, the
notes found in the request and the files the CLI showed, never from the
case's answer: with no notes (``plain``), the module lacks what an earlier
session taught and the files judge fails it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace

from pytest_recall.agents import coding_solver
from pytest_recall.testing.exchange import Reply, Request, shell_call

CODE_NOTE = "recall-coding"
_CODE_NOTE_LINE = re.compile(rf"^{CODE_NOTE} (\{{.*\}})\s*$", re.MULTILINE)
# Where the CLI says the session runs: Claude Code's system prompt, Codex's environment context.
_WORKDIRS = (re.compile(r"Primary working directory: (/\S+)"), re.compile(r"<cwd>(/[^<\n]+)</cwd>"))
# Claude Code's Read shows each line as "<number>→text" or "<number>\ttext", then maybe a reminder.
_NUMBERED_LINE = re.compile(r"^\s*\d+(?:→|\t)(.*)$")
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
PYPROJECT = "pyproject.toml"
FILE_TOOLS = ("Write",)


class NotesMemory:
    """The solver's memory over the notes a request carried; what it learns now is kept apart, to store."""

    def __init__(self, notes: list[tuple[str, str]]) -> None:
        self.notes = list(notes)
        self.learned: list[tuple[str, str]] = []

    def remember(self, key: str, value: str) -> None:
        self.notes.append((key, value))
        self.learned.append((key, value))

    def recall(self, key: str) -> str | None:
        found = [value for noted, value in self.notes if noted == key]
        return found[-1] if found else None

    def recall_prefix(self, prefix: str) -> list[tuple[str, str]]:
        newest = {key: value for key, value in self.notes if key.startswith(prefix)}
        return sorted(newest.items())


def notes_in(context: str) -> list[tuple[str, str]]:
    """Every ``recall-coding`` note in the context, oldest first; a line that is not one is skipped."""
    found: list[tuple[str, str]] = []
    for match in _CODE_NOTE_LINE.finditer(context):
        try:
            note = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(note, dict) and isinstance(note.get("key"), str) and isinstance(note.get("value"), str):
            found.append((note["key"], note["value"]))
    return found


def note_lines(learned: list[tuple[str, str]]) -> str:
    return "\n".join(f"{CODE_NOTE} {json.dumps({'key': key, 'value': value})}" for key, value in learned)


def workdir_of(context: str) -> str | None:
    for pattern in _WORKDIRS:
        found = pattern.findall(context)
        if found:
            return str(found[-1]).rstrip("/")
    return None


def shown_text(tool_result: str) -> str:
    """A file's text as Claude Code's Read showed it: line numbers and reminders taken off.

    Read numbers the empty line after a final newline too, so joining the lines gives the text back.
    """
    shown = _REMINDER.sub("", tool_result).strip("\n")
    return "\n".join(_NUMBERED_LINE.sub(r"\1", line) for line in shown.split("\n")) if shown else ""


def write_call(tools: frozenset[str], workdir: str, relative: str, text: str) -> Reply | None:
    """One call of the CLI's own file-writing tool, in that tool's argument shape; None without one."""
    if "Write" in tools:
        return Reply("", "Write", json.dumps({"file_path": f"{workdir}/{relative}", "content": text}), kind="write")
    return None


def read_call(tools: frozenset[str], workdir: str, relative: str) -> Reply | None:
    if "Read" in tools:
        return Reply("", "Read", json.dumps({"file_path": f"{workdir}/{relative}"}), kind="read")
    return None


def coding_reply(request: Request, memory_command: Callable[[str], str | None]) -> Reply | None:
    """The next move in a coding session, or None when the request is not one this module answers.

    ``memory_command`` turns note text into the shell command that stores it
    where this CLI and mode keep memory, or None when nothing is stored.
    """
    if not any(tool in request.tools for tool in FILE_TOOLS):
        return None
    prompt = request.prompt if coding_solver.is_session(request.prompt) else request.context
    workdir = workdir_of(request.context)
    if workdir is None or not coding_solver.is_session(prompt):
        return None
    memory = NotesMemory(notes_in(request.context))
    work = coding_solver.plan(prompt, memory, coding_solver.NoFiles())
    moves: list[Callable[[], Reply | None]] = []
    command = memory_command(note_lines(memory.learned)) if memory.learned else None
    if command is not None:
        store = shell_call(request.tools, command)
        moves.append(lambda: replace(store, kind="learn") if store else None)
    if work is None:
        # A session that only teaches: store what it taught, write nothing.
        done = len(request.tool_results)
        reply = moves[done]() if done < len(moves) else None
        return reply or Reply("DONE: noted", kind="done")
    moves.append(lambda: write_call(request.tools, workdir, work.module, work.text))
    registration = work.registration
    if registration is not None and "Read" in request.tools and "Write" in request.tools:
        moves.append(lambda: read_call(request.tools, workdir, PYPROJECT))
        moves.append(
            lambda: write_call(
                request.tools, workdir, PYPROJECT, registration.applied(shown_text(request.tool_results[-1]))
            )
        )
    done = len(request.tool_results)
    if done < len(moves):
        reply = moves[done]()
        if reply is not None:
            return reply
    return Reply(f"DONE: wrote {work.module}", kind="done")
