"""Writing report files whole or not at all: a CI uploader never reads half a file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from pytest_recall.reporting.schema import without_non_finite


def write_json_atomic(path: Path, document: Any) -> None:
    """Write, fsync and rename, so a reader never sees half a file.

    The document is streamed into the file rather than built as one string
    first: for 10,000 cases that string is some 50 MB held twice over.
    """

    def fill(handle: TextIO) -> None:
        try:
            json.dump(document, handle, indent=2, ensure_ascii=False, allow_nan=False)
        except ValueError:
            # A NaN somewhere (an agent's cost, a judge's score): JSON has none, so it is written as null.
            handle.seek(0)
            handle.truncate()
            json.dump(without_non_finite(document), handle, indent=2, ensure_ascii=False, allow_nan=False)
        handle.write("\n")

    _write_atomic(path, fill)


def write_text_atomic(path: Path, text: str) -> None:
    """Write, fsync and rename: the JSON report and the HTML page alike are whole or absent."""
    _write_atomic(path, lambda handle: handle.write(text))


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
