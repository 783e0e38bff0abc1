"""One case record: a fresh, a failed-to-start and a lost case all have the same keys, the schema
describes every field of the dataclass, and one predicate says whether a run passed."""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from typing import Any

import jsonschema
import pytest

from pytest_recall.cases.model import Case, Step
from pytest_recall.cases.runs import CaseRun, SessionResult, StepRun
from pytest_recall.reporting.records import (
    OPTIONAL_FIELDS,
    CaseRecord,
    lost_record,
    record_fails_item,
    record_passed,
)
from pytest_recall.scoring.judge import judge_answer
from pytest_recall.scoring.verdict import decide

SCHEMA = json.loads(resources.files("pytest_recall.reporting").joinpath("report.schema.json").read_text("utf-8"))


def a_case() -> Case:
    expected = {"id": "case_01", "category": "closing_balance", "answer": "12345.67", "answer_kind": "money"}
    steps = (Step(1, "remember 12345.67"), Step(2, "recall"))
    return Case(case_id="case_01", suite="suite", steps=steps, expected=expected, source="suite/case_01")


def a_run(stdout: str, *, error: str | None = None) -> CaseRun:
    steps = []
    if error is None:
        for number, text in enumerate(("noted", stdout), start=1):
            raw = text.encode()
            result = SessionResult(0, None, False, 0.1, raw, b"", len(raw), 0, False)
            steps.append(StepRun(number, "p", result, text, "", None))
    return CaseRun(case=a_case(), steps=tuple(steps), error=error)


def record_of(run: CaseRun) -> dict[str, Any]:
    verdict = decide(run, answer_judge=judge_answer)
    record = CaseRecord.of_run(run, verdict, nodeid="suite/case_01::recall", command="agent", run_mode={"home": "case"})
    return record.as_json()


def test_a_lost_record_has_the_keys_of_a_normal_one() -> None:
    normal = record_of(a_run("12345.67"))
    could_not_start = record_of(a_run("", error="agent not found"))
    lost = lost_record("suite/case_01::recall[epoch2]", "lost: worker crashed", "agent")
    assert set(normal) == set(could_not_start) == set(lost)
    assert lost["outcome"] == "error" and lost["epoch"] == 2 and lost["score"] is None


def test_the_schema_describes_every_field_of_the_record() -> None:
    described = set(SCHEMA["$defs"]["record"]["properties"])
    assert described == {field.name for field in dataclasses.fields(CaseRecord)}
    for record in (record_of(a_run("12345.67")), lost_record("s/c::recall", "lost: x", "agent")):
        jsonschema.validate(record, SCHEMA["$defs"]["record"] | {"$defs": SCHEMA["$defs"]})


def test_optional_keys_appear_only_when_they_apply() -> None:
    record = record_of(a_run("12345.67"))
    assert not set(OPTIONAL_FIELDS) & set(record)
    assert list(record)[-1] == "steps"


@pytest.mark.parametrize(
    ("fields", "passed", "fails_item"),
    [
        ({"score": 1.0, "error": None, "control": False}, True, False),
        ({"score": 0.0, "error": None, "control": False}, False, True),
        ({"score": 0.5, "error": None, "control": False}, False, True),
        ({"score": 0.0, "error": None, "control": True}, False, False),
        ({"score": None, "error": "agent not found", "control": False}, False, False),
        ({"score": True, "error": None, "control": False}, False, True),
    ],
)
def test_one_predicate_says_whether_a_run_passed(fields: dict[str, Any], passed: bool, fails_item: bool) -> None:
    assert record_passed(fields) is passed
    assert record_fails_item(fields) is fails_item


def test_the_dataclass_and_its_json_agree() -> None:
    run = a_run("12345.67")
    record = CaseRecord.of_run(run, decide(run, answer_judge=judge_answer), nodeid="s/c::recall", command="agent")
    assert record.passed and record_passed(record.as_json())
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.score = 0.0  # type: ignore[misc]


def test_the_summary_and_junit_keys_are_fields_of_the_record() -> None:
    from pytest_recall.reporting.records import JUNIT_CASE_FIELDS
    from pytest_recall.reporting.spool import DERIVED_SUMMARY_KEYS, SUMMARY_KEYS

    names = {field.name for field in dataclasses.fields(CaseRecord)}
    assert set(JUNIT_CASE_FIELDS) <= names
    assert set(SUMMARY_KEYS) - set(DERIVED_SUMMARY_KEYS) <= names
