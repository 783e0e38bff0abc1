"""The report's published JSON Schema (``report.schema.json``), and the checks that use it.

Everything that reads a report or a log record written elsewhere (``merge``,
``report``, ``compare``, ``--recall-resume``) checks it against the same
schema first, so a malformed file is one line naming what is wrong and where,
never a traceback from deep inside the statistics. JSON has no NaN or
infinity, though Python's parser accepts them; those are refused too, and
never written. The schema is compiled once into plain checks
(:mod:`pytest_recall.reporting.schema_check`); ``jsonschema`` only writes the
message for a document they refuse.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_recall.reporting.schema_check import Check, UnknownKeyword, all_finite, compile_schema, past_any_float

SCHEMA_FILE = Path(__file__).with_name("report.schema.json")
# A bad value is quoted in the message; a whole record quoted would not be one readable line.
MAX_MESSAGE_CHARS = 200


@functools.cache
def report_schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return loaded


@functools.cache
def _compiled(definition: str | None) -> Check | None:
    """The schema (or one of its definitions) as a compiled check; None if it uses a keyword the compiler lacks."""
    schema = report_schema()
    try:
        return compile_schema(schema if definition is None else schema["$defs"][definition], schema)
    except UnknownKeyword:
        return None


@functools.cache
def _validator(definition: str | None) -> Any:
    import jsonschema

    schema = report_schema()
    if definition is not None:
        schema = {"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]}
    return jsonschema.Draft202012Validator(schema)


def report_problem(document: Any) -> str | None:
    """Why ``document`` is not a report, in one line, or None when it is one."""
    return _problem(document, None)


def record_problem(record: Any) -> str | None:
    """Why ``record`` is not a case record (a report's ``cases`` entry, a log line), or None."""
    return _problem(record, "record")


def _problem(document: Any, definition: str | None) -> str | None:
    import jsonschema.exceptions

    finite = all_finite(document)
    check = _compiled(definition)
    if finite and check is not None and check(document):
        return None
    for where, number in _non_finite(document, ""):
        return f"at {where or 'the top'}: {_number_fault(number)}"
    error = jsonschema.exceptions.best_match(_validator(definition).iter_errors(document))
    if error is None:
        return None
    where = _path_text(error.absolute_path)
    message = error.message if len(error.message) <= MAX_MESSAGE_CHARS else error.message[:MAX_MESSAGE_CHARS] + "..."
    return f"at {where}: {message}" if where else message


def _path_text(path: Any) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _non_finite(value: Any, where: str) -> Iterator[tuple[str, float | int]]:
    if (isinstance(value, float) and not math.isfinite(value)) or (
        isinstance(value, int) and not isinstance(value, bool) and past_any_float(value)
    ):
        yield where, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _non_finite(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_finite(item, f"{where}[{index}]")


def _number_fault(number: float | int) -> str:
    if isinstance(number, int):
        return "an integer past any float is no number a report holds"
    name = "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
    return f"{name} is not a JSON number"


def without_non_finite(value: Any) -> Any:
    """``value`` with NaN and infinities as null: what JSON can say of a number that is none."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {key: without_non_finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_non_finite(item) for item in value]
    return value


def json_line(row: Mapping[str, Any]) -> str:
    """A record as one line of strict JSON; a NaN (an agent's cost, a judge's score) becomes null."""
    try:
        return json.dumps(row, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        return json.dumps(without_non_finite(row), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
