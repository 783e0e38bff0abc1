"""A record goes from the item to the recorder as the object in one process, and as JSON text only from a worker."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, cast

import pytest

from pytest_recall.plugin.xdist_handoff import (
    RECORD_PROPERTY,
    entry_property,
    received_entry,
    received_record,
    record_property,
)
from pytest_recall.reporting.records import CaseRecord


def a_record() -> CaseRecord:
    return CaseRecord.lost("suite/case_01::recall[epoch2]", "lost: worker crashed", "agent", {"home": "case"})


def plain_run() -> pytest.Config:
    return cast(pytest.Config, SimpleNamespace())


def worker() -> pytest.Config:
    return cast(pytest.Config, SimpleNamespace(workerinput={"workerid": "gw0"}))


def test_in_one_process_the_record_itself_is_handed_over() -> None:
    record = a_record()
    name, value = record_property(plain_run(), record)
    assert name == RECORD_PROPERTY and value is record
    assert received_record([("recall_score", "0.0"), (name, value)]) == (record, None)


def test_from_a_worker_it_travels_as_one_line_of_json_and_is_read_back_whole() -> None:
    record = a_record()
    name, value = record_property(worker(), record)
    assert isinstance(value, str) and "\n" not in value
    travelled = json.loads(json.dumps(value))  # a new string, as execnet delivers it
    assert received_record([(name, travelled)]) == (record, travelled)


def test_a_trap_task_entry_is_the_dict_in_one_process_and_text_from_a_worker() -> None:
    entry: dict[str, Any] = {"task": "t", "id": "c", "metrics": {"score": 1.0}}
    assert entry_property(plain_run(), entry)[1] is entry
    text = entry_property(worker(), entry)[1]
    assert isinstance(text, str) and received_entry(text) == entry
    assert received_entry(entry) is entry


def test_a_report_without_a_record_carries_none() -> None:
    assert received_record([("recall_score", "1.0")]) is None
