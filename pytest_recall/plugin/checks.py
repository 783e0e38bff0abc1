"""Start-up checks that need the disk or the whole configuration: the agent command, output paths, scope clashes.

Each finds, once and before any agent runs (and costs money), what would
otherwise fail in every case or at the end of the run, and says it in one
usage line. Whether bwrap can run the agent is :mod:`pytest_recall.plugin.sandbox_setup`'s check.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.cases import resolve_command_paths
from pytest_recall.plugin.config import RunConfig

__all__ = [
    "check_adapter_cli",
    "check_command_starts",
    "check_mcp_agent",
    "check_mcp_servers",
    "check_suite_arguments",
    "check_suite_scope",
    "check_writable",
    "resolve_command_paths",
]


# The folder to hand pytest, and where to find it, in every line about a missing one.
NAME_A_SUITE = (
    'name a suite folder: pytest "$(pytest-recall suite session-memory-recall)" --recall-cmd=... '
    "(pytest-recall suite --list lists the bundled suites)"
)


def check_suite_arguments(config: pytest.Config) -> None:
    """An empty path argument is a suite that is not there, never "everything here".

    ``pytest "$(pytest-recall suite TYPO)"`` hands pytest an empty argument once the
    substitution fails (its error is on stderr), and pytest would collect the whole
    working folder instead: in a clone, this project's own tests.
    """
    __tracebackhide__ = True
    if any(not str(arg).strip() for arg in config.args):
        raise pytest.UsageError(
            f"an empty path argument would collect everything under {config.invocation_params.dir} "
            f"(did a $(pytest-recall suite NAME) fail? its error is above); {NAME_A_SUITE}"
        )


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


def check_suite_scope(config: pytest.Config, run_config: RunConfig) -> None:
    """One memory for the whole run holds only when cases run one at a time, all of them, once."""
    __tracebackhide__ = True
    if run_config.isolation.scope != "suite":
        return
    workers = config.getoption("numprocesses", None)
    spread = run_config.scale_out
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


def check_command_starts(
    argv: tuple[str, ...], flag: str = "--recall-cmd", role: str = "agent", base: str | None = None
) -> None:
    """One clear line up front beats the same start error in every case; ``role`` names what to install.

    ``base`` is where the command's relative words were resolved from (the working folder by default).
    """
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
        where = "does not exist" if os.path.isabs(program) else "was not found on PATH"
        raise pytest.UsageError(f"{flag}: {program!r} {where}{hint}")
    for word in argv[1:]:
        if not os.path.isabs(word) and word.endswith(SCRIPT_SUFFIXES) and not word.startswith(("-", "{")):
            raise pytest.UsageError(
                f"{flag}: {word!r} does not exist in {base or os.getcwd()}; sessions run in directories of their own, "
                "so name the script by a path that exists from there"
            )
    if not os.access(found, os.X_OK) or Path(found).is_dir():
        raise pytest.UsageError(f"{flag}: {found!r} is not an executable file; check its permissions")
    if (why := exec_refusal(found)) is not None:
        raise pytest.UsageError(f"{flag}: {found!r} cannot be started: {why}")


# The first bytes of a compiled Linux program.
ELF_MAGIC = b"\x7fELF"
# How much of a script's first line the kernel reads for its interpreter.
SHEBANG_BYTES = 256


def exec_refusal(path: str) -> str | None:
    """Why the kernel would refuse to start this executable file (and every case error on it), or None.

    A text file needs a ``#!`` line naming an interpreter that exists; ``#!/usr/bin/env NAME`` needs NAME on
    PATH. A binary that is not ELF is left alone: the kernel may know its format (binfmt_misc).
    """
    try:
        with open(path, "rb") as file:
            head = file.read(SHEBANG_BYTES)
    except OSError:
        return None  # unreadable but executable: the start error will say more than a guess here
    if head.startswith(ELF_MAGIC) or (b"\0" in head and not head.startswith(b"#!")):
        return None
    if not head.startswith(b"#!"):
        return (
            "it is a script with no #! line, so the system cannot tell what runs it; add one as its first line "
            "(such as #!/usr/bin/env python3), or put its interpreter in the command"
        )
    raw = head[2:].split(b"\n", 1)[0]
    if raw.endswith(b"\r"):
        return (
            "its #! line ends in a carriage return (Windows line ends), so the system looks for an interpreter "
            "whose name ends in \\r; save it with Unix line ends"
        )
    line = raw.decode("utf-8", "replace").strip()
    words = line.split()
    if not words:
        return "its #! line names no interpreter; name one, such as #!/usr/bin/env python3"
    interpreter = words[0]
    if not os.access(interpreter, os.X_OK) or os.path.isdir(interpreter):
        return f"its first line #!{line} names {interpreter}, which is not an executable file here; fix that line"
    if os.path.basename(interpreter) == "env":
        named = next((word for word in words[1:] if not word.startswith("-") and "=" not in word), None)
        if named is not None and shutil.which(named) is None:
            return f"its first line #!{line} runs {named}, which is not on PATH; install it or fix that line"
    return None


def check_mcp_servers(servers: Mapping[str, Any], source: Path) -> None:
    """Each ``--recall-mcp`` server started by a command must be able to start, checked as ``--recall-cmd`` is.

    Its relative paths were made absolute against ``source``'s folder; a server reached at a URL, or
    started by a command with a placeholder in it, is known only when a step runs.
    """
    __tracebackhide__ = True
    for name, server in servers.items():
        command = server.get("command")
        if isinstance(command, str) and "{" not in command:
            argv = (command, *server.get("args", []))
            check_command_starts(argv, f"--recall-mcp: {source}: server {name!r}", "MCP server", str(source.parent))


def check_mcp_agent(argv: tuple[str, ...]) -> None:
    """An adapter known not to pass MCP servers on would fail every case alike: refused before any runs."""
    __tracebackhide__ = True
    from pytest_recall.agents import all_adapters

    program = os.path.basename(argv[0])
    for adapter in all_adapters():
        if adapter.script == program and adapter.mcp_refusal:
            raise pytest.UsageError(
                f"--recall-mcp cannot be used with {program}: {adapter.mcp_refusal}; drop --recall-mcp, "
                "or measure the servers through recall-claude or recall-codex"
            )


def check_adapter_cli(argv: tuple[str, ...], run_env: Sequence[tuple[str, str | None]] = ()) -> None:
    """An adapter whose CLI is missing would exit 127 in every case, and the memory figures would then
    blame retrieval: refused before any case runs, as a missing ``--recall-cmd`` is.

    The CLI is looked for as the adapter will look: ``$<BIN_VARIABLE>`` (from ``--recall-env`` or this
    environment) or its name on PATH; for ``recall-acp``, the command after ``--``.
    """
    __tracebackhide__ = True
    from pytest_recall.agents import all_adapters

    program = os.path.basename(argv[0])
    adapter = next((adapter for adapter in all_adapters() if adapter.script == program), None)
    if adapter is None:
        return
    if not adapter.drives_one_cli:
        after = argv[argv.index("--") + 1 :] if "--" in argv else ()
        if after and "{" not in after[0] and shutil.which(after[0]) is None:
            raise pytest.UsageError(
                f"--recall-cmd: {program} runs {after[0]!r}, which was not found on PATH; "
                "install that agent CLI or give its full path after --"
            )
        return
    given = dict(run_env)
    override = given[adapter.bin_variable] if adapter.bin_variable in given else os.environ.get(adapter.bin_variable)
    if override and "{" in override:
        return
    path = given.get("PATH")  # a PATH of --recall-env is the one the agent gets
    if shutil.which(override or adapter.cli, path=path if path and "{" not in path else None) is None:
        where = f"{adapter.bin_variable}={override}" if override else f"{adapter.cli!r} on PATH"
        raise pytest.UsageError(
            f"--recall-cmd: {program} cannot find {where}; install {adapter.package} or set {adapter.bin_variable}"
        )
