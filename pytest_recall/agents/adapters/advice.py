"""What to tell a user whose ``--recall-cmd`` runs a CLI the adapters already know how to run.

Two traps cost a newcomer a wrong conclusion. A bare ``claude -p``,
``codex exec`` or ``aider --message`` runs, and scores near 0 for reasons
that have nothing to do with memory: the CLI waits for an approval no one
gives, refuses an untrusted folder, or prints chatter where the judge reads.
And ``--recall-cmd`` given with ``--recall-live-preset`` replaces the
preset's launcher, so a print-mode adapter receives live turns it cannot
take. Both are decided here from the command's words alone.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import PurePath

from pytest_recall.agents.adapters.presets import LivePreset


@dataclass(frozen=True, slots=True)
class BareCli:
    """A CLI run directly in its one-prompt mode, and why its adapter does better."""

    cli: str  # the executable's name
    marks: tuple[str, ...]  # any of these words puts the CLI in its one-prompt mode
    adapter: str
    why: str


BARE_CLIS = (
    BareCli(
        "claude",
        ("-p", "--print"),
        "recall-claude",
        "claude -p asks approval for the tool calls that write its memory and no one is there to give it, "
        "so it answers UNKNOWN however well Claude Code remembers",
    ),
    BareCli(
        "codex",
        ("exec", "e"),
        "recall-codex",
        "codex exec refuses a working folder that is not a trusted git repository, and its read-only sandbox "
        "blocks the memory write to ~/.codex/AGENTS.md",
    ),
    BareCli(
        "aider",
        ("--message", "-m"),
        "recall-aider",
        "aider prints its banner and token footer on stdout, where the judge reads the last line, and a new "
        "session does not reload the chat history that is its memory",
    ),
)


def bare_cli_advice(argv: tuple[str, ...]) -> str | None:
    """One header line recommending the adapter, when the command runs a known CLI directly."""
    if not argv:
        return None
    program = PurePath(argv[0]).name
    for bare in BARE_CLIS:
        mark = next((word for word in argv[1:] if word in bare.marks), None)
        if program == bare.cli and mark is not None:
            return (
                f"--recall-cmd runs {bare.cli} {mark} directly; use --recall-cmd={bare.adapter}, the tested adapter: "
                f"{bare.why}; the adapter runs it unattended, reports its cost and tells a CLI failure from forgetting"
            )
    return None


def launches(preset: LivePreset, argv: tuple[str, ...]) -> bool:
    """Whether the command is the preset's own launcher, by path or name, with any extra arguments after it."""
    size = len(preset.command)
    return (
        len(argv) >= size and PurePath(argv[0]).name == preset.command[0] and tuple(argv[1:size]) == preset.command[1:]
    )


def preset_conflict(preset: LivePreset, command: str, argv: tuple[str, ...]) -> str | None:
    """One line naming both ways out when ``--recall-cmd`` would replace the preset's launcher."""
    if launches(preset, argv):
        return None
    launcher = shlex.join(preset.command)
    return (
        f"--recall-cmd={command!r} would replace the launcher --recall-live-preset={preset.name} runs "
        f"({launcher}), and live turns cannot reach it: drop --recall-cmd to measure the live session, or drop "
        f"--recall-live-preset to run your command a process per step (extra arguments for the live CLI go after "
        f"the launcher: --recall-cmd='{launcher} ARGS')"
    )


# A word after the command that ends so is a script the agent runs, not a test file pytest should import.
_SCRIPT_SUFFIXES = (".py", ".sh", ".js", ".mjs", ".ts", ".rb", ".pl")


# The flags whose value is a command line, and so may be split by a shell when left unquoted.
_COMMAND_FLAGS = ("--recall-cmd", "--recall-judge-cmd")


def command_line_trap(args: list[str] | tuple[str, ...], flags: tuple[str, ...]) -> str | None:
    """One line for the two typos that pytest would otherwise report as something else.

    A misspelt ``--recall-*`` flag is named with the flag it most likely
    meant. An unquoted ``--recall-cmd=python my_agent.py`` (or judge command)
    leaves ``my_agent.py`` as an argument of pytest's own, which it would
    import as a test module (running the script's top level) before any case
    runs. Only a word pytest would take as a path counts as the tail: one that
    starts with ``-`` is an option (``--recall-judge-cmd=judge.py``, or a judge
    quoted whole as ``--recall-judge-cmd='python judge.py'``), never a file.
    """
    import difflib

    for index, arg in enumerate(args):
        if arg == "--":
            return None
        name, has_value, value = arg.partition("=")
        if name.startswith("--recall-") and name not in flags:
            near = difflib.get_close_matches(name, flags, n=1, cutoff=0.6)
            guess = f"; did you mean {near[0]}?" if near else "; the --recall-* flags are listed by pytest --help"
            return f"unknown option {name}{guess}"
        if name not in _COMMAND_FLAGS:
            continue
        following = index + 1 if has_value else index + 2
        command = value if has_value else (args[index + 1] if index + 1 < len(args) else "")
        nxt = args[following] if following < len(args) else ""
        base = PurePath(nxt).name
        looks_like_test = base.startswith("test_") or base.endswith("_test.py")
        is_path = not nxt.startswith("-")
        if is_path and nxt.endswith(_SCRIPT_SUFFIXES) and not looks_like_test and command and " " not in command:
            return (
                f"{name}={command} {nxt}: the shell split the command in two, so pytest would import {nxt} "
                f"as a test file; quote the whole command: {name}='{command} {nxt}'"
            )
    return None
