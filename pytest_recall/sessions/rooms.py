"""The directories and environment of one run of one case: where an agent may write, and nothing else.

A case gets one private area (mode 0700) that holds:

- ``scope/``: ``RECALL_SCOPE_DIR``, which its steps share, empty at first;
- ``home/``: with ``--recall-home=case`` (the default), the case's own HOME
  with its XDG directories, seeded with the ``--recall-home-copy`` files and
  shared by its steps too;
- ``step/``: made anew for every step and removed when it ends: the step's
  TMPDIR, which also holds the cost file and the prompt file of
  ``--recall-prompt=file``, so none of them is a second store between steps,
  and HOME never lies under TMPDIR (agents that sandbox themselves refuse
  that). One folder, not a TMPDIR inside it: a ``mkdir`` and an ``rmdir``
  fewer a step, which on a journalled disk cost some 70 us;
- ``work/``: the working directory under ``--recall-workdir=case``, the same
  path in every step and emptied between steps, for agents that key their
  memory by their working directory. Under ``fresh`` (the default) every step
  gets a new directory with a random name instead.

The whole area is removed when the case ends; the area and a fresh workdir
are named for the run (:mod:`~pytest_recall.sessions.run_folders`), so that
the next run removes them if this one is killed before it can.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_recall.cases import check_template, fill
from pytest_recall.sessions.agent_tree import remove_agent_tree
from pytest_recall.sessions.memory_tap import MEMORY_LOG_FILE, MEMORY_LOG_VAR, TAP_LOG_FILE, behind_tap
from pytest_recall.sessions.run_folders import made_folder

# A --recall-env value is checked as an MCP configuration's strings are.
check_env_template = check_template

SCOPE_VAR = "RECALL_SCOPE_DIR"
COST_VAR = "RECALL_COST_FILE"
STEP_VAR = "RECALL_STEP"
# The number of the case's last step, the one judged: a step whose RECALL_STEP equals it is the question.
LAST_STEP_VAR = "RECALL_LAST_STEP"
PROMPT_FILE_VAR = "RECALL_PROMPT_FILE"
# What the harness itself puts in a step folder: the agent's cost file, the prompt of --recall-prompt=file.
COST_FILE_NAME = "cost.json"
PROMPT_FILE_NAME = "prompt.txt"
TEMP_VARS = ("TMPDIR", "TMP", "TEMP")
XDG_DIRS = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
    "XDG_CACHE_HOME": ".cache",
}
# Where HOME points: a fresh one per case (in its memory), or the user's own, shared by every case.
HomeMode = Literal["case", "user"]
# Each step's working directory: a new one, or one path per case emptied between steps.
WorkdirMode = Literal["fresh", "case"]
# What one memory (scope, HOME) serves: one case, or every case of the run in turn.
ScopeMode = Literal["case", "suite"]
# The folders of a memory (the run's shared one, or a case area's own): the scope, and HOME with --recall-home=case.
MEMORY_FOLDERS = ("scope", "home")
# The placeholders a --recall-env value may use.
ENV_PLACEHOLDERS = ("scope", "home", "workdir", "step", "case")
# Where an agent finds this step's MCP server configuration (``--recall-mcp``), its templates filled in.
MCP_CONFIG_VAR = "RECALL_MCP_CONFIG"
MCP_CONFIG_FILE = "mcp.json"


@dataclass(frozen=True, slots=True)
class HomeCopy:
    """One ``--recall-home-copy`` entry: a file or folder copied into every case HOME at ``dest``."""

    source: Path
    dest: str


@dataclass(frozen=True, slots=True)
class SessionRooms:
    """The directories one session may touch; a sandbox binds exactly these."""

    workdir: Path
    scope: Path
    home: Path | None
    harness: Path


@dataclass(frozen=True, slots=True)
class Isolation:
    """What keeps one case's sessions apart from the user's and from other cases': the rooms' settings.

    ``env`` holds ``--recall-env``: each NAME with its value template, or None
    to unset NAME. ``scope`` is run-wide: with ``suite``, the executor opens
    one memory that every case's area then shares. ``mcp_servers`` (templates,
    see :mod:`pytest_recall.cases.mcp_config`) is laid over each case's own.
    """

    home: HomeMode = "case"
    home_copy: tuple[HomeCopy, ...] = ()
    env: tuple[tuple[str, str | None], ...] = ()
    workdir: WorkdirMode = "fresh"
    scope: ScopeMode = "case"
    # ``--recall-mcp``: the MCP servers every case's agent is given, over any a case names itself.
    mcp_servers: Mapping[str, Any] | None = None


class CaseArea:
    """The private area of one run of one case; see the module docstring."""

    def __init__(self, isolation: Isolation, *, shared_memory: Path | None = None) -> None:
        self.root = private_dir("case")
        self.workdir_mode = isolation.workdir
        if shared_memory is None:
            prepare_memory(self.root, isolation)
        memory = shared_memory or self.root
        self.scope = memory / "scope"
        self.home = memory / "home" if isolation.home == "case" else None
        # Named once a case: every step's folder has this one name, and the environment these strings.
        self._step_folder = self.root / "step"
        self._scope_text = str(self.scope)
        # HOME and its XDG folders, the same for every step: worked out once a case, not once a step.
        self._home_env = {} if self.home is None else home_variables(self.home)
        # What the agent left that the harness could not handle plainly (see remove_tree), in order.
        self.faults: list[str] = []

    def open_step(self) -> SessionRooms:
        """A fresh step directory and working directory: nothing of an earlier step is in either."""
        harness = self._step_folder
        try:
            os.mkdir(harness, 0o700)
        except FileExistsError:  # an earlier step's, which its close could not remove
            self._remove(harness)
            os.mkdir(harness, 0o700)
        if self.workdir_mode == "case":
            workdir = self.root / "work"
            self._remove(workdir)
            workdir.mkdir(mode=0o700)
        else:
            workdir = made_folder("step")
        return SessionRooms(workdir=workdir, scope=self.scope, home=self.home, harness=harness)

    def close_step(self, rooms: SessionRooms) -> None:
        self._remove(rooms.workdir, "the step's workdir")
        # What the harness put there, by name: a few rmdir and unlink calls, no walk unless the agent added to it.
        fault = remove_made(rooms.harness, (), (COST_FILE_NAME, PROMPT_FILE_NAME, MCP_CONFIG_FILE, TAP_LOG_FILE))
        if fault is not None:
            self.faults.append(fault)

    def close(self) -> None:
        """The whole area; in the usual case three ``rmdir`` calls (scope, home, the area), no walk.

        An area whose memory is the run's shared one, or that has no HOME, lacks
        one folder or both: its ``rmdir`` finds nothing, which costs no more than asking.
        """
        fault = remove_made(self.root, MEMORY_FOLDERS, ())
        if fault is not None:
            self.faults.append(f"the case's area: {fault}")

    def _remove(self, path: Path, name: str | None = None) -> None:
        """Remove what a step left; what the agent made of it that got in the way is kept in ``faults``."""
        fault = remove_tree(path)
        if fault is not None:
            self.faults.append(f"{name}: {fault}" if name else fault)

    def environment(
        self,
        base: Mapping[str, str],
        rooms: SessionRooms,
        *,
        step: int,
        last_step: int,
        case_id: str,
        overrides: tuple[tuple[str, str | None], ...],
        prompt_file: Path | None,
        mcp_servers: Mapping[str, Any] | None = None,
    ) -> dict[str, str]:
        """The agent's environment for one step: the run's, then the case's rooms, then ``--recall-env``.

        With ``mcp_servers``, the step's MCP configuration is written, filled
        in, to the step directory (gone when the step ends, so it is never a
        store), and named by ``RECALL_MCP_CONFIG``.
        """
        env = dict(base)
        harness = os.fspath(rooms.harness)
        env[SCOPE_VAR] = self._scope_text
        env[COST_VAR] = os.path.join(harness, COST_FILE_NAME)
        env[STEP_VAR] = str(step)
        env[LAST_STEP_VAR] = str(last_step)
        env[MEMORY_LOG_VAR] = os.path.join(harness, MEMORY_LOG_FILE)
        env.update(dict.fromkeys(TEMP_VARS, harness))
        if prompt_file is not None:
            env[PROMPT_FILE_VAR] = str(prompt_file)
        env.update(self._home_env)
        if not overrides and not mcp_servers:
            return env
        values = {
            "scope": self._scope_text,
            "home": env.get("HOME", ""),
            "workdir": str(rooms.workdir),
            "step": str(step),
            "case": case_id,
        }
        for name, template in overrides:
            if template is None:
                env.pop(name, None)
            else:
                env[name] = template.format_map(values)
        if mcp_servers:
            config = rooms.harness / MCP_CONFIG_FILE
            servers = behind_tap(fill(mcp_servers, values), rooms.harness / TAP_LOG_FILE)
            config.write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
            env[MCP_CONFIG_VAR] = str(config)
        return env

    def memory_roots(self) -> tuple[Path, ...]:
        """What the agent keeps between steps: scope/, and home/ with a HOME per case (see ``memory_listing``)."""
        return (self.scope,) if self.home is None else (self.scope, self.home)


def home_variables(home: Path) -> dict[str, str]:
    """HOME and the XDG variables that point into it."""
    text = str(home)
    return {"HOME": text, **{var: f"{text}/{sub}" for var, sub in XDG_DIRS.items()}}


def prepare_memory(root: Path, isolation: Isolation) -> None:
    """``scope/`` and, for a HOME per case, ``home/`` under ``root``: what steps (or, shared, cases) keep."""
    (root / "scope").mkdir(mode=0o700)
    if isolation.home == "case":
        _prepare_home(root / "home", isolation.home_copy)


def _prepare_home(home: Path, copies: tuple[HomeCopy, ...]) -> None:
    """A case HOME seeded with copies of the files the user names."""
    home.mkdir(mode=0o700)
    for copy in copies:
        target = home / copy.dest
        target.parent.mkdir(parents=True, exist_ok=True)
        if copy.source.is_dir():
            shutil.copytree(copy.source, target, symlinks=True)
        elif copy.source.exists():
            shutil.copy2(copy.source, target)


def private_dir(kind: str) -> Path:
    """A folder of this run (see :mod:`~pytest_recall.sessions.run_folders`) that only its owner may enter."""
    path = made_folder(kind)
    os.chmod(path, stat.S_IRWXU)
    return path


def remove_tree(path: Path) -> str | None:
    """Remove a directory an agent wrote in; None when that went plainly, else one line on what the agent left.

    Never recursive, never through a link (see :mod:`pytest_recall.sessions.agent_tree`).
    """
    try:
        # Many steps leave their directory empty: one rmdir then, instead of a walk.
        os.rmdir(path)
        return None
    except FileNotFoundError:
        return None
    except OSError:
        pass  # not empty, not a plain directory, or not removable as it is: the full walk below
    return remove_agent_tree(path)


def remove_made(path: Path, folders: tuple[str, ...], files: tuple[str, ...]) -> str | None:
    """Remove a folder the harness made, with the entries it may hold: a few ``rmdir`` and ``unlink`` calls.

    The careful walk of :func:`remove_tree` is left for a folder that holds
    anything else (an agent wrote into it, or put something in a name's place).
    Returns what :func:`remove_tree` says, None when it went plainly.
    """
    try:
        for name in folders:
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(os.path.join(path, name))
        try:
            # Most steps leave none of the files: one rmdir then, rather than a failed unlink each.
            os.rmdir(path)
            return None
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(path, name))
        os.rmdir(path)
    except FileNotFoundError:
        return None
    except OSError:
        return remove_tree(path)
    return None
