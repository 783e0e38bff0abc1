"""A record handed from the item to the recorder in one process is not parsed again; from another, it is."""

from __future__ import annotations

import json

from pytest_recall.reporting.records import RECORD_PROPERTY, published_record, record_properties
from pytest_recall.testing.synthetic import synthetic_record


def test_a_record_published_in_this_process_is_taken_as_it_is() -> None:
    record = synthetic_record(5)
    properties = record_properties(record)
    taken = published_record(properties)[0]
    assert taken == record and taken is not record
    # Taken once: the same text seen again (a second report of the item) is parsed.
    again = published_record(properties)[0]
    assert again == record and again is not taken


def test_a_record_that_travelled_as_text_is_parsed() -> None:
    record = synthetic_record(6)
    text = dict(record_properties(record))[RECORD_PROPERTY]
    assert isinstance(text, str)
    travelled = json.loads(json.dumps(text))  # a new string, as xdist delivers it
    assert published_record([(RECORD_PROPERTY, travelled)]) == (record, travelled)


def test_only_the_latest_records_are_kept_for_the_hand_off() -> None:
    published = [record_properties(synthetic_record(index)) for index in range(200)]
    assert all(published_record(properties)[0] == synthetic_record(i) for i, properties in enumerate(published))
