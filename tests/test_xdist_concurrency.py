"""``--recall-concurrency`` inside xdist workers: W workers x N sessions in flight, never more."""

from __future__ import annotations

import pytest

from pytest_recall.plugin.xdist_batches import batch_share
from pytest_recall.plugin.xdist_handoff import worker_position


def test_workers_dealt_in_batches_together_hold_every_index_once():
    shares = [batch_share(23, index, 3, 4) for index in range(3)]
    assert shares[0] == [0, 1, 2, 3, 12, 13, 14, 15]
    assert sorted(i for share in shares for i in share) == list(range(23))


@pytest.mark.parametrize(
    ("workerinput", "position"),
    [
        ({"workerid": "gw1", "workercount": 4}, (1, 4)),
        ({"workerid": "gw4", "workercount": 4}, None),  # a replacement for a crashed worker
        ({"workerid": "w1", "workercount": 4}, None),
        ({"workerid": "gw0"}, None),
    ],
)
def test_a_worker_knows_its_place_in_the_deal_from_its_workerinput(workerinput, position):
    assert worker_position(workerinput) == position


def test_two_workers_at_concurrency_four_keep_eight_sessions_in_flight(recall_suite, monkeypatch):
    marks = recall_suite.pytester.path / "marks"
    marks.mkdir()
    monkeypatch.setenv("RECALL_TEST_MARKS", str(marks))
    monkeypatch.setenv("RECALL_TEST_SLEEP", "1.5")
    for index in range(16):
        recall_suite.add(f"case_{index:02d}", ["answer", "answer"])

    result = recall_suite.run("-n", "2", "--recall-concurrency=4", command=recall_suite.agent("in_flight"))

    result.assert_outcomes(passed=16)
    seen = [int(line) for line in (marks.parent / "seen.txt").read_text().split()]
    assert len(seen) == 32
    assert max(seen) == 8


def test_without_concurrency_each_worker_runs_one_session_at_a_time(recall_suite, monkeypatch):
    marks = recall_suite.pytester.path / "marks"
    marks.mkdir()
    monkeypatch.setenv("RECALL_TEST_MARKS", str(marks))
    monkeypatch.setenv("RECALL_TEST_SLEEP", "0.5")
    for index in range(6):
        recall_suite.add(f"case_{index:02d}", ["answer", "answer"])

    recall_suite.run("-n", "2", command=recall_suite.agent("in_flight")).assert_outcomes(passed=6)

    assert max(int(line) for line in (marks.parent / "seen.txt").read_text().split()) <= 2
