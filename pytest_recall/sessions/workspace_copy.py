"""Copying a workspace tree into a step's empty workdir: few system calls, private bytes, nothing followed.

Every step of a workspace case pays this copy, so it is laid out once per
tree (:class:`CopyPlan`) and then costs one ``mkdir`` per directory and an
``open``, a ``write`` and a ``close`` per file: no path objects, no
existence probes, no ``O_TRUNC`` on a file that cannot exist yet, no
``copystat`` and no ``fsync`` (a workdir is scratch space that dies with the
step). The bytes come from the case's tree in memory, so every file the
agent sees is its own inode: never a hard link or reflink into the case
folder, which stays unchanged whatever the agent does.

``O_EXCL | O_NOFOLLOW`` make a file the harness writes always a new one: a
path that already exists (a symlink planted by anything) is an error, not a
file written through. The workdir is made empty by the harness just before,
so that error never happens in a sound run.

Right after the copy, the workdir holds exactly the tree, so the picture the
files judge compares ``unchanged`` checks with is made from the tree in
memory (:meth:`CopyPlan.picture`) instead of being read back from disk,
whenever the tree is within the snapshot's bounds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pytest_recall.cases import ENTRY_DIR, ENTRY_FILE, SnapshotEntry, WorkspaceTree

# Python opens every descriptor close-on-exec already (PEP 446): no agent inherits one.
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
_FILE_MODE = 0o644


@dataclass(frozen=True, slots=True)
class CopyPlan:
    """A tree laid out for copying: directories parents first, then files, each by relative POSIX path."""

    dirs: tuple[str, ...]
    files: tuple[tuple[str, bytes], ...]

    @classmethod
    def of(cls, tree: WorkspaceTree) -> CopyPlan:
        implied = {name.rpartition("/")[0] for name in tree.files} - {""}
        every = set(tree.dirs) | {parent for name in implied for parent in _parents(name)}
        dirs = tuple(sorted(every, key=lambda name: (name.count("/"), name)))
        return cls(dirs, tuple(tree.files.items()))

    @property
    def total_bytes(self) -> int:
        return sum(len(data) for _, data in self.files)

    def write_into(self, target: Path) -> None:
        """Fill ``target``, an existing empty directory, with the tree."""
        root = os.fspath(target)
        for name in self.dirs:
            os.mkdir(f"{root}/{name}")
        for name, data in self.files:
            fd = os.open(f"{root}/{name}", _FILE_FLAGS, _FILE_MODE)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)

    def picture(self, cap_bytes: int) -> dict[str, SnapshotEntry]:
        """What a snapshot of the workdir reads right after :meth:`write_into`, without reading it."""
        entries = {name: SnapshotEntry(ENTRY_DIR) for name in self.dirs}
        for name, data in self.files:
            kept = data[: max(cap_bytes, 0)]
            entries[name] = SnapshotEntry(ENTRY_FILE, size=len(data), data=kept, truncated=len(data) > len(kept))
        return entries


def _parents(directory: str) -> list[str]:
    parts = directory.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]
