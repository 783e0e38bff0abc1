"""``run_mode`` once per report (schema version 2), and reports of version 1 still read everywhere.

A run's every case shares its run mode; written in each, it was a quarter of
a passing case's bytes. The report now holds it once at the top, a case only
where its own differs (a merge of different runs), and every reader
(``load_report``, the streamed reader, merge) puts it back in each case. A
step's fields that hold what a plain session records (no signal, no token
counts, no memory listing: ``step_defaults`` at the top) are left out the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_recall.reporting.document import (
    SCHEMA_VERSION,
    STEP_DEFAULTS,
    load_report,
    step_order,
    write_report,
)
from pytest_recall.reporting.merge import close_files, merge_report_files, report_of_rows
from pytest_recall.reporting.report_file import streamed_report
from pytest_recall.testing.synthetic import COMMAND, synthetic_record

MODE = {"home": "case", "workdir": "fresh", "prompt": "argv", "sandbox": None, "session": None}
OTHER = {**MODE, "sandbox": "bwrap"}


def write(path: Path, records: list[dict[str, Any]], *, run_mode: dict[str, Any] | None) -> Path:
    report = report_of_rows(records, threshold=0.5, command=COMMAND, run_mode=run_mode)
    write_report(path, report)
    return path


def raw_cases(path: Path) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["cases"]
    return cases


def key_of(record: dict[str, Any]) -> str:
    """The key a resume finds a record by: its suite, case id and item, whatever the rootdir."""
    from pytest_recall.plugin.runlog import case_key

    return case_key(record["suite"], record["id"], str(record["nodeid"]))


def test_the_run_mode_is_written_once_and_every_reader_puts_it_back(tmp_path: Path) -> None:
    records = [{**synthetic_record(i), "run_mode": MODE} for i in range(1, 6)]
    records[2] = {**records[2], "run_mode": OTHER}  # a case of another run, as in a merge
    path = write(tmp_path / "report.json", records, run_mode=MODE)

    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["schema_version"] == SCHEMA_VERSION == 2
    assert document["run_mode"] == MODE
    assert ["run_mode" in case for case in raw_cases(path)] == [False, False, True, False, False]

    whole = load_report(path)
    streamed = streamed_report(path)
    assert streamed is not None
    for cases in (whole.cases, list(streamed.cases)):
        assert [case["run_mode"] for case in cases] == [MODE, MODE, OTHER, MODE, MODE]


def test_a_passing_case_is_smaller_by_its_run_mode(tmp_path: Path) -> None:
    records = [{**synthetic_record(i), "run_mode": MODE} for i in range(1, 101)]
    shared = write(tmp_path / "shared.json", records, run_mode=MODE).stat().st_size
    each = write(tmp_path / "each.json", records, run_mode=None).stat().st_size
    assert each - shared >= 100 * len(json.dumps(MODE, separators=(",", ":")))


def test_reports_of_version_1_still_read_and_merge_with_version_2(tmp_path: Path) -> None:
    old = [{**synthetic_record(i), "run_mode": MODE} for i in range(1, 4)]
    path_old = write(tmp_path / "old.json", old, run_mode=None)
    document = json.loads(path_old.read_text(encoding="utf-8"))
    document["schema_version"] = 1  # as an older harness wrote it: run_mode in every case, none at the top
    path_old.write_text(json.dumps(document), encoding="utf-8")
    new = [{**synthetic_record(i), "run_mode": OTHER} for i in range(4, 7)]
    path_new = write(tmp_path / "new.json", new, run_mode=OTHER)

    assert [case["run_mode"] for case in load_report(path_old).cases] == [MODE] * 3
    merged = merge_report_files([path_old, path_new])
    try:
        out = tmp_path / "merged.json"
        write_report(out, merged)
    finally:
        close_files(merged)
    again = load_report(out)
    assert [case["run_mode"] for case in again.cases] == [MODE] * 3 + [OTHER] * 3
    assert again.run_mode == MODE
    assert ["run_mode" in case for case in raw_cases(out)] == [False] * 3 + [True] * 3


def test_resume_from_a_version_2_report_finds_its_cases_with_their_mode_and_command(tmp_path: Path) -> None:
    from pytest_recall.plugin.runlog import ResumeIndex

    records = [{**synthetic_record(i), "run_mode": MODE} for i in range(1, 4)]
    path = write(tmp_path / "report.json", records, run_mode=MODE)
    assert "command" not in raw_cases(path)[0]
    index = ResumeIndex.load(path)
    assert len(index) == 3
    again = ResumeIndex.from_handoff(index.handoff(same_host=False))
    for resumed in (index, again):
        taken = resumed.take(key_of(records[0]), str(records[0]["content_hash"]), COMMAND, MODE)
        assert taken is not None
        assert taken.run_mode == MODE and taken.command == COMMAND


def test_resume_from_a_version_1_report_finds_its_cases_with_their_own_mode_and_command(tmp_path: Path) -> None:
    from pytest_recall.plugin.runlog import ResumeIndex

    records = [{**synthetic_record(i), "run_mode": MODE, "command": COMMAND} for i in range(1, 4)]
    path = write(tmp_path / "report.json", records, run_mode=None)
    document = json.loads(path.read_text(encoding="utf-8"))
    document["schema_version"] = 1  # as an older harness wrote it: mode and command in every case, none at the top
    for key in ("run_mode", "command"):
        document.pop(key, None)
    for case in document["cases"]:
        case["command"] = COMMAND
    path.write_text(json.dumps(document), encoding="utf-8")
    assert "run_mode" in raw_cases(path)[0] and "command" in raw_cases(path)[0]
    index = ResumeIndex.load(path)
    assert len(index) == 3
    taken = index.take(key_of(records[0]), str(records[0]["content_hash"]), COMMAND, MODE)
    assert taken is not None and taken.run_mode == MODE and taken.command == COMMAND


def test_a_step_leaves_out_its_default_fields_and_every_reader_puts_them_back_in_place(tmp_path: Path) -> None:
    from pytest_recall.plugin.runlog import ResumeIndex

    records = [{**synthetic_record(i), "run_mode": MODE} for i in range(1, 4)]
    for record in records:
        for step in record["steps"]:
            step.update({**dict.fromkeys(STEP_DEFAULTS), **step, "killed_leftovers": 0})
    # What is not the default stays, whatever its neighbours: a signal, a leftover, a count of 0 tokens.
    records[1]["steps"][1].update({"signal": 9, "timed_out": True, "killed_leftovers": 2, "tokens_in": 0})
    for record in records:
        record["steps"] = [{key: step[key] for key in step_order() if key in step} for step in record["steps"]]
    path = write(tmp_path / "report.json", records, run_mode=MODE)

    raw = raw_cases(path)
    assert json.loads(path.read_text(encoding="utf-8"))["step_defaults"] == STEP_DEFAULTS
    assert not {"signal", "timed_out", "truncated", "killed_leftovers", "tokens_in"} & set(raw[0]["steps"][1])
    assert "memory" in raw[0]["steps"][0] and "memory" not in raw[0]["steps"][1]
    assert {"signal": 9, "timed_out": True, "killed_leftovers": 2, "tokens_in": 0}.items() <= raw[1]["steps"][1].items()
    streamed = streamed_report(path)
    assert streamed is not None
    index = ResumeIndex.load(path)
    handed = ResumeIndex.from_handoff(index.handoff(same_host=False))
    taken = [handed.take(key_of(r), str(r["content_hash"]), COMMAND, MODE) for r in records]
    resumed = [record.as_json() for record in taken if record is not None]
    for cases in (load_report(path).cases, list(streamed.cases), resumed):
        assert cases == records
        assert [list(step) for case in cases for step in case["steps"]] == [
            list(step) for record in records for step in record["steps"]
        ]
