"""The files judge: does the workdir the last session left pass every check of the answer?

A pure function over a :class:`WorkspaceSnapshot`; the session layer took the
snapshot and read every file within its bounds. The score is 1.0 when every
check holds and 0.0 otherwise. The reason names the first check that failed,
with a short excerpt of what the file holds, and the verdict counts the
checks that held.

No path leads the judge out of the workdir: a symlink that resolves outside
it fails its check and says so, and so does a file with other hard links,
which may be a case's own ``answer.json`` under a second name.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_recall.cases import (
    ENTRY_DIR,
    ENTRY_FILE,
    ENTRY_SYMLINK,
    FileCheck,
    SnapshotEntry,
    WorkspaceSnapshot,
    parse_checks,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

EXCERPT_CHARS = 120
MAX_LINK_HOPS = 40


@dataclass(frozen=True, slots=True)
class _Found:
    """Where a judged path led: a name in the snapshot, or why it leads nowhere the judge may go."""

    name: str
    entry: SnapshotEntry | None
    refused: str | None = None


def score_files(snapshot: WorkspaceSnapshot | None, expected: Mapping[str, Any]) -> dict[str, Any]:
    """Judge a ``files`` answer against what the last step left; see the module docstring."""
    category = expected.get("category")
    checks = parse_checks(expected.get("answer"))
    if snapshot is None:
        return _verdict(0.0, "no workspace snapshot was taken, so no file can be judged", category, 0, len(checks))
    first_failure: str | None = None
    passed = 0
    for index, check in enumerate(checks, start=1):
        problem = check_failure(snapshot, check)
        if problem is None:
            passed += 1
        elif first_failure is None:
            first_failure = f"check {index} of {len(checks)} failed: {check.describe()}: {problem}"
    if first_failure is None:
        return _verdict(1.0, f"all {len(checks)} file checks hold", category, passed, len(checks))
    if snapshot.incomplete:
        first_failure += f" (the snapshot is incomplete: {snapshot.incomplete})"
    return _verdict(0.0, first_failure, category, passed, len(checks))


def _verdict(score: float, reason: str, category: Any, passed: int, total: int) -> dict[str, Any]:
    return {
        "score": score,
        "reason": reason,
        "category": category,
        "reported": f"{passed}/{total} checks",
        "checks_passed": passed,
        "checks_total": total,
    }


def check_failure(snapshot: WorkspaceSnapshot, check: FileCheck) -> str | None:
    """Why one check fails, or None when it holds."""
    found = _resolve(snapshot.after, check.path.rstrip("/"))
    if check.test == "absent":
        if found.entry is None and found.refused is None:
            return None
        return found.refused or f"it is present ({_kind(found.entry)})"
    if found.refused is not None:
        return found.refused
    if check.test == "unchanged":
        return _unchanged_failure(snapshot, check, found)
    if found.entry is None:
        return "it does not exist"
    if check.test == "exists":
        if check.is_dir and found.entry.kind != ENTRY_DIR:
            return f"it is a {_kind(found.entry)}, not a folder"
        return None
    text, problem = _file_text(found.entry)
    if problem is not None:
        return problem
    if check.test == "contains":
        return None if str(check.value) in text else f"the text is not there; the file holds {_excerpt(text)}"
    if check.test == "not_contains":
        if found.entry.truncated:
            return f"the file is larger than the snapshot's cap of {snapshot.cap_bytes} bytes, so absence is unproven"
        where = text.find(str(check.value))
        return None if where < 0 else f"the text is there: {_excerpt(text[max(0, where - 20) :])}"
    if check.test == "matches":
        return None if check.pattern().search(text) else f"no line matches; the file holds {_excerpt(text)}"
    return _key_path_failure(check, text)


def _resolve(after: Mapping[str, SnapshotEntry], path: str) -> _Found:
    """Follow a path through the snapshot, symlinks included, refusing any that leaves the workdir."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    current: list[str] = []
    hops = 0
    while parts:
        current.append(parts.pop(0))
        name = "/".join(current)
        entry = after.get(name)
        if entry is None:
            return _Found(name, None)
        if entry.kind == ENTRY_SYMLINK:
            if entry.inside is None:
                return _Found(name, entry, f"{name} is a symlink pointing outside the workdir (to {entry.target})")
            hops += 1
            if hops > MAX_LINK_HOPS:
                return _Found(name, entry, f"{name} is a symlink loop")
            current = entry.inside.split("/") if entry.inside else []
            if current and "/".join(current) not in after:
                return _Found(name, None)
    name = "/".join(current)
    return _Found(name, after.get(name) if name else None)


def _kind(entry: SnapshotEntry | None) -> str:
    if entry is None:
        return "missing"
    return {ENTRY_FILE: "file", ENTRY_DIR: "folder", ENTRY_SYMLINK: "symlink"}.get(entry.kind, "special file")


def _file_text(entry: SnapshotEntry) -> tuple[str, str | None]:
    if entry.kind != ENTRY_FILE:
        return "", f"it is a {_kind(entry)}, not a file"
    if entry.links > 1:
        return "", f"the file has {entry.links} hard links; a judged file must be the workdir's own"
    return entry.data.decode("utf-8", "replace"), None


def _excerpt(text: str) -> str:
    if not text:
        return "nothing (it is empty)"
    short = text[:EXCERPT_CHARS]
    return json.dumps(short + ("..." if len(text) > EXCERPT_CHARS else ""), ensure_ascii=False)


def _unchanged_failure(snapshot: WorkspaceSnapshot, check: FileCheck, found: _Found) -> str | None:
    """Compare a file, or every path under a folder, with the step's starting workspace."""
    before = _resolve(snapshot.before, check.path.rstrip("/"))
    if before.refused is not None or (before.entry is not None and before.entry.kind == ENTRY_SYMLINK):
        return "the starting workspace held no plain file or folder there to compare with"
    if before.entry is None:
        if found.entry is None:
            return None
        return f"it was absent when the step started, and is now a {_kind(found.entry)}"
    if found.entry is None:
        return "it was removed"
    if before.entry.kind == ENTRY_DIR:
        if found.entry.kind != ENTRY_DIR:
            return f"the folder became a {_kind(found.entry)}"
        return _folder_changes(snapshot, before.name, found.name)
    return _entry_change(before.entry, found.entry)


def _entry_change(old: SnapshotEntry, new: SnapshotEntry) -> str | None:
    if old.kind != new.kind:
        return f"a {_kind(old)} became a {_kind(new)}"
    if new.kind == ENTRY_FILE and new.links > 1:
        return f"the file has {new.links} hard links; a judged file must be the workdir's own"
    if old.truncated or new.truncated:
        return "the file is larger than the snapshot's cap, so it cannot be shown unchanged"
    if old.data != new.data or old.target != new.target:
        return f"its content changed; it now holds {_excerpt(new.data.decode('utf-8', 'replace'))}"
    return None


def _folder_changes(snapshot: WorkspaceSnapshot, old_root: str, new_root: str) -> str | None:
    old = {name[len(old_root) + 1 :]: e for name, e in snapshot.before.items() if name.startswith(old_root + "/")}
    new = {name[len(new_root) + 1 :]: e for name, e in snapshot.after.items() if name.startswith(new_root + "/")}
    for name in sorted(set(old) | set(new)):
        if name not in new:
            return f"{old_root}/{name} was removed"
        if name not in old:
            return f"{old_root}/{name} was added"
        change = _entry_change(old[name], new[name])
        if change is not None:
            return f"{old_root}/{name}: {change}"
    return None


def _key_path_failure(check: FileCheck, text: str) -> str | None:
    try:
        data: Any = json.loads(text) if check.test == "json" else tomllib.loads(text)
    except ValueError as exc:
        return f"it is not valid {check.test.upper()} ({exc}); the file holds {_excerpt(text)}"
    except RecursionError:
        # Both parsers recurse per level; the agent's file, nested past that, fails its check rather than the run.
        return f"it is {check.test.upper()} nested too deep to read; the file holds {_excerpt(text)}"
    for key in check.key_path:
        if isinstance(data, dict) and str(key) in data:
            data = data[str(key)]
        elif isinstance(data, list) and isinstance(key, int) and 0 <= key < len(data):
            data = data[key]
        else:
            return f"it has no {'.'.join(map(str, check.key_path))}; the file holds {_excerpt(text)}"
    if _same_value(data, check.equals):
        return None
    return f"it holds {json.dumps(data, ensure_ascii=False, default=str)}"


def _same_value(actual: Any, wanted: Any) -> bool:
    """Equal as JSON values: ``true`` is not ``1``, though ``97`` is ``97.0``."""
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return type(actual) is type(wanted) and actual == wanted
    return bool(actual == wanted)
