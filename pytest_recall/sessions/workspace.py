"""A case's workspace in the step's workdir: copied in before a step, kept or pictured after it.

- ``workspace = "fresh"``: each step's workdir gets a pristine copy of the
  tree for that step, so nothing the agent wrote into the project survives.
- ``workspace = "carry"``: the workdir a step leaves is moved (one rename)
  into the case's private harness directory and moved back in as the next
  step's workdir. Between steps no agent runs, so no session ever sees it
  there. A ``workspace.stepN/`` replaces the carried state at step N.

After the last step, :func:`take_snapshot` pictures the workdir for the files
judge, within fixed bounds: regular files only are read, each up to a cap;
symlinks are recorded with their target and never followed; a 1 GB file
costs the cap, not a gigabyte.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from types import MappingProxyType

from pytest_recall.cases import (
    ENTRY_DIR,
    ENTRY_FILE,
    ENTRY_OTHER,
    ENTRY_SYMLINK,
    KIND_FILES,
    Case,
    SnapshotEntry,
    WorkspaceSnapshot,
    WorkspaceTree,
)
from pytest_recall.sessions.spawn import AgentStartError
from pytest_recall.sessions.workspace_copy import CopyPlan

CARRIED_DIR = "carried-workspace"
# The errors of a disk with no room left for the copy, for anyone or for this user.
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
# How many entries of the case's area a full disk's accounting walks before it stops counting.
AREA_WALK_MAX_ENTRIES = 100_000
# Bounds of one snapshot: bytes read per file, paths pictured, bytes read in all.
SNAPSHOT_FILE_CAP = 256 * 1024
SNAPSHOT_MAX_PATHS = 20_000
SNAPSHOT_MAX_BYTES = 32 * 1024 * 1024


def uses_workspace(case: Case) -> bool:
    """Whether the harness does anything to a case's workdirs beyond making and removing them."""
    return case.workspace is not None or case.workspace_mode == "carry" or case.answer_kind == KIND_FILES


class WorkspaceKeeper:
    """The workspace of one case in flight: what each step starts from, and the picture of the last."""

    def __init__(self, case: Case, harness: Path, *, last_step: int) -> None:
        self.case = case
        self.harness = harness
        self.carried = harness / CARRIED_DIR
        # What the disk had free before any step: whether a full disk later is the agent's doing is judged on it.
        self.free_at_start = _free_bytes(harness)
        self.entered = 0
        self.last_step = last_step
        self.before: dict[str, SnapshotEntry] = {}
        self.snapshot: WorkspaceSnapshot | None = None
        # Each tree is laid out for copying once per case, not once per step; keyed by the tree itself.
        self._plans: dict[int, tuple[WorkspaceTree, CopyPlan]] = {}

    def _plan(self, tree: WorkspaceTree) -> CopyPlan:
        kept = self._plans.get(id(tree))
        if kept is None or kept[0] is not tree:
            kept = self._plans[id(tree)] = (tree, CopyPlan.of(tree))
        return kept[1]

    def enter(self, step_number: int, workdir: Path) -> None:
        """Fill the (empty) workdir a step is about to start in; a failure is the case's error, not a crash."""
        self.entered += 1
        try:
            self._enter(step_number, workdir)
        except OSError as exc:
            if exc.errno in DISK_FULL:
                raise self._disk_full(step_number, exc) from None
            raise AgentStartError(f"the workspace could not be copied into the step's workdir: {exc}") from None

    def _disk_full(self, step_number: int, exc: OSError) -> AgentStartError:
        """A disk with no room for the copy: the agent's doing when, after a step of its own, what the case's area
        holds (its memory, HOME, carried workspace) is at least half of what the disk had free when the case
        began; otherwise something else filled it, and the case is the harness's error."""
        held = _bytes_under(self.harness)
        share = f"the case's folders hold {_megabytes(held)} of the {_megabytes(self.free_at_start)} free when it began"
        if self.entered > 1 and 2 * held >= self.free_at_start:
            return DiskFilledByAgent(f"it filled the disk before step {step_number} ({share}): {exc.strerror}")
        return AgentStartError(
            f"the workspace could not be copied into the step's workdir: the disk is full, not by this case's agent "
            f"({share}); free some space and run it again: {exc.strerror}"
        )

    def _enter(self, step_number: int, workdir: Path) -> None:
        carry = self.case.workspace_mode == "carry"
        copied: CopyPlan | None = None
        replaced = self.case.workspace is not None and self.case.workspace.replaced_at(step_number)
        if replaced and self.carried.is_dir():
            # The teammate's tree replaces what was carried; the harness directory's removal takes the old one.
            os.rename(self.carried, self.carried.with_name(f"{CARRIED_DIR}-before-step{step_number}"))
        if carry and not replaced and self.carried.is_dir():
            # rename(2) replaces an empty directory: the step's random workdir name is kept.
            os.rename(self.carried, workdir)
        elif self.case.workspace is not None:
            copied = self._plan(self.case.workspace.tree_for(step_number))
            copied.write_into(workdir)
        if step_number == self.last_step and self.case.answer_kind == KIND_FILES:
            # A tree just copied in is the workdir: picture it from memory when a disk read would see it all.
            within = copied is not None and len(copied.dirs) + len(copied.files) <= SNAPSHOT_MAX_PATHS
            if copied is not None and within and copied.total_bytes < SNAPSHOT_MAX_BYTES:
                self.before = copied.picture(SNAPSHOT_FILE_CAP)
            else:
                self.before, _ = _picture(workdir)

    def leave(self, step_number: int, workdir: Path) -> str | None:
        """After a step's process has gone: picture the last step's workdir, carry any other on.

        Returns what kept the workspace from being carried, or None. Only the agent has run since
        ``enter`` (in default mode it reaches the case's area, where the workspace is carried to), so
        that is the agent's failure, scored, not the case's error.
        """
        try:
            self._leave(step_number, workdir)
        except OSError as exc:
            return f"the workspace could not be kept after step {step_number}: {exc.strerror or exc}"
        return None

    def _leave(self, step_number: int, workdir: Path) -> None:
        if workdir.is_symlink():
            return  # swapped for a link by the agent: nothing is read through it, and its removal says so
        if step_number == self.last_step:
            if self.case.answer_kind == KIND_FILES:
                self.snapshot = take_snapshot(workdir, before=self.before)
            return
        if self.case.workspace_mode == "carry" and workdir.is_dir():
            os.rename(workdir, self.carried)


def take_snapshot(
    workdir: Path, *, before: dict[str, SnapshotEntry] | None = None, cap_bytes: int = SNAPSHOT_FILE_CAP
) -> WorkspaceSnapshot:
    after, incomplete = _picture(workdir, cap_bytes)
    return WorkspaceSnapshot(
        after=MappingProxyType(after),
        before=MappingProxyType(dict(before or {})),
        cap_bytes=cap_bytes,
        incomplete=incomplete,
    )


def _picture(workdir: Path, cap_bytes: int = SNAPSHOT_FILE_CAP) -> tuple[dict[str, SnapshotEntry], str | None]:
    """Every path under ``workdir`` by its relative POSIX name, breadth first in sorted order."""
    root = os.path.realpath(workdir)
    entries: dict[str, SnapshotEntry] = {}
    budget = SNAPSHOT_MAX_BYTES
    incomplete = None
    pending = [""]
    while pending:
        relative_dir = pending.pop(0)
        try:
            with os.scandir(os.path.join(root, relative_dir)) as listing:
                names = sorted(entry.name for entry in listing)
        except OSError:
            continue
        for name in names:
            if len(entries) >= SNAPSHOT_MAX_PATHS:
                return entries, f"more than {SNAPSHOT_MAX_PATHS} paths; the rest were not pictured"
            relative = f"{relative_dir}/{name}" if relative_dir else name
            path = os.path.join(root, relative)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(info.st_mode):
                entries[relative] = _symlink_entry(root, path)
            elif stat.S_ISDIR(info.st_mode):
                entries[relative] = SnapshotEntry(ENTRY_DIR)
                pending.append(relative)
            elif stat.S_ISREG(info.st_mode):
                entry = _file_entry(path, min(cap_bytes, budget))
                budget -= len(entry.data)
                if budget <= 0 and incomplete is None:
                    incomplete = f"more than {SNAPSHOT_MAX_BYTES} bytes in all; later files were not read"
                entries[relative] = entry
            else:
                entries[relative] = SnapshotEntry(ENTRY_OTHER)
    return entries, incomplete


def _symlink_entry(root: str, path: str) -> SnapshotEntry:
    try:
        target = os.readlink(path)
    except OSError:
        target = ""
    resolved = os.path.realpath(path)
    inside = None
    if resolved != root and os.path.commonpath([resolved, root]) == root:
        inside = os.path.relpath(resolved, root).replace(os.sep, "/")
    return SnapshotEntry(ENTRY_SYMLINK, target=target, inside=inside)


def _file_entry(path: str, cap_bytes: int) -> SnapshotEntry:
    """At most ``cap_bytes`` of a regular file, opened without following a symlink swapped in meanwhile."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return SnapshotEntry(ENTRY_OTHER)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return SnapshotEntry(ENTRY_OTHER)
        chunks: list[bytes] = []
        wanted = max(cap_bytes, 0)
        while wanted > 0:
            chunk = os.read(fd, min(wanted, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            wanted -= len(chunk)
        data = b"".join(chunks)
        return SnapshotEntry(
            ENTRY_FILE, size=info.st_size, data=data, truncated=info.st_size > len(data), links=info.st_nlink
        )
    except OSError:
        return SnapshotEntry(ENTRY_OTHER)
    finally:
        os.close(fd)


class DiskFilledByAgent(AgentStartError):
    """A later step could not start because the agent's own files filled the disk: its failure, not the harness's."""


def _free_bytes(path: Path) -> int:
    try:
        info = os.statvfs(path)
    except OSError:
        return 0
    return info.f_bavail * info.f_frsize


def _bytes_under(root: Path) -> int:
    """The disk space the files under ``root`` take (blocks, so a sparse file counts what it holds), links not
    followed, up to a bounded number of entries: an agent's deep tree costs the bound, not its size."""
    total = entries = 0
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            entries += 1
            if entries > AREA_WALK_MAX_ENTRIES:
                return total
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                continue
    return total


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"
