"""The directories and environment of one run of one case: where an agent may write, and nothing else.

A case gets one private area (mode 0700) that holds:

- ``scope/``: ``RECALL_SCOPE_DIR``, which its steps share, empty at first;
- ``home/``: with ``--recall-home=case`` (the default), the case's own HOME
  with its XDG directories, seeded with the ``--recall-home-copy`` files and
  shared by its steps too;
- ``step/``: made anew for every step and removed when it ends: the cost
  file, the prompt file of ``--recall-prompt=file`` and the step's TMPDIR, so
  none of them is a second store between steps, and HOME never lies under
  TMPDIR (agents that sandbox themselves refuse that);
- ``work/``: the working directory under ``--recall-workdir=case``, the same
  path in every step and emptied between steps, for agents that key their
  memory by their working directory. Under ``fresh`` (the default) every step
  gets a new directory with a random name instead.

The whole area is removed when the case ends.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_recall.cases.runs import MemoryFile

SCOPE_VAR = "RECALL_SCOPE_DIR"
COST_VAR = "RECALL_COST_FILE"
STEP_VAR = "RECALL_STEP"
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
HOME_MODES = ("case", "user")
WORKDIR_MODES = ("fresh", "case")
# The placeholders a --recall-env value may use.
ENV_PLACEHOLDERS = ("scope", "home", "workdir", "step", "case")
# A memory listing names at most this many files; the count says how many there were.
MEMORY_LISTING_LIMIT = 1000
_HASH_CHUNK = 1 << 20


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


class CaseArea:
    """The private area of one run of one case; see the module docstring."""

    def __init__(
        self,
        *,
        home_mode: str,
        home_copy: tuple[HomeCopy, ...],
        workdir_mode: str,
        shared_memory: Path | None = None,
    ) -> None:
        self.root = private_dir("recall-case-")
        self.workdir_mode = workdir_mode
        if shared_memory is None:
            prepare_memory(self.root, home_mode, home_copy)
        memory = shared_memory or self.root
        self.scope = memory / "scope"
        self.home = memory / "home" if home_mode == "case" else None

    def open_step(self) -> SessionRooms:
        """A fresh step directory and working directory: nothing of an earlier step is in either."""
        harness = self.root / "step"
        remove_tree(harness)
        harness.mkdir(mode=0o700)
        (harness / "tmp").mkdir(mode=0o700)
        if self.workdir_mode == "case":
            workdir = self.root / "work"
            remove_tree(workdir)
            workdir.mkdir(mode=0o700)
        else:
            workdir = Path(tempfile.mkdtemp(prefix="recall-step-"))
        return SessionRooms(workdir=workdir, scope=self.scope, home=self.home, harness=harness)

    def close_step(self, rooms: SessionRooms) -> None:
        remove_tree(rooms.workdir)
        remove_made(rooms.harness, ("tmp",), (COST_FILE_NAME, PROMPT_FILE_NAME))

    def close(self) -> None:
        remove_tree(self.root)

    def environment(
        self,
        base: Mapping[str, str],
        rooms: SessionRooms,
        *,
        step: int,
        case_id: str,
        overrides: tuple[tuple[str, str | None], ...],
        prompt_file: Path | None,
    ) -> dict[str, str]:
        """The agent's environment for one step: the run's, then the case's rooms, then ``--recall-env``."""
        env = dict(base)
        env[SCOPE_VAR] = str(self.scope)
        env[COST_VAR] = str(rooms.harness / COST_FILE_NAME)
        env[STEP_VAR] = str(step)
        env.update(dict.fromkeys(TEMP_VARS, str(rooms.harness / "tmp")))
        if prompt_file is not None:
            env[PROMPT_FILE_VAR] = str(prompt_file)
        if self.home is not None:
            env["HOME"] = str(self.home)
            env.update({var: str(self.home / sub) for var, sub in XDG_DIRS.items()})
        values = {
            "scope": str(self.scope),
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
        return env

    def memory(self) -> tuple[tuple[MemoryFile, ...], int, int]:
        """What the agent keeps between steps: (files under scope/ and home/, up to the limit; file count; bytes)."""
        files: list[MemoryFile] = []
        count = total = 0
        for root in (self.scope, self.home):
            if root is None:
                continue
            for path in sorted(_regular_files(root)):
                size = path.stat().st_size
                count += 1
                total += size
                if len(files) < MEMORY_LISTING_LIMIT:
                    name = f"{root.name}/{path.relative_to(root).as_posix()}"
                    files.append(MemoryFile(name, size, _sha256(path)))
        return tuple(files), count, total


def prepare_memory(root: Path, home_mode: str, copies: tuple[HomeCopy, ...]) -> None:
    """``scope/`` and, for a HOME per case, ``home/`` under ``root``: what steps (or, shared, cases) keep."""
    (root / "scope").mkdir(mode=0o700)
    if home_mode == "case":
        _prepare_home(root / "home", copies)


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


def check_env_template(template: str) -> str | None:
    """Why a ``--recall-env`` value cannot be filled in, or None when it can."""
    try:
        template.format_map(dict.fromkeys(ENV_PLACEHOLDERS, ""))
    except KeyError as exc:
        return f"unknown placeholder {{{exc.args[0]}}}; use {', '.join('{' + p + '}' for p in ENV_PLACEHOLDERS)}"
    except (ValueError, IndexError) as exc:
        return f"{exc}; write a literal brace as {{{{ or }}}}"
    return None


def private_dir(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(path, stat.S_IRWXU)
    return path


def remove_tree(path: Path) -> None:
    """Remove a directory an agent may have made hard to remove (read-only dirs)."""

    def make_writable_and_retry(function: Callable[..., Any], target: str, _exc: object) -> None:
        """Once more after making it writable; best effort, since removal must never hide why a case failed
        (with no descriptors left, say, even the walk fails, and rmtree's failing call may need more arguments)."""
        try:
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            os.chmod(target, stat.S_IRWXU)
            function(target)
        except (OSError, TypeError):
            pass

    try:
        # Many steps leave their directory empty: one rmdir then, instead of rmtree's walk
        # (an open, a stat, a directory listing and a close for every directory).
        os.rmdir(path)
        return
    except FileNotFoundError:
        return
    except OSError:
        pass  # not empty, not a plain directory, or not removable as it is: the full walk below
    if not (path.exists() or path.is_symlink()):
        return
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=make_writable_and_retry)
    else:  # pragma: no cover - Python < 3.12
        shutil.rmtree(path, onerror=make_writable_and_retry)


def remove_made(path: Path, folders: tuple[str, ...], files: tuple[str, ...]) -> None:
    """Remove a folder the harness made, with the entries it may hold: a few ``rmdir`` and ``unlink`` calls.

    The full walk of :func:`remove_tree` is left for a folder that holds
    anything else (an agent wrote into it, or a folder is not empty).
    """
    try:
        for name in folders:
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(path / name)
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path / name)
        os.rmdir(path)
    except FileNotFoundError:
        return
    except OSError:
        remove_tree(path)


def _regular_files(root: Path) -> Iterator[Path]:
    """Regular files under ``root``, never following a link out of it."""
    for folder, _dirs, names in os.walk(root, followlinks=False):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                yield path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(_HASH_CHUNK):
                digest.update(chunk)
    except OSError:
        return "unreadable"
    return digest.hexdigest()
