"""The compiled schema check says what ``jsonschema`` says of every document, only faster.

Each document below, valid or broken in one place, is checked both ways
against the published schema; a compiled check that accepted what
``jsonschema`` refuses would let a malformed report through.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest

from pytest_recall.reporting.schema import record_problem, report_schema
from pytest_recall.reporting.schema_check import UnknownKeyword, compile_schema
from pytest_recall.testing.synthetic import synthetic_record, synthetic_report

BREAKS: list[tuple[str, Any]] = [
    ("score", "1.0"),
    ("score", 2),
    ("score", True),
    ("epoch", 1.5),
    ("epoch", True),
    ("control", 0),
    ("id", None),
    ("steps", {"step": 1}),
    ("steps", [{"step": "one"}]),
    ("steps", [{"step": 1, "exit_code": "0"}]),
    ("run_mode", "case"),
]


def records() -> list[dict[str, Any]]:
    found = [synthetic_record(index) for index in (1, 37, 211)]
    for key, value in BREAKS:
        broken = copy.deepcopy(found[0])
        broken[key] = value
        found.append(broken)
    missing = copy.deepcopy(found[0])
    del missing["score"]
    return [*found, missing, {**found[0], "epoch": 1.0}]


@pytest.mark.parametrize("record", records(), ids=lambda record: str(sorted(record.items()))[:60])
def test_the_compiled_record_check_agrees_with_jsonschema(record: dict[str, Any]) -> None:
    schema = report_schema()
    definition = {"$ref": "#/$defs/record", "$defs": schema["$defs"]}
    expected = jsonschema.Draft202012Validator(definition).is_valid(record)
    assert compile_schema(schema["$defs"]["record"], schema)(record) is expected
    assert (record_problem(record) is None) is expected


def test_the_compiled_report_check_agrees_with_jsonschema() -> None:
    schema = report_schema()
    check = compile_schema(schema)
    built = synthetic_report(5)
    report = {**built.as_json(), "cases": list(built.cases)}
    assert check(report) and jsonschema.Draft202012Validator(schema).is_valid(report)
    for key, value in (("passed", "yes"), ("schema_version", 3), ("n_total", -1), ("cases", {})):
        broken = {**report, key: value}
        assert check(broken) is jsonschema.Draft202012Validator(schema).is_valid(broken) is False, key


def test_a_keyword_the_compiler_does_not_know_is_refused_at_build_time() -> None:
    with pytest.raises(UnknownKeyword, match="uniqueItems"):
        compile_schema({"type": "array", "uniqueItems": True})
