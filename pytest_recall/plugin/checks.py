"""Start-up checks that need the disk or the whole configuration: the agent command, output paths, scope clashes.

Each finds, once and before any agent runs (and costs money), what would
otherwise fail in every case or at the end of the run, and says it in one
usage line. Whether bwrap can run the agent is :mod:`pytest_recall.plugin.sandbox_setup`'s check.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from pytest_recall.plugin.config import RunConfig


def resolve_command_paths(argv: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Make relative paths in the command absolute: sessions run in directories of their own.

    The program is resolved when it holds a separator (``agents/x.py``); a
    later argument, or the value of ``--opt=value``, when it names a file that
    exists here (``python my_agent.py``) or a path with a separator that does.
    Bare words that name nothing are left alone: they are flags and values.
    """
    resolved: list[tuple[str, str]] = []

    def absolute(word: str, first: bool) -> str:
        if not word or os.path.isabs(word) or word.startswith("~"):
            return word
        names_a_path = os.sep in word and (first or os.path.exists(word))
        if not (names_a_path or (not first and os.path.isfile(word))):
            return word
        if not first:
            # A program named by a path is plainly a path; a later argument is the trap worth naming.
            resolved.append((word, os.path.abspath(word)))
        return os.path.abspath(word)

    words = []
    for index, word in enumerate(argv):
        if index > 0 and word.startswith("--") and "=" in word:
            name, _, value = word.partition("=")
            words.append(f"{name}={absolute(value, False)}")
        elif index > 0 and word.startswith("-"):
            words.append(word)
        else:
            words.append(absolute(word, index == 0))
    return tuple(words), tuple(resolved)


def check_writable(flag: str, path: Path | None, here: Path) -> str | None:
    """Fail before any agent runs (and costs money), not when the report is due.

    Returns a line to show when the writer will create folders outside the working tree.
    """
    __tracebackhide__ = True
    if path is None:
        return None
    if path.is_dir():
        raise pytest.UsageError(f"{flag}: {path} is a directory; give a file path")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the writer creates missing folders; the nearest existing one must allow it
    if folder != path.parent and not path.is_relative_to(here):
        # Creating folders is fine where the run lives; elsewhere the run says so, and never starts at the root.
        if folder == folder.parent:
            raise pytest.UsageError(
                f"{flag}: {path.parent} does not exist, and creating it would start a folder at the filesystem "
                f"root; create it first or choose a path under {here}"
            )
        return f"{flag}: creating {path.parent} (outside {here}) for {path.name}"
    if not folder.is_dir():
        raise pytest.UsageError(f"{flag}: cannot create {path}: {folder} is not a directory; choose another path")
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise pytest.UsageError(f"{flag}: cannot write {path}: permission denied; choose a writable path")
    return None


def check_suite_scope(config: pytest.Config, run: RunConfig) -> None:
    """One memory for the whole run holds only when cases run one at a time, all of them, once."""
    __tracebackhide__ = True
    if run.isolation.scope != "suite":
        return
    workers = config.getoption("numprocesses", None)
    spread = run.scale_out
    conflicts = (
        (spread.concurrency > 1, f"--recall-concurrency={spread.concurrency}", "cases would run at once"),
        (workers not in (None, 0), "-n (xdist)", "each worker would keep a memory of its own"),
        (spread.epochs > 1, f"--recall-epochs={spread.epochs}", "a repeat would find its own earlier notes"),
        (spread.shard is not None, "--recall-shard", "each shard would hold only part of the memory"),
        (spread.resume_path is not None, "--recall-resume", "skipped cases would leave no notes behind"),
    )
    for clash, flag, why in conflicts:
        if clash:
            raise pytest.UsageError(
                f"--recall-scope=suite cannot be combined with {flag}: {why}; run the suite in one process, "
                "case after case, or use --recall-scope=case"
            )


# A later argument ending so is a script the agent runs: one that is not there fails every case.
SCRIPT_SUFFIXES = (".py", ".sh", ".js", ".mjs", ".ts", ".rb", ".pl")


def check_command_starts(argv: tuple[str, ...], flag: str = "--recall-cmd", role: str = "agent") -> None:
    """One clear line up front beats the same start error in every case; ``role`` names what to install."""
    __tracebackhide__ = True
    program = argv[0]
    found = shutil.which(program) if os.sep not in program else (program if os.path.exists(program) else None)
    if found is None:
        hint = f"; install the {role} or give its full path"
        beside = Path(sys.executable).parent
        if (beside / program).is_file():
            # pytest-recall's own scripts sit beside the interpreter, in an environment not activated here.
            hint = f"; it is in {beside}, which is not on PATH: activate that environment (. {beside}/activate)"
        if os.path.isfile(program):
            hint = f"; to run the file here, write ./{program}"
        raise pytest.UsageError(f"{flag}: {program!r} was not found on PATH{hint}")
    for word in argv[1:]:
        if not os.path.isabs(word) and word.endswith(SCRIPT_SUFFIXES) and not word.startswith("-"):
            raise pytest.UsageError(
                f"{flag}: {word!r} does not exist in {os.getcwd()}; sessions run in directories of their own, "
                "so name the script by a path that exists from here"
            )
    if not os.access(found, os.X_OK) or Path(found).is_dir():
        raise pytest.UsageError(f"{flag}: {found!r} is not an executable file; check its permissions")
