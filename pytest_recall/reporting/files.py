"""Writing report files whole or not at all: a CI uploader never reads half a file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from pytest_recall.reporting.schema import json_line, without_non_finite


def write_json_atomic(
    path: Path,
    document: Any,
    *,
    line_each: str | None = None,
    compact: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
) -> None:
    """Write, fsync and rename, so a reader never sees half a file.

    The document is streamed into the file rather than built as one string
    first: for 10,000 cases that string is some 50 MB held twice over.
    ``compact`` gives what each element of a streamed list is written as
    (a case without what it shares with its report, say).
    """

    def fill(handle: TextIO) -> None:
        try:
            dump_streaming(document, handle, line_each=line_each, compact=compact)
        except ValueError:
            # A NaN somewhere (an agent's cost, a judge's score): JSON has none, so it is written as null.
            handle.seek(0)
            handle.truncate()
            dump_streaming(without_non_finite(document), handle, line_each=line_each, compact=compact)
        handle.write("\n")

    _write_atomic(path, fill)


def _streamed(value: Any) -> bool:
    """A sequence that is not a list: records read off disk one at a time (see ``reporting.spool``)."""
    return isinstance(value, Sequence) and not isinstance(value, (list, tuple, str, bytes))


def dump_streaming(
    document: Any,
    handle: TextIO,
    *,
    line_each: str | None = None,
    compact: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
) -> None:
    """``json.dump(document, handle, indent=2)``, except that a streamed list is written one element a line.

    A top-level value that is a lazy sequence is written one element at a
    time, so a report of 100,000 cases never has them all in memory at once;
    each element (a case record) is one compact line, which a report of
    100,000 cases needs to stay near 1 KB a case, and which ``grep`` reads.
    The list under the top-level key ``line_each`` is written the same way.
    A mapping element is written as ``compact`` gives it, where given.
    """

    def one_a_line(key: Any, value: Any) -> bool:
        return _streamed(value) or (key == line_each and isinstance(value, list))

    if not isinstance(document, Mapping) or not any(one_a_line(key, value) for key, value in document.items()):
        json.dump(document, handle, indent=2, ensure_ascii=False, allow_nan=False)
        return
    if not document:
        handle.write("{}")
        return
    handle.write("{")
    for position, (key, value) in enumerate(document.items()):
        handle.write(("\n  " if position == 0 else ",\n  ") + json.dumps(str(key), ensure_ascii=False) + ": ")
        if not one_a_line(key, value):
            handle.write(json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False).replace("\n", "\n  "))
            continue
        empty = True
        for element in value:
            if compact is not None and isinstance(element, Mapping):
                element = compact(element)
            # Each record checked as it is written: a NaN or infinity in one becomes null there, as in the rest.
            handle.write(("[\n    " if empty else ",\n    ") + json_line(element))
            empty = False
        handle.write("[]" if empty else "\n  ]")
    handle.write("\n}")


def write_chunks_atomic(path: Path, chunks: Iterable[str]) -> None:
    """Write a page that arrives in pieces (``reporting.html.html_chunks``), whole or not at all.

    The pieces go to the file as they come, so a page of 100,000 cases is
    never one string in memory.
    """

    def fill(handle: TextIO) -> None:
        for chunk in chunks:
            handle.write(chunk)

    _write_atomic(path, fill)


def _write_atomic(path: Path, fill: Callable[[TextIO], object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        # mkstemp makes the file 0600; a report is for CI uploaders and colleagues, so it gets the usual mode.
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            fill(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def current_umask() -> int:
    """The process umask; reading it means setting it, so it is put straight back."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
