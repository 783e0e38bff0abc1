"""``pytest-recall import``: the LongMemEval and LoCoMo importers, and the provenance every import keeps.

The file is read twice, one record at a time (:mod:`json_stream`), so no
import holds more than one record: the first pass checks every record and
picks the subset; the second writes the picked ones into a folder beside the
destination, which is renamed into place only when all of it is written. A
malformed file therefore stops the import with one line naming the record
and the field, and leaves nothing behind.

An ``--out`` that is a symbolic link (to an empty folder, or dangling) is
followed: the suite is staged beside the folder the link names and renamed
onto it, and the link keeps naming it. Refusing would make a user who keeps
suites on another disk through a link give the real path instead; staging
beside the link itself could only fail, since a folder cannot be renamed
onto a link.

Provenance: ``import.json`` beside the cases names each source file with its
size and SHA-256 (hashed during the checking pass, never a whole file in
memory), the importer and every option that shaped the suite, and the
harness version; each case's answer.json carries its origin (``question_id``,
``sample_id``). Importing again into a folder that holds an import is a
no-op when the files' hashes and the options are the same (the import is a
pure function of them, so a script that imports then runs can be run twice),
and is refused, naming both hashes, when either differs: a suite folder is
one data file's suite, so two reports from it compare like for like.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_recall.cases import ANSWER_FILE, GROUP_FILE
from pytest_recall.suites import locomo, longmemeval
from pytest_recall.suites.json_stream import CountedDigest, StreamError, iter_array
from pytest_recall.suites.public_records import RecordError

IMPORT_NOTE = "import.json"
# The version of import.json's layout; a reader checks it before trusting the fields (docs/public-benchmarks.md).
NOTE_FORMAT = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class PublicImportError(ValueError):
    """An import that cannot be done; one line, naming the file, the record and the field where there is one."""


@dataclass(frozen=True, slots=True)
class Selection:
    """Which questions to import: ``limit`` of those whose type and id match, sampled by ``seed`` when given."""

    limit: int | None = None
    types: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    seed: int | None = None
    sessions_per_step: int = 1
    # For the long haystacks (BEAM, MemoryAgentBench): the most characters of conversation one ingest step tells.
    chars_per_step: int = 60_000

    def options(self) -> dict[str, Any]:
        """Every option that shapes the suite, as import.json records them."""
        return {
            "limit": self.limit,
            "types": list(self.types),
            "ids": list(self.ids),
            "seed": self.seed,
            "sessions_per_step": self.sessions_per_step,
            "chars_per_step": self.chars_per_step,
        }


@dataclass(frozen=True, slots=True)
class ImportSummary:
    questions: int
    groups: int
    sessions: int
    sessions_per_step: int
    out: Path
    # True when ``out`` already held this very import (same files, same options) and nothing was written.
    again: bool = False
    # Set for the long haystacks, whose steps are cut by characters, not by sessions.
    chars_per_step: int | None = None

    def line(self, benchmark: str) -> str:
        grouped = f" in {self.groups} shared-ingest groups" if self.groups else ""
        if self.again:
            return f"{self.out} already holds this import (same file hashes, same options); nothing to do"
        per_step = (
            f"at most {self.chars_per_step} haystack characters per step"
            if self.chars_per_step
            else f"{self.sessions_per_step} haystack session(s) per step"
        )
        return (
            f"imported {self.questions} {benchmark} questions{grouped} into {self.out}: a run starts "
            f"{self.sessions} sessions ({per_step})"
        )


def folder_name(identifier: str) -> str:
    return _UNSAFE.sub("_", identifier).strip("._") or "case"


def pick(keys: Sequence[tuple[str, str, str]], selection: Selection) -> set[str]:
    """The ids chosen from (id, type, alternative id) keys in file order: filtered, then the first or a sample."""
    wanted = [
        key[0]
        for key in keys
        if (not selection.ids or key[0] in selection.ids or key[2] in selection.ids)
        and (not selection.types or key[1] in selection.types)
    ]
    if selection.limit is None or selection.limit >= len(wanted):
        return set(wanted)
    if selection.seed is None:
        return set(wanted[: selection.limit])
    return set(random.Random(selection.seed).sample(wanted, selection.limit))


def _records(path: Path, parse: Callable[[int, Any], Any], digest: CountedDigest | None = None) -> Iterator[Any]:
    try:
        for index, record in enumerate(iter_array(path, digest=digest)):
            try:
                yield parse(index, record)
            except RecordError as exc:
                raise PublicImportError(f"{path}: {exc}") from None
    except StreamError as exc:
        raise PublicImportError(str(exc)) from None
    except OSError as exc:
        raise PublicImportError(f"{path}: cannot read ({exc.strerror or exc})") from None


def write_case_files(folder: Path, files: dict[str, str]) -> None:
    """A case folder of ``files``, refused when two ids would share it: every importer writes its cases so."""
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        raise PublicImportError(
            f"two ids become the one folder name {folder.name!r}; import them apart with --id"
        ) from None
    for name, text in files.items():
        (folder / name).write_bytes(text.encode("utf-8"))


def answer_text(expected: dict[str, Any]) -> str:
    """An ``answer.json``'s text, the same bytes for the same expectation whichever importer wrote it."""
    return json.dumps(expected, indent=2, ensure_ascii=False) + "\n"


class Staging:
    """A folder beside ``out`` (a link followed) that becomes ``out`` only once complete; removed on any failure."""

    def __init__(self, out: Path) -> None:
        out = _followed(out)
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise PublicImportError(f"{out} already exists and is not empty; remove it or choose another --out")
        out.parent.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.path = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, kind: object, *_: object) -> None:
        try:
            if kind is None:
                if self.out.exists():
                    self.out.rmdir()
                self.path.rename(self.out)
        except OSError as exc:
            raise PublicImportError(f"cannot put the suite in {self.out} ({exc.strerror or exc})") from None
        finally:
            shutil.rmtree(self.path, ignore_errors=True)


def _followed(out: Path) -> Path:
    """The folder ``out`` names: where a link points, each link on the way followed."""
    target = Path(os.path.realpath(out))
    if target.is_symlink():  # a loop, which realpath leaves as it is
        raise PublicImportError(f"--out {out} is a symbolic link that leads round in a loop; give a folder")
    return target


def import_longmemeval(path: Path, out: Path, selection: Selection) -> ImportSummary:
    keys: list[tuple[str, str, str]] = []
    seen: dict[str, int] = {}
    digest = hashing()
    for index, question in enumerate(_records(path, longmemeval.parse_question, digest)):
        if question.question_id in seen:
            first = seen[question.question_id]
            raise PublicImportError(
                f"{path}: record {index}: question_id {question.question_id!r} repeats record {first}"
            )
        seen[question.question_id] = index
        category = question.category if question.category in selection.types else question.question_type
        keys.append((question.question_id, category, question.question_id))
    sources = [source_entry(path, digest)]
    done = already_imported(out, "longmemeval", sources, selection)
    if done is not None:
        return done
    chosen = pick(keys, selection)
    sessions = 0
    with Staging(out) as staging:
        for question in _records(path, longmemeval.parse_question):
            if question.question_id not in chosen:
                continue
            prompts = longmemeval.case_prompts(question, selection.sessions_per_step)
            files = {f"step{n}.txt": prompt for n, prompt in enumerate(prompts, start=1)}
            files[ANSWER_FILE] = answer_text(longmemeval.expectation(question, selection.sessions_per_step))
            write_case_files(staging / folder_name(question.question_id), files)
            sessions += len(prompts)
        summary = ImportSummary(len(chosen), 0, sessions, selection.sessions_per_step, out)
        write_note(staging, "longmemeval", sources, selection, summary)
    return summary


def import_locomo(path: Path, out: Path, selection: Selection) -> ImportSummary:
    keys: list[tuple[str, str, str]] = []
    samples: set[str] = set()
    digest = hashing()
    for index, conversation in enumerate(_records(path, locomo.parse_conversation, digest)):
        if conversation.sample_id in samples:
            raise PublicImportError(f"{path}: record {index}: sample_id {conversation.sample_id!r} appears twice")
        samples.add(conversation.sample_id)
        for qa in conversation.questions:
            kind = str(qa.category) if str(qa.category) in selection.types else qa.category_name
            keys.append((locomo.question_id(conversation, qa), kind, conversation.sample_id))
    sources = [source_entry(path, digest)]
    done = already_imported(out, "locomo", sources, selection)
    if done is not None:
        return done
    chosen = pick(keys, selection)
    sessions = groups = 0
    with Staging(out) as staging:
        for conversation in _records(path, locomo.parse_conversation):
            asked = [qa for qa in conversation.questions if locomo.question_id(conversation, qa) in chosen]
            if not asked:
                continue
            group = staging / folder_name(conversation.sample_id)
            ingest = locomo.ingest_prompts(conversation, selection.sessions_per_step)
            files = {f"ingest{n}.txt": prompt for n, prompt in enumerate(ingest, start=1)}
            files[GROUP_FILE] = f"# The shared ingest of LoCoMo conversation {conversation.sample_id}.\n"
            write_case_files(group, files)
            for qa in asked:
                expected = locomo.expectation(conversation, qa, selection.sessions_per_step)
                case_files = {"step1.txt": locomo.question_prompt(conversation, qa), ANSWER_FILE: answer_text(expected)}
                write_case_files(group / folder_name(expected["id"]), case_files)
            groups += 1
            sessions += len(ingest) + len(asked)
        summary = ImportSummary(len(chosen), groups, sessions, selection.sessions_per_step, out)
        write_note(staging, "locomo", sources, selection, summary)
    return summary


def hashing() -> CountedDigest:
    return CountedDigest(hashlib.sha256())


def source_entry(path: Path, digest: CountedDigest) -> dict[str, Any]:
    """A source file as import.json names it: its name (never this machine's path), size and SHA-256."""
    return {"name": path.name, "bytes": digest.size, "sha256": digest.digest.hexdigest()}  # type: ignore[attr-defined]


def harness_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-recall")
    except PackageNotFoundError:
        return "unknown (not installed)"


def write_note(
    folder: Path, benchmark: str, sources: list[dict[str, Any]], selection: Selection, summary: ImportSummary
) -> None:
    """What was imported and how, kept beside the cases so a report can be traced back to its import.

    The fields are documented in docs/public-benchmarks.md ("The provenance note") and kept stable: a field
    is added, never renamed, and ``note_format`` changes if a meaning ever must.
    """
    note = {
        "note_format": NOTE_FORMAT,
        "benchmark": benchmark,
        "importer": f"pytest-recall import {benchmark}",
        "harness_version": harness_version(),
        "sources": sources,
        "source": sources[0]["name"],
        "sha256": sources[0]["sha256"],
        "options": selection.options(),
        "questions": summary.questions,
        "groups": summary.groups,
        "sessions": summary.sessions,
        # The options again at the top level, as notes before note_format 1 kept them.
        **selection.options(),
    }
    (folder / IMPORT_NOTE).write_text(json.dumps(note, indent=2) + "\n", encoding="utf-8")


def already_imported(
    out: Path, benchmark: str, sources: list[dict[str, Any]], selection: Selection
) -> ImportSummary | None:
    """The summary of the same import already in ``out``; None when ``out`` holds no import; refused otherwise."""
    note_path = _followed(out) / IMPORT_NOTE
    try:
        note = json.loads(note_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # no import here: an empty folder is used, anything else refused by the staging
    if not isinstance(note, dict):
        return None
    held = [(s.get("name"), s.get("sha256")) for s in note.get("sources", []) if isinstance(s, dict)]
    wanted = [(s["name"], s["sha256"]) for s in sources]
    if note.get("benchmark") != benchmark or [h[1] for h in held] != [w[1] for w in wanted]:
        what = ", ".join(f"{name} (sha256 {str(sha)[:12]})" for name, sha in held) or (
            f"{note.get('source')} (no hash recorded: an import by an older version)"
        )
        now = ", ".join(f"{name} (sha256 {sha[:12]})" for name, sha in wanted)
        raise PublicImportError(
            f"{out} holds the {note.get('benchmark')} import of {what}, not of {now}; "
            "import into another --out, or remove the folder first"
        )
    if note.get("options") != selection.options():
        changed = sorted(k for k, v in selection.options().items() if (note.get("options") or {}).get(k) != v)
        raise PublicImportError(
            f"{out} holds an import of the same file with other options ({', '.join(changed)}); "
            "import into another --out, or remove the folder first"
        )
    return ImportSummary(
        int(note.get("questions", 0)),
        int(note.get("groups", 0)),
        int(note.get("sessions", 0)),
        selection.sessions_per_step,
        out,
        again=True,
    )
