"""``--recall-sandbox=bwrap`` for one pytest run: what its sessions must not see, and whether they can start.

:mod:`pytest_recall.sessions.sandbox` knows bubblewrap and nothing of pytest. This
module knows the run: the case folders and test paths given to pytest, the
report, log and HTML files, pytest's basetemp and the harness's temporary
root. A session never sees any of them. Nothing outside the system, this
Python installation and the user's binds is visible in the sandbox anyway; these
paths matter when a bind reaches over them (a bound project that holds its
``cases/``), and then they are covered.

Problems that would make every case fail are found at configure time and
reported once, as one usage line: bwrap missing or unable to create
namespaces, a bind that would expose what must stay hidden, an agent command
that cannot be reached inside.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_recall.plugin.config import RunConfig
from pytest_recall.sessions import (
    AgentStartError,
    Network,
    SandboxSpec,
    SessionRooms,
    absolute_path,
    check_bwrap,
    check_pasta,
    unique,
    wrap_argv,
)

PROBE_TIMEOUT_S = 15.0
# Run inside the sandbox: prints the paths that are not there or not executable.
_REACHABLE_PROBE = (
    "import os, sys; missing = [p for p in sys.argv[1:] if not os.access(p, os.X_OK)];"
    " print('\\n'.join(missing)); raise SystemExit(3 if missing else 0)"
)


@dataclass(frozen=True, slots=True)
class SessionSandbox:
    """The ``SessionSettings.wrap_argv`` of a sandboxed run: each session's argv, wrapped in bwrap."""

    binds: tuple[Path, ...]
    hide: tuple[Path, ...]
    network: Network = "host"

    def __call__(self, argv: list[str], rooms: SessionRooms) -> list[str]:
        spec = SandboxSpec(
            workdir=rooms.workdir,
            scope=rooms.scope,
            home=rooms.home,
            binds=self.binds,
            cost_file_dir=rooms.harness,
            hide=self.hide,
            network=self.network,
        )
        try:
            return wrap_argv(argv, spec)
        except ValueError as exc:
            # A bind deleted since configure time: this case cannot run, the others may.
            raise AgentStartError(f"sandbox setup failed: {exc}") from None


def session_sandbox(
    config: pytest.Config, run_config: RunConfig, case_folders: Iterable[Path]
) -> SessionSandbox | None:
    """The wrapper for this run's sessions, or None without a sandbox.

    Every collected case folder is hidden by name, besides the paths pytest was
    given: a case may sit anywhere under a directory argument, including inside a bind.
    """
    __tracebackhide__ = True
    if run_config.sandbox.mode != "bwrap":
        return None
    folders = unique([absolute_path(folder) for folder in case_folders])
    repositories = unique(git_dir for folder in folders for git_dir in repository_dirs(folder))
    for bind in run_config.sandbox.binds:
        real_bind = Path(os.path.realpath(bind))
        for folder in folders:
            if _within(real_bind, Path(os.path.realpath(folder))):
                raise pytest.UsageError(
                    f"--recall-sandbox-bind: {bind} lies in the case folder {folder}, which agents must not see; "
                    "bind only the agent's own folder"
                )
        for git_dir in repositories:
            if _within(real_bind, git_dir):
                raise pytest.UsageError(
                    f"--recall-sandbox-bind: {bind} lies in {git_dir}, the git repository that holds the cases "
                    "(its objects hold the answers); bind only the agent's own folder"
                )
    hide = [*folders, *repositories, *hidden_paths(config, run_config)]
    return SessionSandbox(binds=run_config.sandbox.binds, hide=unique(hide), network=run_config.sandbox.network)


def repository_dirs(folder: Path) -> tuple[Path, ...]:
    """The git directories of the repository that holds ``folder``: its ``.git``, and for a worktree or
    submodule (a ``.git`` file) the directory it names and that one's common directory, where objects live."""
    for parent in (Path(os.path.realpath(folder)), *Path(os.path.realpath(folder)).parents):
        dot_git = parent / ".git"
        if dot_git.is_dir():
            return (dot_git,)
        if dot_git.is_file():
            found = [dot_git]
            try:
                line = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return tuple(found)
            if line.startswith("gitdir:"):
                git_dir = Path(os.path.realpath(parent / line.removeprefix("gitdir:").strip()))
                found.append(git_dir)
                try:
                    common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
                    found.append(Path(os.path.realpath(git_dir / common)))
                except OSError:
                    pass
            return tuple(path for path in found if path.exists())
    return ()


def _within(path: Path, ancestor: Path) -> bool:
    return path == ancestor or ancestor in path.parents


def hidden_paths(config: pytest.Config, run_config: RunConfig) -> tuple[Path, ...]:
    """The paths given to pytest, basetemp, the harness's temporary root, and the folders of the run's files."""
    invocation = config.invocation_params.dir
    hidden = [absolute_path(invocation / arg.split("::", 1)[0]) for arg in config.args if arg.split("::", 1)[0]]
    hidden += [config.rootpath / "cases", _basetemp(config), absolute_path(Path(tempfile.gettempdir()))]
    files = list(run_config.named_files())
    xml_path = config.getoption("xmlpath", None)
    if xml_path:
        files.append(absolute_path(Path(str(xml_path))))
    hidden += [path.parent for path in files]
    return unique(hidden)


def check_sandbox(config: pytest.Config, run_config: RunConfig) -> None:
    """One usage line, at configure time, for anything that would make every sandboxed case fail or leak."""
    __tracebackhide__ = True
    sandbox, argv = run_config.sandbox, run_config.command.argv
    if sandbox.mode != "bwrap" or not argv:
        return  # no agent will run, so a run of ordinary tests never needs bwrap
    problem = check_bwrap()
    if problem is not None:
        raise pytest.UsageError(f"--recall-sandbox=bwrap: {problem}")
    if sandbox.network == "private" and (problem := check_pasta()) is not None:
        raise pytest.UsageError(
            f"--recall-sandbox-net=private: {problem}; or pass --recall-sandbox-net=host to share the network "
            "(concurrent sessions can then reach each other) or =none for no network"
        )
    hidden = {Path(os.path.realpath(path)) for path in hidden_paths(config, run_config)}
    for bind in sandbox.binds:
        if Path(os.path.realpath(bind)) in hidden:
            # Hiding a path covers whatever is bound at that same path, so the two cannot both hold.
            raise pytest.UsageError(
                f"--recall-sandbox-bind: {bind} is also a path agents must not see (cases given to pytest, "
                "reports, logs, basetemp or the temporary root); bind a narrower folder"
            )
    check_reachable(argv[0], sandbox.binds, sandbox.network)


def check_reachable(program: str, binds: tuple[Path, ...], network: Network = "host") -> None:
    """The agent, and the interpreter of its ``#!`` line, must exist inside the sandbox too.

    Both the path as given and the file a symlink ends at are probed: binding
    only the folder of ``node_modules/.bin/claude`` shows a link into nowhere.
    Only the spellings the session execs decide, though, since the probe
    follows links inside the sandbox as the session will: a bind of a
    symlinked folder shows its files at the link's path, and the real path
    outside need not be visible at all.
    """
    __tracebackhide__ = True
    found = shutil.which(program) if os.sep not in program else program
    if found is None:
        return  # the plugin's own preflight says that it was not found at all
    needed = reachable_paths(Path(os.path.abspath(found)))
    with tempfile.TemporaryDirectory(prefix="recall-sandbox-probe-") as probe_dir:
        rooms = SessionRooms(workdir=Path(probe_dir), scope=Path(probe_dir), home=None, harness=Path(probe_dir))
        try:
            argv = SessionSandbox(binds, (), network)([sys.executable, "-I", "-c", _REACHABLE_PROBE, *needed], rooms)
            probe = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
        except (AgentStartError, OSError, subprocess.TimeoutExpired) as exc:
            raise pytest.UsageError(f"--recall-sandbox=bwrap: could not probe the sandbox: {exc}") from None
    if probe.returncode == 0:
        return
    missing = probe.stdout.split()
    executed = {needed[0], *_shebang_interpreter(Path(os.path.realpath(needed[0])))}
    if missing and executed.isdisjoint(missing):
        return
    if not missing:
        detail = next(iter(probe.stderr.strip().splitlines()), f"exit {probe.returncode}")
        raise pytest.UsageError(f"--recall-sandbox=bwrap: the sandbox did not start: {detail}")
    where = ",".join(str(folder) for folder in bind_hint([Path(path) for path in missing]))
    raise pytest.UsageError(
        f"--recall-cmd: {missing[0]} is not visible inside the bwrap sandbox; add it with --recall-sandbox-bind={where}"
    )


def reachable_paths(program: Path) -> list[str]:
    """The program, the file its symlinks end at, its ``#!`` interpreter and where that ends, in that order."""
    real = Path(os.path.realpath(program))
    paths = [program, real]
    for interpreter in _shebang_interpreter(real):
        paths += [Path(interpreter), Path(os.path.realpath(interpreter))]
    return [str(path) for path in unique(paths)]


def bind_hint(missing: Iterable[Path]) -> tuple[Path, ...]:
    """The binds that make every missing path visible.

    A file inside a virtual environment needs the whole environment (its
    interpreter link, its site-packages), so the hint names the folder that
    holds ``pyvenv.cfg``; any other file needs its own folder. A symlink and
    its target each need theirs: the link's path is what argv names.
    """
    folders: list[Path] = []
    for path in missing:
        venv = next((folder for folder in path.parents if (folder / "pyvenv.cfg").is_file()), None)
        folders.append(venv if venv is not None else path.parent)
    # A folder inside another one already named adds nothing.
    kept = unique(folders)
    return tuple(folder for folder in kept if not any(other in folder.parents for other in kept))


def _shebang_interpreter(path: Path) -> list[str]:
    try:
        with open(path, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    parts = first[2:].decode("utf-8", "replace").split()
    return [parts[0]] if parts and parts[0].startswith("/") else []


def _basetemp(config: pytest.Config) -> Path:
    """pytest's basetemp, or the root its numbered default basetemps are made in."""
    given = config.getoption("basetemp", None)
    if given:
        return absolute_path(Path(str(given)))
    root = os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir()
    try:
        user = getpass.getuser()
    except (ImportError, KeyError, OSError):
        user = "unknown"
    return absolute_path(Path(root) / f"pytest-of-{user}")
