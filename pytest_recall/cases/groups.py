"""Case groups: cases that share one ingest phase and one memory.

A group is a folder with a ``group.toml`` and its ingest prompts,
``ingest1.txt``, ``ingest2.txt``, ...; each subfolder is a case whose own
steps (usually one: the question) follow the ingest. Run on its own, a
grouped case is simply the ingest steps then its own; the executor runs a
group's ingest once per epoch and hands every case of the group a copy of
the memory it left (see :mod:`pytest_recall.sessions.case_groups`).

LoCoMo is the reason: its 150 to 200 questions per conversation would
otherwise each replay 35 sessions.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

GROUP_FILE = "group.toml"
_INGEST_FILE = re.compile(r"^ingest(\d+)\.txt$")


class GroupError(ValueError):
    """A group folder that cannot be read; the message names the folder and the file."""


@dataclass(frozen=True, slots=True)
class CaseGroup:
    """A group's key (its folder's node id, the same in every process) and its ingest prompts."""

    key: str
    prompts: tuple[str, ...]


def is_group_dir(path: Path) -> bool:
    # os.path, not pathlib: asked of every case folder's parent, twice a case.
    return os.path.isfile(os.path.join(path, GROUP_FILE))


def group_key_of_nodeid(nodeid: str) -> str:
    """The group a grouped case's node id belongs to: the folder above the case's own."""
    case_part = nodeid.split("::", 1)[0].rstrip("/")
    return case_part.rsplit("/", 1)[0] if "/" in case_part else ""


# Every case of a group reads the same ingest files; one copy of their text serves them all.
_CACHE: dict[tuple[Path, tuple[tuple[str, int, int], ...]], tuple[str, ...]] = {}


def read_group(folder: Path, key: str) -> CaseGroup:
    """The ingest prompts of a group folder, in order, refusing gaps; read once per process while unchanged."""
    numbered: dict[int, Path] = {}
    try:
        entries = list(folder.iterdir())
    except OSError as exc:
        raise GroupError(f"{key}: cannot list the group folder ({exc.strerror or exc})") from None
    for entry in entries:
        match = _INGEST_FILE.match(entry.name)
        if match:
            numbered[int(match.group(1))] = entry
    if not numbered:
        raise GroupError(f"{key}: {GROUP_FILE} declares a case group, but there is no ingest1.txt")
    wanted = list(range(1, len(numbered) + 1))
    if sorted(numbered) != wanted:
        gap = next(n for n in wanted if n not in numbered)
        raise GroupError(f"{key}: ingest{gap}.txt is missing; ingest files are numbered 1, 2, 3 ... without gaps")
    stamp = tuple((p.name, int(p.stat().st_mtime_ns), p.stat().st_size) for p in (numbered[n] for n in wanted))
    cached = _CACHE.get((folder, stamp))
    if cached is None:
        try:
            cached = tuple(numbered[n].read_text(encoding="utf-8") for n in wanted)
        except (OSError, UnicodeDecodeError) as exc:
            raise GroupError(f"{key}: cannot read an ingest file as UTF-8 text ({exc})") from None
        if len(_CACHE) > 64:
            _CACHE.clear()
        _CACHE[(folder, stamp)] = cached
    return CaseGroup(key, cached)
