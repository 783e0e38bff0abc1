"""The records of a JSON file whose top level is one array, read one at a time.

The public memory benchmarks ship as one array of records in one file
(``longmemeval_m`` is hundreds of megabytes), and ``json.load`` would hold
all of it, twice over while it parses. This reader keeps one record and a
read buffer: it decodes the next element with ``raw_decode`` and, when an
element runs past the buffer, reads as much again and retries, so a record
of any size costs time linear in its length.

A record nested deeper than the decoder follows (Python's recursion limit,
about a thousand levels) is refused with one line; a benchmark's records
nest a few levels.

Some files nest the long part inside one record: BEAM-10M's ``chat.json``
is an array of ``{"plan-N": [batch, ...]}`` objects, each plan about a
million tokens. :func:`iter_array` with ``unwrap`` (a pattern of the keys to
open, ``plan-\\d+`` for BEAM) streams such a single-key object's array element
by element, so what is held is still one batch, never one plan. Only keys
the pattern names are opened: an ordinary record whose first field holds an
array (``{"turns": [...], "time_anchor": ...}``) is read whole, as usual.

MemoryAgentBench nests it inside one string: a row's ``context`` is the
whole haystack. :func:`iter_rows` reads such rows (an array or JSON Lines)
with that one string value decoded a buffer at a time into a temporary
file, a :class:`SpooledText`, whether it comes before the row's other
fields or after them; the other fields, small, are decoded as usual. Each
buffer's stretch of the string is cut between escapes, never between the
two halves of a ``\\uXXXX`` surrogate pair, and decoded by ``json.loads``, so
the text is what ``json.loads`` would make of the whole string.

BEAM's hub rows nest it inside one array: a row's ``chat`` is every batch
of the conversation. :func:`iter_rows` spools such an array value the same
way, an element at a time, into a :class:`SpooledItems` (one line of JSON an
element), read back an element at a time.

A ``digest`` given to :func:`iter_array` or :func:`iter_rows` sees every byte
read, so the import's SHA-256 costs no second read of the file.
"""

from __future__ import annotations

import io
import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, TextIO

CHUNK_CHARS = 1 << 16
_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()
# The opening of a single-key object whose value is an array: ``{"plan-1": [``.
_KEYED_ARRAY = re.compile(r'\{\s*"((?:[^"\\]|\\.)*)"\s*:\s*\[')
# How far ahead the buffer must reach to tell a keyed array from any other object.
_LOOKAHEAD = 4096
# The longest run of a JSON string's content that is whole escapes and unescaped characters.
_STRING_RUN = re.compile(r'(?:[^"\\]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*')
_HIGH_SURROGATE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}")
_ESCAPE = 6  # len("\\ud83d")


class Digest(Protocol):
    """What ``hashlib.sha256()`` offers that the reader needs."""

    def update(self, data: bytes, /) -> None: ...


class CountedDigest:
    """A digest and the byte count of what it saw: a file's size and hash from the one read that parses it."""

    def __init__(self, digest: Digest) -> None:
        self.digest = digest
        self.size = 0

    def update(self, data: bytes, /) -> None:
        self.digest.update(data)
        self.size += len(data)


class _Hashed(io.RawIOBase):
    """A binary file whose every byte read also goes to ``digest``."""

    def __init__(self, raw: io.BufferedReader, digest: Digest) -> None:
        self.raw = raw
        self.digest = digest

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.raw.close()
        super().close()

    def readinto(self, buffer: Any) -> int:
        count = self.raw.readinto(buffer)
        if count:
            self.digest.update(bytes(memoryview(buffer)[:count]))
        return count or 0


class StreamError(ValueError):
    """The file is not one JSON array of records; the message names the file and the record."""


class _Buffer:
    """A text window over the file: ``text[pos:]`` is what has been read and not yet consumed."""

    def __init__(self, handle: TextIO, chunk: int) -> None:
        self.handle = handle
        self.chunk = chunk
        self.text = ""
        self.pos = 0
        self.eof = False
        self._lines_before = 0  # line ends in the text already dropped from the window

    def line(self) -> int:
        """The number of the line the window's position is on, from 1."""
        return self._lines_before + self.text.count("\n", 0, self.pos) + 1

    def more(self, at_least: int) -> bool:
        """Read at least ``at_least`` more characters (fewer only at the end); False at the end."""
        if self.eof:
            return False
        read = self.handle.read(max(at_least, self.chunk))
        if not read:
            self.eof = True
            return False
        self._lines_before += self.text.count("\n", 0, self.pos)
        self.text = self.text[self.pos :] + read
        self.pos = 0
        return True

    def skip_space(self) -> str:
        """The next character that is not whitespace, without consuming it; '' at the end of the file."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more(self.chunk):
                return ""


def iter_array(
    path: Path, *, chunk: int = CHUNK_CHARS, digest: Digest | None = None, unwrap: re.Pattern[str] | None = None
) -> Iterator[Any]:
    """Each element of the top-level array in ``path``, in order, decoded on its own.

    With ``unwrap``, an element that is an object of one key matching it, whose value is an array, yields
    ``(key, item)`` for each item of that array, read one at a time; any other element yields ``(None, element)``.
    """
    try:
        with _opened(path, digest) as handle:
            yield from _elements(_Buffer(handle, chunk), path, unwrap)
    except UnicodeDecodeError as exc:
        raise StreamError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start} of a block)") from None


def _opened(path: Path, digest: Digest | None) -> io.TextIOWrapper:
    raw = path.open("rb")
    return io.TextIOWrapper(raw if digest is None else io.BufferedReader(_Hashed(raw, digest)), encoding="utf-8")


def iter_records(path: Path, *, digest: Digest | None = None) -> Iterator[Any]:
    """The records of a JSON array file or of a JSON Lines file (one record a line), whichever ``path`` holds.

    A data set exported from Hugging Face with ``to_json`` is JSON Lines; one saved with ``json.dump`` an array.
    """
    with path.open("rb") as peek:
        start = peek.read(64).lstrip()
    if start.startswith(b"["):
        yield from iter_array(path, digest=digest)
        return
    try:
        with _opened(path, digest) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise StreamError(f"{path}: line {number} is not a JSON record ({exc.msg})") from None
                except RecursionError:
                    raise StreamError(f"{path}: line {number} is nested too deep to read") from None
    except UnicodeDecodeError as exc:
        raise StreamError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start} of a block)") from None


def _array(buffer: _Buffer, path: Path) -> Iterator[int]:
    """The index of each record of the top-level array, with the buffer at the record; then checks the file ends."""
    first = buffer.skip_space()
    if first != "[":
        found = "an empty file" if first == "" else f"{first!r}"
        raise StreamError(f"{path}: expected a JSON array of records at the top level, found {found}")
    buffer.pos += 1
    yield from _items(buffer, path, "record")
    if buffer.skip_space() != "":
        raise StreamError(f"{path}: text after the closing ']' of the array")


def _elements(buffer: _Buffer, path: Path, unwrap: re.Pattern[str] | None) -> Iterator[Any]:
    for index in _array(buffer, path):
        if unwrap is None:
            yield _decode(buffer, path, f"record {index}")
            continue
        key = _keyed_array(buffer, unwrap)
        if key is None:
            yield None, _decode(buffer, path, f"record {index}")
            continue
        for inner in _items(buffer, path, f"record {index} ({key!r}) item"):
            yield key, _decode(buffer, path, f"record {inner}")
        if buffer.skip_space() != "}":
            raise StreamError(f"{path}: record {index}: an object holding {key!r} must hold nothing else")
        buffer.pos += 1


def _keyed_array(buffer: _Buffer, keys: re.Pattern[str]) -> str | None:
    """The key of a ``{"key": [`` at the buffer's position whose key ``keys`` matches, consumed up to the ``[``.

    None, with nothing consumed, for anything else.
    """
    if buffer.skip_space() != "{":
        return None
    while len(buffer.text) - buffer.pos < _LOOKAHEAD and buffer.more(_LOOKAHEAD):
        pass
    match = _KEYED_ARRAY.match(buffer.text, buffer.pos)
    if match is None:
        return None
    key: str = json.loads(f'"{match.group(1)}"')
    if not keys.fullmatch(key):
        return None
    buffer.pos = match.end()
    return key


def _items(buffer: _Buffer, path: Path, what: str) -> Iterator[int]:
    """The index of each element of the array whose ``[`` was just consumed, with the buffer at the element."""
    index = 0
    while True:
        mark = buffer.skip_space()
        if mark == "]":
            buffer.pos += 1
            break
        if index > 0:
            if mark != ",":
                raise StreamError(f"{path}: after {what} {index - 1}, expected ',' or ']', found {mark or 'the end'!r}")
            buffer.pos += 1
            if buffer.skip_space() == "]":
                raise StreamError(f"{path}: a trailing ',' after {what} {index - 1} is not JSON")
        buffer.skip_space()
        yield index
        index += 1


def _decode(buffer: _Buffer, path: Path, where: str, *, one_line: bool = False) -> Any:
    """The element at the buffer's position; reads more, doubling, while the element runs past the buffer.

    ``one_line``: the element cannot run past its line's end (JSON Lines), so once the window holds that end a
    malformed element is refused there, not after reading the rest of the file in the hope it is cut.
    """
    while True:
        try:
            value, end = _DECODER.raw_decode(buffer.text, buffer.pos)
        except json.JSONDecodeError as exc:
            # An element cut by the buffer's end looks malformed until the rest is read.
            whole = one_line and "\n" in buffer.text[buffer.pos :]
            if not whole and buffer.more(len(buffer.text) - buffer.pos):
                continue
            raise StreamError(f"{path}: {where} is not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise StreamError(
                f"{path}: {where} is nested too deep to read; a benchmark record nests a few levels"
            ) from None
        # A number at the buffer's end may go on in the next read ("12" of "123").
        at_end = end == len(buffer.text) and not buffer.eof and isinstance(value, (int, float))
        if at_end and buffer.more(buffer.chunk):
            continue
        buffer.pos = end
        return value


class SpooledText:
    """A long string value of a record, decoded into a temporary file so no copy of it is held, read back in pieces.

    ``blank`` is whether it holds nothing but whitespace, known without reading it again. Not ``kept``, the text
    is checked and dropped: a pass that only needs the record's other fields writes no file.
    """

    def __init__(self, chunk: int = CHUNK_CHARS, *, kept: bool = True) -> None:
        # newline="": a "\r\n" in the string stays as it is; surrogatepass: a lone "\ud83d" too, as json.loads keeps it.
        # Closed by close(), which iter_rows calls once the record is done with: it outlives any one block.
        self._file = (
            tempfile.TemporaryFile("w+", encoding="utf-8", errors="surrogatepass", newline="")  # noqa: SIM115
            if kept
            else None
        )
        self._chunk = chunk
        self.blank = True

    def write(self, text: str) -> None:
        self.blank = self.blank and (text == "" or text.isspace())
        if self._file is not None:
            self._file.write(text)

    def pieces(self) -> Iterator[str]:
        """The text from its start, in pieces of at most the reader's chunk; may be read again."""
        if self._file is None:
            raise ValueError("a string read with kept=False was not kept: read the rows with kept=True")
        self._file.flush()
        self._file.seek(0)
        while piece := self._file.read(self._chunk):
            yield piece

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class SpooledItems:
    """A long array value of a record (BEAM's ``chat``), each element decoded on its own into a temporary file as a
    line of JSON, so what is held is one element, never the array; read back one element at a time."""

    def __init__(self) -> None:
        # Closed by close(), which iter_rows calls once the record is done with: it outlives any one block.
        self._file = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
        self.count = 0

    def write(self, item: Any) -> None:
        # ensure_ascii: a lone surrogate half, which json.loads keeps, is written as its escape, never raw.
        self._file.write(json.dumps(item) + "\n")
        self.count += 1

    def items(self) -> Iterator[Any]:
        """The elements from the first, in order; may be read again."""
        self._file.flush()
        self._file.seek(0)
        for line in self._file:
            yield json.loads(line)

    def close(self) -> None:
        self._file.close()


def iter_rows(
    path: Path, *, long_key: str, digest: Digest | None = None, chunk: int | None = None, kept: bool = True
) -> Iterator[Any]:
    """The records of a JSON array or JSON Lines file, a record's string ``long_key`` as a :class:`SpooledText`
    (an array ``long_key`` as a :class:`SpooledItems`, whatever ``kept``).

    A record's spooled text is deleted when the next record is asked for (or the reading stops); with ``kept``
    false it is only checked, never written. ``chunk`` is read when called, :data:`CHUNK_CHARS` by default, so a
    test can shrink it to cut escapes at a buffer's end.
    """
    try:
        with _opened(path, digest) as handle:
            buffer = _Buffer(handle, chunk or CHUNK_CHARS)
            lines = buffer.skip_space() != "["
            # A JSON Lines record is named by its line, so the first bad one is refused where it is, by number.
            places = (
                (f"line {buffer.line()}" for _ in _records(buffer))
                if lines
                else map("record {}".format, _array(buffer, path))
            )
            for where in places:
                record = _row(buffer, path, where, long_key, one_line=lines, kept=kept)
                try:
                    yield record
                finally:
                    _close_spooled(record)
    except UnicodeDecodeError as exc:
        raise StreamError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start} of a block)") from None


def _records(buffer: _Buffer) -> Iterator[int]:
    """The index of each record of a JSON Lines file (records one after another), with the buffer at the record."""
    index = 0
    while buffer.skip_space():
        yield index
        index += 1


def _row(buffer: _Buffer, path: Path, where: str, long_key: str, *, one_line: bool, kept: bool) -> Any:
    """The record at the buffer's position, its string ``long_key`` spooled; any other value decoded whole."""
    if buffer.skip_space() != "{":
        return _decode(buffer, path, where, one_line=one_line)
    buffer.pos += 1
    record: dict[str, Any] = {}
    try:
        _fields(buffer, path, where, long_key, record, one_line=one_line, kept=kept)
    except BaseException:
        _close_spooled(record)
        raise
    return record


def _close_spooled(row: Any) -> None:
    for value in row.values() if isinstance(row, dict) else ():
        if isinstance(value, (SpooledText, SpooledItems)):
            value.close()


def _fields(
    buffer: _Buffer, path: Path, where: str, long_key: str, row: dict[str, Any], *, one_line: bool, kept: bool
) -> None:
    """The fields of the object whose ``{`` was just consumed, into ``row``, up to and with its ``}``."""
    mark = buffer.skip_space()
    while mark != "}":
        if mark != '"':
            raise StreamError(f"{path}: {where}: expected a field name in quotes, found {mark or 'the end'!r}")
        key = _decode(buffer, path, where, one_line=one_line)
        if buffer.skip_space() != ":":
            raise StreamError(f"{path}: {where}: expected ':' after the field name {key!r}")
        buffer.pos += 1
        if isinstance(row.get(key), (SpooledText, SpooledItems)):
            row[key].close()  # a field given twice: the last one counts, as in json.loads
        if buffer.skip_space() == '"' and key == long_key:
            row[key] = _long_string(buffer, path, where, kept)
        elif buffer.skip_space() == "[" and key == long_key:
            row[key] = _long_array(buffer, path, f"{where}: field {key!r}", one_line=one_line)
        else:
            row[key] = _decode(buffer, path, where, one_line=one_line)
        mark = buffer.skip_space()
        if mark == ",":
            buffer.pos += 1
            mark = buffer.skip_space()
            if mark == "}":
                raise StreamError(f"{path}: {where}: a trailing ',' after field {key!r} is not JSON")
        elif mark != "}":
            raise StreamError(f"{path}: {where}: after field {key!r}, expected ',' or '}}', found {mark!r}")
    buffer.pos += 1


def _long_array(buffer: _Buffer, path: Path, where: str, *, one_line: bool) -> SpooledItems:
    """The JSON array at the buffer's position, its elements decoded one at a time into a :class:`SpooledItems`."""
    spooled = SpooledItems()
    buffer.pos += 1  # the opening bracket
    try:
        for index in _items(buffer, path, f"{where} item"):
            spooled.write(_decode(buffer, path, f"{where} item {index}", one_line=one_line))
    except BaseException:
        spooled.close()
        raise
    return spooled


def _long_string(buffer: _Buffer, path: Path, where: str, kept: bool) -> SpooledText:
    """The JSON string at the buffer's position decoded into a :class:`SpooledText`, a buffer's stretch at a time."""
    spooled = SpooledText(buffer.chunk, kept=kept)
    buffer.pos += 1  # the opening quote
    while True:
        run = _STRING_RUN.match(buffer.text, buffer.pos)
        end = run.end() if run else buffer.pos
        closed = end < len(buffer.text) and buffer.text[end] == '"'
        if not closed and _ends_in_high_surrogate(buffer.text, buffer.pos, end):
            end -= _ESCAPE  # its low half may open the next read: decoded apart, the pair would be two lone halves
        if end > buffer.pos:
            try:
                spooled.write(json.loads(f'"{buffer.text[buffer.pos : end]}"'))
            except json.JSONDecodeError as exc:
                spooled.close()
                raise StreamError(f"{path}: {where} is not valid JSON ({exc.msg} in a string)") from None
            buffer.pos = end
        if closed:
            buffer.pos += 1
            return spooled
        # Unread text shorter than a surrogate pair may be an escape cut by the buffer's end; longer is malformed.
        if len(buffer.text) - buffer.pos >= 2 * _ESCAPE or not buffer.more(buffer.chunk):
            spooled.close()
            raise StreamError(f"{path}: {where} is not valid JSON (a bad escape or no closing quote)")


def _ends_in_high_surrogate(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` (whole escapes and characters) ends in the escape of a pair's first half."""
    escape = end - _ESCAPE
    if escape < start or not _HIGH_SURROGATE.fullmatch(text, escape, end):
        return False
    backslashes = escape - len(text[start:escape].rstrip("\\")) - start  # before it: "\\ud83d" is "\" then "ud83d"
    return backslashes % 2 == 0
