"""``pytest-recall import beam`` and ``import memoryagentbench``: the long-haystack data sets as case groups.

Both are "inject once, ask many": a BEAM conversation or a MemoryAgentBench
row is one case group whose ingest steps (cut by ``--chars-per-step``, see
:mod:`long_steps`) run once, and whose questions are cases of one step each.
The import reads its sources twice, a record (a BEAM batch, a
MemoryAgentBench row) at a time: the first pass checks every record and
hashes the files for ``import.json``; the second writes the chosen groups.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pytest_recall.cases import ANSWER_FILE, GROUP_FILE
from pytest_recall.suites import beam, memoryagentbench
from pytest_recall.suites.json_stream import CountedDigest, SpooledText, StreamError, iter_rows
from pytest_recall.suites.long_steps import StepWriter
from pytest_recall.suites.public_import import (
    ImportSummary,
    PublicImportError,
    Selection,
    Staging,
    already_imported,
    answer_text,
    folder_name,
    hashing,
    pick,
    source_entry,
    write_case_files,
    write_note,
)
from pytest_recall.suites.public_records import RecordError

_HASH_BLOCK = 1 << 20


def _hashed_json(path: Path, name: str) -> tuple[Any, dict[str, Any]]:
    """A small JSON file (BEAM's probing questions) and its entry for import.json."""
    digest = hashing()
    try:
        with path.open("rb") as handle:
            while block := handle.read(_HASH_BLOCK):
                digest.update(block)
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PublicImportError(f"{path}: cannot read it as JSON ({exc})") from None
    return data, {**source_entry(path, digest), "name": name}


# A conversation as the import sees it: its id, its probing questions, and its batches (read as they are used).
Conversation = tuple[str, list[beam.Probe], Iterable[beam.Batch]]


def _beam_folders_checked(source: Path) -> tuple[list[tuple[str, int]], list[dict[str, Any]]]:
    """Each conversation folder's id and batch count, and the sources' entries; every record checked."""
    checked, sources = [], []
    for folder in beam.conversation_folders(source):
        relative = folder.name if folder == source else f"{source.name}/{folder.name}"
        probes_data, entry = _hashed_json(folder / beam.PROBING_FILE, f"{relative}/{beam.PROBING_FILE.as_posix()}")
        beam.parse_probes(probes_data, f"{folder.name}/{beam.PROBING_FILE.as_posix()}")
        chat = beam.chat_file(folder)
        digest = hashing()
        batches = sum(1 for _ in beam.iter_batches(chat, digest))
        sources += [{**source_entry(chat, digest), "name": f"{relative}/{chat.name}"}, entry]
        checked.append((beam.sample_id(folder), batches))
    return checked, sources


def _beam_folders(source: Path) -> Iterator[Conversation]:
    for folder in beam.conversation_folders(source):
        probes_data = json.loads((folder / beam.PROBING_FILE).read_text(encoding="utf-8"))
        probes = beam.parse_probes(probes_data, f"{folder.name}/{beam.PROBING_FILE.as_posix()}")
        yield beam.sample_id(folder), probes, beam.iter_batches(beam.chat_file(folder))


def _beam_rows(source: Path, digest: CountedDigest | None = None) -> Iterator[Conversation]:
    """The conversations of a hub export (one row a conversation, as ``to_json`` writes a split)."""
    # Each row's chat spooled, not held: deleted when the next row is read, so each row's batches are used first.
    for index, record in enumerate(iter_rows(source, long_key="chat", digest=digest)):
        yield beam.parse_row(index, record, source.stem)


def _conversations(source: Path) -> Iterator[Conversation]:
    return _beam_rows(source) if source.is_file() else _beam_folders(source)


def _beam_checked(source: Path) -> tuple[list[tuple[str, int]], list[dict[str, Any]]]:
    if not source.is_file():
        return _beam_folders_checked(source)
    digest = hashing()
    checked = [(sample, sum(1 for _ in batches)) for sample, _, batches in _beam_rows(source, digest)]
    return checked, [source_entry(source, digest)]


def import_beam(path: Path, out: Path, selection: Selection) -> ImportSummary:
    try:
        checked, sources = _beam_checked(path)
        for sample, count in checked:
            if count == 0:
                raise PublicImportError(f"{path}: conversation {sample} holds no batch of turns")
        done = already_imported(out, "beam", sources, selection)
        if done is not None:
            return done
        keys = [
            (beam.question_id(sample, probe), probe.ability, sample)
            for sample, probes, _ in _conversations(path)
            for probe in probes
        ]
        chosen = pick(keys, selection)
        sessions = groups = 0
        with Staging(out) as staging:
            for (sample, probes, batches), (_, total) in zip(_conversations(path), checked, strict=True):
                asked = [probe for probe in probes if beam.question_id(sample, probe) in chosen]
                if not asked:
                    continue
                steps = _beam_group(staging / folder_name(sample), sample, batches, total, selection.chars_per_step)
                for probe in asked:
                    expected = beam.expectation(sample, probe, selection.chars_per_step)
                    files = {"step1.txt": beam.question_prompt(probe), ANSWER_FILE: answer_text(expected)}
                    write_case_files(staging / folder_name(sample) / folder_name(expected["id"]), files)
                groups += 1
                sessions += steps + len(asked)
            summary = ImportSummary(len(chosen), groups, sessions, 1, out, chars_per_step=selection.chars_per_step)
            write_note(staging, "beam", sources, selection, summary)
    except (RecordError, StreamError, ValueError) as exc:
        raise PublicImportError(str(exc)) from None
    except OSError as exc:
        raise PublicImportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return summary


def _beam_group(group: Path, sample: str, batches: Iterable[beam.Batch], total: int, chars_per_step: int) -> int:
    """The group's folder and its ingest steps, a batch at a time; how many steps."""
    write_case_files(group, {GROUP_FILE: f"# The shared ingest of BEAM conversation {sample}.\n"})
    writer = StepWriter(group, chars_per_step, beam.ingest_opening)
    for batch in batches:
        writer.session(beam.session_header(batch, total))
        for role, content in batch.messages:
            writer.line(f"{role}: {' '.join(content.split())}")
    return writer.close()


def _rows(path: Path, digest: Any = None, *, kept: bool = True) -> Iterator[memoryagentbench.Row]:
    """The file's rows, each row's context spooled, not held (deleted when the next row is read); not ``kept``,
    only checked: the first pass needs the questions, and the context goes through a file once, when written."""
    for index, record in enumerate(iter_rows(path, long_key="context", digest=digest, kept=kept)):
        yield memoryagentbench.parse_row(index, record, path.name)


def import_memoryagentbench(path: Path, out: Path, selection: Selection) -> ImportSummary:
    try:
        keys: list[tuple[str, str, str]] = []
        digest = hashing()
        seen: set[str] = set()
        for row in _rows(path, digest, kept=False):
            for question in row.questions:
                if question.question_id in seen:
                    raise PublicImportError(f"{path}: question id {question.question_id!r} appears twice")
                seen.add(question.question_id)
                kind = row.source if row.source in selection.types else row.competency
                keys.append((question.question_id, kind, row.sample_id))
        sources = [source_entry(path, digest)]
        done = already_imported(out, "memoryagentbench", sources, selection)
        if done is not None:
            return done
        chosen = pick(keys, selection)
        sessions = groups = 0
        with Staging(out) as staging:
            for row in _rows(path):
                asked = [q for q in row.questions if q.question_id in chosen]
                if not asked:
                    continue
                group = staging / folder_name(row.sample_id)
                write_case_files(group, {GROUP_FILE: f"# The shared ingest of MemoryAgentBench row {row.sample_id}.\n"})
                steps = _ingest_context(group, row.context, selection.chars_per_step)
                for question in asked:
                    expected = memoryagentbench.expectation(row, question, selection.chars_per_step)
                    prompt = memoryagentbench.question_prompt(question)
                    files = {"step1.txt": prompt, ANSWER_FILE: answer_text(expected)}
                    write_case_files(group / folder_name(question.question_id), files)
                groups += 1
                sessions += steps + len(asked)
            summary = ImportSummary(len(chosen), groups, sessions, 1, out, chars_per_step=selection.chars_per_step)
            write_note(staging, "memoryagentbench", sources, selection, summary)
    except (RecordError, StreamError) as exc:
        raise PublicImportError(f"{path}: {exc}" if isinstance(exc, RecordError) else str(exc)) from None
    except OSError as exc:
        raise PublicImportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return summary


def _ingest_context(group: Path, context: SpooledText, chars_per_step: int) -> int:
    """The context told in pieces of at most ``chars_per_step``, each a numbered session; how many steps.

    The pieces are counted in one read of the spooled context and made again in a second as they are written, so
    what is held is one piece, never the context.
    """
    total = sum(1 for _ in _pieces(_line_parts(context.pieces(), chars_per_step), chars_per_step))
    header = len(memoryagentbench.session_header(total, total))
    writer = StepWriter(group, chars_per_step + header + 1, memoryagentbench.ingest_opening)
    for number, piece in enumerate(_pieces(_line_parts(context.pieces(), chars_per_step), chars_per_step), start=1):
        writer.session(memoryagentbench.session_header(number, total))
        for line in piece:
            writer.line(line)
        writer.flush()
    return writer.close()


def _line_parts(text: Iterable[str], budget: int) -> Iterator[str]:
    """Each non-blank line of ``text`` (given in pieces), stripped, cut into parts of at most ``budget`` characters.

    A line is held only until a part of it is known whole: a part goes out once text that is not whitespace
    follows it on its line (whitespace at a line's end is stripped, so it cannot end a part yet).
    """
    pending = ""  # the current line from its first character that is not whitespace, not yet given out
    for chunk in text:
        lines = chunk.split("\n")
        for number, line in enumerate(lines):
            pending = pending + line if pending else line.lstrip()
            if number < len(lines) - 1:
                yield from _cut(pending.rstrip(), budget)
                pending = ""
                continue
            while len(pending) > budget and not pending[budget:].isspace():
                yield pending[:budget]
                pending = pending[budget:]
    yield from _cut(pending.rstrip(), budget)


def _cut(line: str, budget: int) -> Iterator[str]:
    return (line[start : start + budget] for start in range(0, len(line), budget))


def _pieces(parts: Iterable[str], budget: int) -> Iterator[list[str]]:
    """The parts, in order, gathered into pieces of at most ``budget`` characters (a part and its line end each)."""
    piece: list[str] = []
    size = 0
    for part in parts:
        if piece and size + len(part) > budget:
            yield piece
            piece, size = [], 0
        piece.append(part)
        size += len(part) + 1
    if piece:
        yield piece
