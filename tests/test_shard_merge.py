"""Sharding across machines and merging the shards back: together they equal one run."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.reporting.document import load_report
from pytest_recall.reporting.files import write_json_atomic
from pytest_recall.reporting.merge import close_files, merge_report_files, merge_reports, report_of_rows
from pytest_recall.reporting.report_file import FileCases
from pytest_recall.reporting.shard import ShardError, assign_shards, durations_by_nodeid, parse_shard, shard_members
from pytest_recall.testing.synthetic import COMMAND, synthetic_record

NOTEBOOK = "pytest_recall.agents.notebook"
NODEIDS = [f"cases/suite/case_{n:02d}::recall" for n in range(1, 24)]


@pytest.mark.parametrize(("text", "shard"), [("1/4", (1, 4)), (" 2 / 3 ", (2, 3)), ("1/1", (1, 1))])
def test_parse_shard_reads_k_of_n(text, shard):
    assert parse_shard(text) == shard


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "a/b", "1", "", "-1/2"])
def test_parse_shard_refuses_what_is_not_k_of_n(text):
    with pytest.raises(ShardError, match="--recall-shard"):
        parse_shard(text)


@pytest.mark.parametrize("count", [1, 2, 3, 5, 23, 30])
def test_shards_partition_every_case_exactly_once_with_balanced_counts(count):
    shards = [shard_members(NODEIDS, (index, count)) for index in range(1, count + 1)]

    assert sorted(nodeid for shard in shards for nodeid in shard) == sorted(NODEIDS)
    sizes = [len(shard) for shard in shards]
    assert max(sizes) - min(sizes) <= 1


def test_the_partition_does_not_depend_on_collection_order():
    shuffled = NODEIDS[:]
    random.Random(7).shuffle(shuffled)

    assert assign_shards(shuffled, 4) == assign_shards(NODEIDS, 4)


def test_durations_balance_shards_longest_first():
    durations = {"a": 10.0, "b": 6.0, "c": 5.0, "d": 4.0, "e": 1.0}

    assignment = assign_shards(list(durations), 2, durations)

    loads = {shard: sum(d for n, d in durations.items() if assignment[n] == shard) for shard in (1, 2)}
    assert sorted(loads.values()) == [12.0, 14.0]
    assert assignment["a"] == assignment["d"]


def test_a_case_without_a_known_duration_counts_as_the_mean():
    assignment = assign_shards(["long", "new", "short"], 2, {"long": 9.0, "short": 1.0})

    # "new" weighs 5: it joins "short" (1), not "long" (9).
    assert assignment["new"] == assignment["short"] != assignment["long"]


def test_durations_come_from_records_and_skip_what_is_not_a_number():
    records = [
        {"nodeid": "a", "duration_s": 2.5},
        {"nodeid": "b", "duration_s": None},
        {"nodeid": "c", "duration_s": True},
        {"nodeid": "a", "duration_s": 3.0},
    ]

    assert durations_by_nodeid(records) == {"a": 3.0}


def test_merge_recomputes_medians_from_raw_durations_not_from_the_shards_figures():
    def record(name: str, duration: float, score: float) -> dict[str, Any]:
        return {"nodeid": f"s/{name}::recall", "category": "c", "score": score, "duration_s": duration}

    first = report_of_rows(
        [record("a", 1.0, 1.0), record("b", 1.0, 1.0), record("c", 1.0, 0.0)], threshold=0.5, command="x"
    )
    second = report_of_rows([record("d", 10.0, 1.0)], threshold=0.5, command="x")

    merged = merge_reports([first, second])

    assert merged == report_of_rows([*first.cases, *second.cases], threshold=0.5, command="x")
    assert merged.latency_ms_median == 1000.0
    assert (merged.score, merged.n_total) == (0.75, 4)


@pytest.fixture
def seed_suite(recall_suite: Any) -> Any:
    recall_suite.copy_seed_suite()
    recall_suite.add(
        "case_99_unanswerable",
        ["There is nothing to remember here.", "What was the closing balance? If you do not know, say UNKNOWN"],
        answer="1.00",
        category="closing_balance",
        suite="session-memory-recall",
    )
    return recall_suite


def run_shard(suite: Any, shard: str, report: Path, *args: str) -> pytest.RunResult:
    return suite.run(
        f"--recall-shard={shard}", f"--recall-report={report}", *args, command=suite.module(NOTEBOOK), report=False
    )


def merge_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_recall.cli", "merge", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_shards_merged_equal_the_unsharded_run(seed_suite, without_timing):
    seed_suite.run(command=seed_suite.module(NOTEBOOK)).assert_outcomes(passed=8, failed=1)
    # The file as written: the merge writes the values the cases share once at the top too.
    single = json.loads(seed_suite.report_path.read_text())
    shard_reports = [seed_suite.pytester.path / f"shard-{k}.json" for k in (1, 2, 3)]

    for index, path in enumerate(shard_reports, start=1):
        result = run_shard(seed_suite, f"{index}/3", path)
        assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
        result.stdout.fnmatch_lines([f"recall: shard {index} of 3", "collected 9 items / 6 deselected / 3 selected"])
    merged_path = seed_suite.pytester.path / "merged.json"
    merged = merge_cli(*shard_reports, "-o", merged_path, "--gate", "score")

    assert merged.returncode == 0, merged.stderr
    assert merged.stdout.startswith("merged 3 reports, 9 cases")
    ran = [json.loads(path.read_text())["cases"] for path in shard_reports]
    assert sorted(r["nodeid"] for records in ran for r in records) == sorted(r["nodeid"] for r in single["cases"])
    assert without_timing(json.loads(merged_path.read_text())) == without_timing(single)


def test_shards_balanced_by_earlier_durations_still_cover_every_case_once(seed_suite):
    earlier = seed_suite.pytester.path / "earlier.json"
    seed_suite.run(f"--recall-report={earlier}", command=seed_suite.module(NOTEBOOK), report=False)
    paths = [seed_suite.pytester.path / f"shard-{k}.json" for k in (1, 2)]

    for index, path in enumerate(paths, start=1):
        run_shard(seed_suite, f"{index}/2", path, f"--recall-shard-durations={earlier}", "-n", "2")

    ran = sorted(r["nodeid"] for path in paths for r in json.loads(path.read_text())["cases"])
    assert ran == sorted(r["nodeid"] for r in json.loads(earlier.read_text())["cases"])


def test_shard_options_have_ini_twins_and_bad_values_are_one_line(seed_suite):
    seed_suite.pytester.makeini("[pytest]\nrecall_shard = 2/9\n")
    result = seed_suite.run(command=seed_suite.module(NOTEBOOK))
    result.stdout.fnmatch_lines(["recall: shard 2 of 9", "*1 passed, 8 deselected*"])

    bad = seed_suite.run("--recall-shard=3 of 4", command=seed_suite.module(NOTEBOOK))
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: --recall-shard must look like K/N (e.g. 1/4), not '3 of 4'"])

    missing = seed_suite.run("--recall-shard-durations=nope.json", command=seed_suite.module(NOTEBOOK))
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(
        ["ERROR: --recall-shard-durations: *nope.json is not a file; give a report or run log"]
    )


def test_merge_of_unreadable_input_is_one_line(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{}")

    result = merge_cli(broken, "-o", tmp_path / "out.json")

    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"pytest-recall merge: {broken}: not a pytest-recall report (no 'cases' list)"
    ]


def test_merging_report_files_streams_their_cases_and_equals_merging_them_whole(tmp_path):
    """At 100,000 cases a merge must not hold every record: files are read a case at a time, by line offset."""
    records = [synthetic_record(i) for i in range(40)]
    paths = []
    for name, part in (("a", records[:25]), ("b", [*records[20:], {**records[3], "score": 0.0}])):
        path = tmp_path / f"{name}.json"
        write_json_atomic(path, report_of_rows(part, threshold=0.5, command=COMMAND).as_json(), line_each="cases")
        paths.append(path)

    streamed = merge_report_files(paths)

    assert isinstance(streamed.cases, FileCases), "cases stay on disk until written"
    whole = merge_reports([load_report(path) for path in paths])
    assert replace(streamed, cases=list(streamed.cases)) == whole
    assert len(whole.cases) == 40 and whole.n_passed == sum(r["score"] == 1.0 for r in records) - 1
    close_files(streamed)
