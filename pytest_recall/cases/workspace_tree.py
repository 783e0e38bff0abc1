"""A case's workspace, and what an agent left in it: plain values, below every layer that uses them.

A case folder may hold ``workspace/``, a small project copied into each
step's working directory, and ``workspace.stepN/``, which replaces it from
step N on (a teammate's change between sessions). The trees are read into
memory when the case loads, so an agent only ever sees copies, the case's
content hash covers every byte, and a generated suite needs no disk at all.

The snapshot types are here too: the session layer takes them, the files
judge reads them, and neither needs to know about the other.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

WORKSPACE_DIR = "workspace"
WORKSPACE_MODES = ("fresh", "carry")
STEP_WORKSPACE = re.compile(r"^workspace\.step(\d+)$")
# A fixture is a small project: beyond these it is refused rather than copied before every step.
MAX_FIXTURE_FILES = 5000
MAX_FIXTURE_BYTES = 64 * 1024 * 1024


class WorkspaceError(ValueError):
    """A workspace folder that cannot be a fixture; the message names the path."""


@dataclass(frozen=True, slots=True)
class WorkspaceTree:
    """One workspace: relative POSIX path -> bytes for files, and the directories (empty ones included)."""

    files: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))
    dirs: tuple[str, ...] = ()

    def digest(self) -> str:
        blob = hashlib.sha256()
        for name in self.dirs:
            blob.update(b"d\0" + name.encode() + b"\0")
        for name in sorted(self.files):
            blob.update(b"f\0" + name.encode() + b"\0" + hashlib.sha256(self.files[name]).digest())
        return blob.hexdigest()


@dataclass(frozen=True, slots=True)
class CaseWorkspace:
    """The workspace of a case: the base tree and the trees that replace it at later steps."""

    base: WorkspaceTree
    by_step: Mapping[int, WorkspaceTree] = field(default_factory=lambda: MappingProxyType({}))

    def tree_for(self, step_number: int) -> WorkspaceTree:
        """The tree a step starts from: the latest ``workspace.stepN`` with N <= the step, else the base."""
        replaced = [n for n in self.by_step if n <= step_number]
        return self.by_step[max(replaced)] if replaced else self.base

    def replaced_at(self, step_number: int) -> bool:
        return step_number in self.by_step

    def digest(self) -> str:
        parts = [self.base.digest()] + [f"{n}:{self.by_step[n].digest()}" for n in sorted(self.by_step)]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def make_tree(files: Mapping[str, str | bytes]) -> WorkspaceTree:
    """A tree from path -> text or bytes; the directories are implied by the paths."""
    encoded = {name: data.encode("utf-8") if isinstance(data, str) else data for name, data in files.items()}
    dirs = sorted({str(Path(name).parent.as_posix()) for name in encoded} - {"."})
    implied = sorted({parent for d in dirs for parent in _parents(d)})
    return WorkspaceTree(MappingProxyType(dict(sorted(encoded.items()))), tuple(implied))


def _parents(directory: str) -> list[str]:
    parts = directory.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def read_tree(folder: Path) -> WorkspaceTree:
    """A workspace folder read into memory; symlinks and special files are refused, never followed.

    A case is read again as it starts, and in default mode an agent may have planted something in a
    later case's folder: a tree deeper than ``os.walk`` recurses (Python 3.11) is refused in one line.
    """
    try:
        return _read_tree(folder)
    except RecursionError:
        raise WorkspaceError(f"{folder}: a workspace nests too deep to read; keep the fixture small") from None


def _read_tree(folder: Path) -> WorkspaceTree:
    files: dict[str, bytes] = {}
    dirs: list[str] = []
    total = 0
    for root, subdirs, names in os.walk(folder, followlinks=False):
        subdirs.sort()
        relative_root = Path(root).relative_to(folder)
        for name in sorted(subdirs + names):
            path = Path(root) / name
            relative = (relative_root / name).as_posix()
            if path.is_symlink():
                raise WorkspaceError(f"{path}: a workspace may not hold symlinks; copy the file in instead")
            if path.is_dir():
                dirs.append(relative)
            elif path.is_file():
                # Sized before it is read: a sparse terabyte planted here is refused below, never read.
                total += path.stat().st_size
                if total <= MAX_FIXTURE_BYTES:
                    files[relative] = path.read_bytes()
            else:
                raise WorkspaceError(f"{path}: only regular files and folders can be in a workspace")
            if len(files) > MAX_FIXTURE_FILES or total > MAX_FIXTURE_BYTES:
                raise WorkspaceError(
                    f"{folder}: a workspace holds at most {MAX_FIXTURE_FILES} files and "
                    f"{MAX_FIXTURE_BYTES // (1024 * 1024)} MiB; keep the fixture a small project"
                )
    return WorkspaceTree(MappingProxyType(dict(sorted(files.items()))), tuple(sorted(dirs)))


def read_case_workspace(folder: Path, names: Iterable[str] | None = None) -> CaseWorkspace | None:
    """``workspace/`` and ``workspace.stepN/`` of a case folder, or None when it has neither."""
    if names is not None and not any(name.startswith(WORKSPACE_DIR) for name in names):
        return None  # the folder's listing, made already, names no workspace: nothing to stat
    base_dir = folder / WORKSPACE_DIR
    by_step: dict[int, WorkspaceTree] = {}
    for entry in sorted(folder.iterdir()):
        match = STEP_WORKSPACE.match(entry.name)
        if match and entry.is_dir():
            by_step[int(match.group(1))] = read_tree(entry)
    if not base_dir.is_dir() and not by_step:
        return None
    base = read_tree(base_dir) if base_dir.is_dir() else WorkspaceTree()
    return CaseWorkspace(base, MappingProxyType(dict(sorted(by_step.items()))))


def write_tree(tree: WorkspaceTree, target: Path) -> None:
    """Write a tree under ``target`` (which exists), bytes for bytes."""
    for name in tree.dirs:
        (target / name).mkdir(parents=True, exist_ok=True)
    for name, data in tree.files.items():
        path = target / name
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


def write_case_workspace(workspace: CaseWorkspace, case_folder: Path) -> None:
    """The workspace folders of a case folder, as :func:`read_case_workspace` reads them back."""
    if workspace.base.files or workspace.base.dirs:
        base = case_folder / WORKSPACE_DIR
        base.mkdir(exist_ok=True)
        write_tree(workspace.base, base)
    for number, tree in workspace.by_step.items():
        folder = case_folder / f"{WORKSPACE_DIR}.step{number}"
        folder.mkdir(exist_ok=True)
        write_tree(tree, folder)


# --- what an agent left: taken by the session layer, read by the files judge ---

ENTRY_FILE = "file"
ENTRY_DIR = "dir"
ENTRY_SYMLINK = "symlink"
ENTRY_OTHER = "other"


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    """One path of a workdir as it was left.

    ``data`` holds at most the snapshot's cap of a regular file's bytes
    (``truncated`` says whether there was more, ``size`` how much). A symlink
    keeps its ``target`` as written and ``inside``, the workdir-relative path
    it resolves to, or None when it leads out of the workdir.
    """

    kind: str
    size: int = 0
    data: bytes = b""
    truncated: bool = False
    target: str | None = None
    inside: str | None = None
    links: int = 1


@dataclass(frozen=True, slots=True)
class WorkspaceSnapshot:
    """A bounded picture of a workdir: after the last step, and as that step started (for ``unchanged``)."""

    after: Mapping[str, SnapshotEntry]
    before: Mapping[str, SnapshotEntry] = field(default_factory=lambda: MappingProxyType({}))
    cap_bytes: int = 0
    incomplete: str | None = None
