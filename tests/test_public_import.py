"""Importing LongMemEval and LoCoMo data files: small files in the exact public formats, awkward parts included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.cases.model import load_case_dir
from pytest_recall.cli import main
from pytest_recall.suites.json_stream import StreamError, iter_array

DATA = Path(__file__).resolve().parent / "data"
LONGMEMEVAL = DATA / "longmemeval_tiny.json"
LOCOMO = DATA / "locomo_tiny.json"


def run_import(benchmark: str, source: Path, out: Path, *options: str) -> int:
    return main(["import", benchmark, str(source), "--out", str(out), *options])


def answer(folder: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((folder / "answer.json").read_text(encoding="utf-8"))
    return loaded


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_the_stream_reader_gives_what_json_load_gives_whatever_the_chunk(chunk):
    for path in (LONGMEMEVAL, LOCOMO):
        assert list(iter_array(path, chunk=chunk)) == json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"a": 1}', "expected a JSON array"),
        ("", "an empty file"),
        ('[{"a": 1} {"b": 2}]', "after record 0"),
        ('[{"a": 1},]', "trailing ','"),
        ('[{"a": 1}, {"b": ', "record 1 is not valid JSON"),
        ("[1] 2", "after the closing"),
    ],
)
def test_the_stream_reader_names_what_is_wrong(tmp_path, text, said):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(StreamError, match=said):
        list(iter_array(path, chunk=3))


def test_longmemeval_one_step_per_session_then_the_dated_question(tmp_path, capsys):
    assert run_import("longmemeval", LONGMEMEVAL, tmp_path / "lme") == 0
    assert "imported 9 longmemeval questions" in capsys.readouterr().out
    folder = tmp_path / "lme" / "e47becba"
    steps = sorted(folder.glob("step*.txt"))
    assert len(steps) == 4  # three haystack sessions, then the question
    first = (folder / "step1.txt").read_text(encoding="utf-8")
    assert "2023/05/20 (Sat) 02:21" in first and "banana bread" in first and "Remember" in first
    evidence = (folder / "step2.txt").read_text(encoding="utf-8")
    assert "Business Administration" in evidence and "has_answer" not in evidence
    question = (folder / "step4.txt").read_text(encoding="utf-8")
    assert question.startswith("The current date is 2023/06/10 (Sat) 11:00.")
    assert "What degree did I graduate with?" in question
    expected = answer(folder)
    assert expected["answer_kind"] == "longmemeval" and expected["category"] == "single-session-user"
    assert expected["sessions_per_step"] == 1
    # A number in the data is the answer's text; an _abs question is reported as abstention.
    assert answer(tmp_path / "lme" / "gpt4_2ba83207")["answer"] == "3"
    abstention = answer(tmp_path / "lme" / "e47becba_abs")
    assert abstention["category"] == "abstention" and abstention["abstention"] is True
    assert abstention["question_type"] == "single-session-user"
    case = load_case_dir(folder, suite="lme", source="lme/e47becba", known_kinds=None)
    assert len(case.steps) == 4 and case.group is None


def test_sessions_per_step_puts_several_sessions_in_one_step(tmp_path, capsys):
    assert run_import("longmemeval", LONGMEMEVAL, tmp_path / "lme", "--sessions-per-step", "2") == 0
    assert "2 haystack session(s) per step" in capsys.readouterr().out
    folder = tmp_path / "lme" / "e47becba"
    assert len(list(folder.glob("step*.txt"))) == 3  # sessions 1-2, session 3, the question
    both = (folder / "step1.txt").read_text(encoding="utf-8")
    assert "2023/05/20 (Sat) 02:21" in both and "2023/05/22 (Mon) 14:05" in both
    assert answer(folder)["sessions_per_step"] == 2


def test_locomo_a_conversation_is_a_group_with_its_questions_inside(tmp_path, capsys):
    assert run_import("locomo", LOCOMO, tmp_path / "loc") == 0
    assert "12 locomo questions in 2 shared-ingest groups" in capsys.readouterr().out
    group = tmp_path / "loc" / "conv-26"
    assert (group / "group.toml").is_file()
    # session_4_date_time and session_5_date_time name no session: three ingest steps.
    assert sorted(p.name for p in group.glob("ingest*.txt")) == ["ingest1.txt", "ingest2.txt", "ingest3.txt"]
    second = (group / "ingest2.txt").read_text(encoding="utf-8")
    assert "1:14 pm on 25 May, 2023" in second
    assert "[shares an image: a photo of runners crossing a finish line]" in second
    assert "example.org" not in second
    # conv-30's session_3 is empty: it is no session.
    assert len(list((tmp_path / "loc" / "conv-30").glob("ingest*.txt"))) == 2
    adversarial = answer(group / "conv-26-q007")
    assert adversarial["locomo_category"] == 5 and adversarial["category"] == "adversarial"
    assert adversarial["adversarial_answer"] == "self-care is important"
    assert answer(group / "conv-26-q006")["answer"] == "2022"
    assert answer(group / "conv-26-q004")["evidence"] == ["D1:2", "D2:1"]
    case = load_case_dir(group / "conv-26-q001", suite="x", source="loc/conv-26/conv-26-q001", known_kinds=None)
    assert case.group == "loc/conv-26" and case.ingest_steps == 3 and len(case.steps) == 4 and case.suite == "loc"


@pytest.mark.parametrize(
    ("options", "chosen"),
    [
        (("--limit", "2"), {"e47becba", "118b2229"}),
        (("--type", "abstention"), {"e47becba_abs", "7161e7e2_abs"}),
        (("--type", "single-session-assistant"), {"7161e7e2", "7161e7e2_abs"}),
        (("--id", "6a1eabeb", "--id", "pref0001"), {"6a1eabeb", "pref0001"}),
    ],
)
def test_longmemeval_subsets(tmp_path, options, chosen):
    assert run_import("longmemeval", LONGMEMEVAL, tmp_path / "lme", *options) == 0
    assert {p.name for p in (tmp_path / "lme").iterdir() if p.is_dir()} == chosen


def test_a_seeded_sample_is_the_same_each_time_and_differs_by_seed(tmp_path):
    picked = []
    for run, seed in enumerate(("1", "1", "3")):
        out = tmp_path / f"run{run}"
        assert run_import("longmemeval", LONGMEMEVAL, out, "--limit", "4", "--seed", seed) == 0
        picked.append({p.name for p in out.iterdir() if p.is_dir()})
    assert picked[0] == picked[1] and len(picked[0]) == 4
    assert picked[0] != picked[2]


def test_locomo_subsets_by_category_and_conversation(tmp_path):
    assert run_import("locomo", LOCOMO, tmp_path / "a", "--category", "5", "--category", "multi-hop") == 0
    found = sorted(p.parent.name + "/" + p.name for p in (tmp_path / "a").glob("*/*") if p.is_dir())
    assert found == [
        "conv-26/conv-26-q003",
        "conv-26/conv-26-q004",
        "conv-26/conv-26-q007",
        "conv-26/conv-26-q008",
        "conv-30/conv-30-q002",
        "conv-30/conv-30-q004",
    ]
    assert run_import("locomo", LOCOMO, tmp_path / "b", "--id", "conv-30") == 0
    assert [p.name for p in (tmp_path / "b").iterdir() if p.is_dir()] == ["conv-30"]


def _mutated(tmp_path: Path, source: Path, change: Any) -> Path:
    records = json.loads(source.read_text(encoding="utf-8"))
    change(records)
    path = tmp_path / source.name
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


LONGMEMEVAL_FAULTS = [
    (lambda r: r[2].pop("answer"), "record 2 (question_id '7161e7e2'): field 'answer' is missing"),
    (lambda r: r[4]["haystack_dates"].pop(), "record 4 (question_id 'gpt4_2ba83207'): field 'haystack_dates' has 2"),
    (lambda r: r[5].update(question_type="updates"), "record 5 (question_id '6a1eabeb'): field 'question_type'"),
    (
        lambda r: r[8]["haystack_sessions"][1].append({"role": "bot", "content": "x"}),
        "record 8 (question_id '7161e7e2_abs'): field 'haystack_sessions[1][2]': 'role' is 'bot'",
    ),
    (lambda r: r[1].update(answer=None), "record 1 (question_id '118b2229'): field 'answer'"),
]
LOCOMO_FAULTS = [
    (lambda r: r[0]["qa"][2].pop("answer"), "record 0 (sample_id 'conv-26'): field 'qa[2]': field 'answer' is missing"),
    (lambda r: r[1]["qa"][0].update(category=7), "record 1 (sample_id 'conv-30'): field 'qa[0]': 'category' is 7"),
    (lambda r: r[0]["conversation"].pop("session_2_date_time"), "conversation'.session_2_date_time is missing"),
    (lambda r: r[1]["conversation"]["session_1"][0].pop("speaker"), "session_1[0]: field 'speaker' is missing"),
]


@pytest.mark.parametrize(
    ("benchmark", "source", "change", "said"),
    [("longmemeval", LONGMEMEVAL, *fault) for fault in LONGMEMEVAL_FAULTS]
    + [("locomo", LOCOMO, *fault) for fault in LOCOMO_FAULTS],
)
def test_a_malformed_record_is_one_line_naming_record_and_field_and_nothing_is_written(
    tmp_path, capsys, benchmark, source, change, said
):
    bad = _mutated(tmp_path, source, change)
    out = tmp_path / "out" / "suite"
    assert run_import(benchmark, bad, out) == 2
    error = capsys.readouterr().err
    assert said in error, error
    assert len(error.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_a_cut_off_file_writes_nothing(tmp_path, capsys):
    text = LOCOMO.read_text(encoding="utf-8")
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) * 2 // 3], encoding="utf-8")
    assert run_import("locomo", cut, tmp_path / "out") == 2
    assert "is not valid JSON" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["cut.json"]


def test_an_existing_suite_is_never_overwritten(tmp_path, capsys):
    out = tmp_path / "lme"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    assert run_import("longmemeval", LONGMEMEVAL, out) == 2
    assert "already exists and is not empty" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def _record_holding(benchmark: str, nested: str) -> str:
    """A file of one record whose id field holds ``nested`` (JSON text), as a hostile or broken file might."""
    field = "question_id" if benchmark == "longmemeval" else "sample_id"
    return f'[{{"{field}": {nested}}}]'


@pytest.mark.parametrize("benchmark", ["longmemeval", "locomo"])
@pytest.mark.parametrize(
    ("nested", "said"),
    [
        ("[" * 200_000 + "]" * 200_000, "record 0 is nested too deep to read"),
        ("[" * 400 + "]" * 400, "must be a"),
        (json.dumps(["x" * 100_000] * 50), "must be a"),
    ],
    ids=["200000-deep", "400-deep", "5-MB-list"],
)
def test_a_deep_or_huge_value_is_one_short_line_and_nothing_is_written(tmp_path, capsys, benchmark, nested, said):
    """A file nested 200,000 deep raised RecursionError with a traceback; a value the decoder reads is cut short."""
    source = tmp_path / "deep.json"
    source.write_text(_record_holding(benchmark, nested), encoding="utf-8")
    assert run_import(benchmark, source, tmp_path / "out") == 2
    error = capsys.readouterr().err
    assert said in error, error[:500]
    assert len(error.strip().splitlines()) == 1 and len(error) - len(str(source)) < 300, error[:500]
    assert not (tmp_path / "out").exists()


def staged_leftovers(folder: Path) -> list[str]:
    return [str(path) for path in folder.rglob("*partial*")]


@pytest.mark.parametrize("target", ["empty", "dangling"])
def test_an_out_that_is_a_link_is_followed_and_nothing_is_left_staged(tmp_path, capsys, target):
    """It was 'Not a directory', with the whole staged suite left beside the link as .link.partial-*."""
    real = tmp_path / "disk" / "suite"
    if target == "empty":
        real.mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    assert run_import("longmemeval", LONGMEMEVAL, link) == 0, capsys.readouterr().err
    assert link.is_symlink() and link.resolve() == real
    assert (real / "e47becba" / "step1.txt").is_file()
    assert staged_leftovers(tmp_path) == []


def test_an_import_that_fails_mid_way_into_a_link_leaves_nothing_staged(tmp_path, capsys):
    """The second pass fails after writing cases: two ids that become one folder name, late in the file."""
    records = json.loads(LONGMEMEVAL.read_text(encoding="utf-8"))
    clash = dict(records[-1], question_id=records[-1]["question_id"].replace("_", "/"))
    source = tmp_path / "clash.json"
    source.write_text(json.dumps([*records, clash]), encoding="utf-8")
    real = tmp_path / "disk" / "suite"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    assert run_import("longmemeval", source, tmp_path / "link") == 2
    error = capsys.readouterr().err
    assert "become the one folder name" in error and len(error.strip().splitlines()) == 1, error
    assert list(real.iterdir()) == []
    assert staged_leftovers(tmp_path) == []


def test_an_out_link_that_loops_is_one_line(tmp_path, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert run_import("locomo", LOCOMO, loop) == 2
    error = capsys.readouterr().err
    assert "loop" in error and len(error.strip().splitlines()) == 1, error
    assert staged_leftovers(tmp_path) == []
