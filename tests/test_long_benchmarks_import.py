"""Provenance through import, and BEAM and MemoryAgentBench files (written here in their public formats) as suites."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.cli import main
from pytest_recall.scoring import beam_rubric, memoryagentbench_metrics
from pytest_recall.suites.json_stream import iter_array, iter_records

DATA = Path(__file__).resolve().parent / "data"
LONGMEMEVAL = DATA / "longmemeval_tiny.json"
BEAM = DATA / "beam_tiny"
MAB = DATA / "memoryagentbench_tiny.jsonl"


def run_import(benchmark: str, source: Path, out: Path, *options: str) -> int:
    return main(["import", benchmark, str(source), "--out", str(out), *options])


def note(out: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((out / "import.json").read_text(encoding="utf-8"))
    return loaded


def answer(folder: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((folder / "answer.json").read_text(encoding="utf-8"))
    return loaded


def tree(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): p.read_text(encoding="utf-8") for p in sorted(out.rglob("*")) if p.is_file()}


def test_the_note_names_the_file_by_its_hash_and_the_options_that_made_the_suite(tmp_path):
    assert run_import("longmemeval", LONGMEMEVAL, tmp_path / "lme", "--limit", "3", "--seed", "5") == 0
    written = note(tmp_path / "lme")
    assert written["note_format"] == 1 and written["benchmark"] == "longmemeval"
    assert written["sources"] == [
        {
            "name": LONGMEMEVAL.name,
            "bytes": LONGMEMEVAL.stat().st_size,
            "sha256": hashlib.sha256(LONGMEMEVAL.read_bytes()).hexdigest(),
        }
    ]
    assert written["options"] == {
        "limit": 3,
        "types": [],
        "ids": [],
        "seed": 5,
        "sessions_per_step": 1,
        "chars_per_step": 60000,
    }
    assert written["harness_version"] and written["questions"] == 3
    assert str(tmp_path) not in json.dumps(written)  # a name, never this machine's path


def test_the_same_import_again_is_a_no_op_and_another_file_or_other_options_are_refused(tmp_path, capsys):
    out = tmp_path / "lme"
    assert run_import("longmemeval", LONGMEMEVAL, out) == 0
    before = tree(out)
    capsys.readouterr()
    assert run_import("longmemeval", LONGMEMEVAL, out) == 0
    assert "already holds this import" in capsys.readouterr().out
    assert tree(out) == before
    changed = tmp_path / LONGMEMEVAL.name
    records = json.loads(LONGMEMEVAL.read_text(encoding="utf-8"))
    changed.write_text(json.dumps(records[:-1]), encoding="utf-8")
    assert run_import("longmemeval", changed, out) == 2
    said = capsys.readouterr().err.strip()
    old, new = (hashlib.sha256(p.read_bytes()).hexdigest()[:12] for p in (LONGMEMEVAL, changed))
    assert len(said.splitlines()) == 1 and old in said and new in said and "another --out" in said
    assert run_import("longmemeval", LONGMEMEVAL, out, "--limit", "2") == 2
    assert "other options (limit)" in capsys.readouterr().err
    assert tree(out) == before


def test_the_reader_streams_a_single_key_objects_array_item_by_item(tmp_path):
    path = tmp_path / "nested.json"
    records = [{"plan-1": [{"a": 1}, {"b": [2]}]}, {"x": 1, "y": 2}, {"plan-2": []}, 3, {"turns": [[1]], "t": 2}]
    path.write_text(json.dumps(records))
    for chunk in (1, 5, 4096):
        assert list(iter_array(path, chunk=chunk, unwrap=re.compile(r"plan-\d+"))) == [
            ("plan-1", {"a": 1}),
            ("plan-1", {"b": [2]}),
            (None, {"x": 1, "y": 2}),
            (None, 3),
            (None, {"turns": [[1]], "t": 2}),  # an array in the first field of an ordinary record: read whole
        ]
    lines = tmp_path / "rows.jsonl"
    lines.write_text('{"a": 1}\n\n{"b": 2}\n')
    assert list(iter_records(lines)) == [{"a": 1}, {"b": 2}] == list(iter_records(_as_array(lines, tmp_path)))


def _as_array(lines: Path, tmp_path: Path) -> Path:
    array = tmp_path / "rows.json"
    array.write_text(json.dumps(list(iter_records(lines))))
    return array


def test_beam_a_conversation_is_a_group_its_probes_cases_in_the_papers_abilities(tmp_path, capsys):
    assert run_import("beam", BEAM / "100K", tmp_path / "beam") == 0
    assert "5 beam questions in 1 shared-ingest groups" in capsys.readouterr().out
    group = tmp_path / "beam" / "100K-1"
    assert (group / "group.toml").is_file() and sorted(p.name for p in group.glob("ingest*.txt")) == ["ingest1.txt"]
    ingest = (group / "ingest1.txt").read_text(encoding="utf-8")
    assert "Chat session 2 of 2, held on April-02-2024:" in ingest and "->->" not in ingest
    expected = answer(group / "100K-1-knowledge_update-1")
    assert expected["category"] == "knowledge_update" and expected["answer_kind"] == "beam"
    assert expected["question_id"] == "100K-1-knowledge_update-1" and expected["sample_id"] == "100K-1"
    assert expected["rubric"] == ["LLM response should state: 250ms"]
    names = [s["name"] for s in note(tmp_path / "beam")["sources"]]
    assert names == ["100K/1/chat.json", "100K/1/probing_questions/probing_questions.json"]


def test_beam_10m_plans_read_through_give_the_same_steps_as_the_flat_chat(tmp_path):
    assert run_import("beam", BEAM / "100K" / "1", tmp_path / "flat") == 0
    assert run_import("beam", BEAM / "10M" / "1", tmp_path / "plans") == 0
    flat = {k.replace("100K-1", "X"): v.replace("100K-1", "X") for k, v in tree(tmp_path / "flat").items()}
    plans = {k.replace("10M-1", "X"): v.replace("10M-1", "X") for k, v in tree(tmp_path / "plans").items()}
    flat.pop("import.json"), plans.pop("import.json")
    assert flat == plans


def hub_row(folder: Path, conversation_id: str) -> dict[str, Any]:
    """A conversation as the hub's rows hold it: batches as flat message lists, the probes as a Python literal."""
    chat = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
    probes = json.loads((folder / "probing_questions" / "probing_questions.json").read_text(encoding="utf-8"))
    return {
        "conversation_id": conversation_id,
        "conversation_seed": {"category": "Coding", "title": "Budget tracker"},
        "narratives": "",
        "user_profile": {"user_info": "", "user_relationships": ""},
        "conversation_plan": "",
        "user_questions": [],
        "chat": [[message for turn in batch["turns"] for message in turn] for batch in chat],
        "probing_questions": repr(probes),
    }


def test_beam_hub_rows_as_json_lines_make_the_same_suite_as_the_folders(tmp_path, capsys):
    rows = tmp_path / "100K.jsonl"
    rows.write_text(json.dumps(hub_row(BEAM / "100K" / "1", "1")) + "\n", encoding="utf-8")
    assert run_import("beam", rows, tmp_path / "rows") == 0
    assert run_import("beam", BEAM / "100K", tmp_path / "folders") == 0
    from_rows, from_folders = tree(tmp_path / "rows"), tree(tmp_path / "folders")
    assert note(tmp_path / "rows")["sources"][0]["name"] == "100K.jsonl"
    from_rows.pop("import.json"), from_folders.pop("import.json")
    assert from_rows == from_folders
    broken = {**hub_row(BEAM / "100K" / "1", "2"), "probing_questions": "{'abstention': [open('x')]}"}
    rows.write_text(json.dumps(broken) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert run_import("beam", rows, tmp_path / "broken") == 2
    assert "record 0: field 'probing_questions' is no Python literal" in capsys.readouterr().err
    assert not (tmp_path / "broken").exists()


def test_beam_steps_keep_to_the_character_budget_and_lose_no_line(tmp_path):
    folder = tmp_path / "100K" / "7"
    shutil.copytree(BEAM / "100K" / "1", folder)
    said = [f"fact {i}: the code word is w{i:04d} " + "x" * 150 for i in range(60)]
    turns = [[{"role": "user", "id": i, "content": text}] for i, text in enumerate(said)]
    batches = [{"batch_number": 1, "turns": turns[:30], "time_anchor": "May-1-2024"}]
    batches.append({"batch_number": 2, "turns": turns[30:], "time_anchor": "May-9-2024"})
    (folder / "chat.json").write_text(json.dumps(batches), encoding="utf-8")
    assert run_import("beam", folder, tmp_path / "out", "--chars-per-step", "1000") == 0
    steps = sorted((tmp_path / "out" / "100K-7").glob("ingest*.txt"), key=lambda p: int(p.stem[6:]))
    assert len(steps) > 10
    told = []
    for step in steps:
        body = step.read_text(encoding="utf-8").split("\n\n")[1]
        assert len(body) <= 1000 + 60, step.name  # the budget, and the session header repeated at the top
        assert body.startswith("Chat session ")
        told += [line for line in body.splitlines() if line.startswith("user: ")]
    assert told == [f"user: {text}" for text in said]


def test_a_malformed_beam_message_is_one_line_and_nothing_is_written(tmp_path, capsys):
    folder = tmp_path / "100K" / "1"
    shutil.copytree(BEAM / "100K" / "1", folder)
    chat = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
    del chat[1]["turns"][0][1]["role"]
    (folder / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    assert run_import("beam", folder, tmp_path / "out") == 2
    said = capsys.readouterr().err.strip()
    assert said == (
        "pytest-recall import: chat.json: batch 2: turns[0][1] must be an object whose 'role' is user or assistant"
    )
    assert not (tmp_path / "out").exists()


def test_memoryagentbench_rows_are_groups_with_their_competency_metric_and_ids(tmp_path, capsys):
    assert run_import("memoryagentbench", MAB, tmp_path / "mab") == 0
    assert "4 memoryagentbench questions in 2 shared-ingest groups" in capsys.readouterr().out
    expected = answer(tmp_path / "mab" / "factconsolidation_sh_6k-0001" / "fact_sh_0_q1")
    assert expected["category"] == "Conflict_Resolution" and expected["mab_metric"] == "substring_exact_match"
    assert expected["answer"] == "Ravelport" and expected["question_id"] == "fact_sh_0_q1"
    assert expected["sample_id"] == "factconsolidation_sh_6k-0001"
    assert expected["mab_source"] == "factconsolidation_sh_6k"
    ferry = answer(tmp_path / "mab" / "ruler_qa1_197K-0000" / "ruler_qa1_0_q1")
    assert ferry["category"] == "Accurate_Retrieval" and ferry["answers"] == ["Kesh harbour", "Kesh"]
    # The same rows as one JSON array make the same suite.
    array = tmp_path / MAB.with_suffix(".json").name
    array.write_text(json.dumps(list(iter_records(MAB))), encoding="utf-8")
    assert run_import("memoryagentbench", array, tmp_path / "again") == 0
    first, second = tree(tmp_path / "mab"), tree(tmp_path / "again")
    first.pop("import.json"), second.pop("import.json")
    assert first == second
    assert run_import("memoryagentbench", MAB, tmp_path / "cr", "--type", "Conflict_Resolution") == 0
    assert [p.name for p in (tmp_path / "cr").iterdir() if p.is_dir()] == ["factconsolidation_sh_6k-0001"]


def test_a_memoryagentbench_context_is_told_in_numbered_pieces_within_the_budget(tmp_path):
    said = [f"Document {i}: the keeper of gate {i} is called K{i:03d}. " + "y" * 120 for i in range(50)]
    row = {"context": "\n\n".join(said), "questions": ["Who keeps gate 7?"], "answers": [["K007"]]}
    rows = tmp_path / "Accurate_Retrieval.jsonl"  # no metadata.source: the split is named by the file
    rows.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert run_import("memoryagentbench", rows, tmp_path / "out", "--chars-per-step", "1000") == 0
    group = tmp_path / "out" / "Accurate_Retrieval-0000"
    steps = sorted(group.glob("ingest*.txt"), key=lambda p: int(p.stem[6:]))
    told = []
    for number, step in enumerate(steps, start=1):
        header, *lines = step.read_text(encoding="utf-8").split("\n\n")[1].splitlines()
        assert header == f"Session {number} of {len(steps)}, held at an unrecorded time:"
        assert sum(len(line) + 1 for line in lines) <= 1000
        told += lines
    assert told == [line.strip() for line in said] and len(steps) > 5
    assert answer(group / "Accurate_Retrieval-0000-q001")["category"] == "Accurate_Retrieval"


def test_a_memoryagentbench_row_of_no_known_competency_is_refused_naming_the_field(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"context": "x", "questions": ["q"], "answers": [["a"]], "metadata": {"source": "z"}}))
    assert run_import("memoryagentbench", rows, tmp_path / "out") == 2
    said = capsys.readouterr().err
    assert "record 0: field 'metadata.source' is 'z'" in said and "Conflict_Resolution" in said
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("prediction", "gold", "metric", "score"),
    [
        ("The capital is Ravelport.", "Ravelport", "substring_exact_match", 1.0),
        ("Quillton", "Ravelport", "substring_exact_match", 0.0),
        ("label: 43", "43", "exact_match", 0.0),  # strict, as the README warns
        ("Answer: 43", "43", "exact_match", 1.0),  # the parsed answer counts
        ("the Banking", "banking", "exact_match", 1.0),
    ],
)
def test_memoryagentbench_metrics_follow_its_code(prediction, gold, metric, score):
    assert memoryagentbench_metrics.score(prediction, [gold], metric) == score


def test_memoryagentbench_f1_and_recall_follow_its_code():
    assert memoryagentbench_metrics.f1("yes", "no") == 0.0
    assert memoryagentbench_metrics.f1("Edda Morrow built it", "Edda Morrow") == pytest.approx(2 * 0.5 / 1.5)
    assert memoryagentbench_metrics.element_recall("alpha and Beta", ["alpha", "beta", "gamma"]) == pytest.approx(2 / 3)


def test_beam_event_ordering_is_tau_b_times_f1():
    events = ["first sprint", "dashboard response time", "code formatting"]
    in_order = ["the first sprint", "then the dashboard response time", "last code formatting"]
    assert beam_rubric.event_ordering_score(events, in_order) == 1.0
    assert beam_rubric.event_ordering_score(events, in_order[::-1]) == 0.0
    # Two of three recovered, in order: F1 0.8; the missing one ranks last, tied with nothing: tau-b 1.
    assert beam_rubric.event_ordering_score(events, in_order[:2]) == pytest.approx(0.8)
    assert beam_rubric.kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3)
    assert beam_rubric.kendall_tau_b([1, 2, 3, 3], [1, 2, 3, 4]) == pytest.approx(5 / (6 * 5) ** 0.5)


def test_beam_rubrics_by_word_and_the_abilities_left_to_a_judge():
    expected = {"beam_ability": "knowledge_update", "rubric": ["LLM response should state: 250ms"], "category": "k"}
    assert beam_rubric.score_beam("It now averages 250ms.", expected)["score"] == 1.0
    assert beam_rubric.score_beam("It averages 400ms.", expected)["score"] == 0.0
    half = {**expected, "rubric": ["LLM response should state: from January 15, 2024 till March 15, 2024"]}
    assert beam_rubric.score_beam("January 15 2024", half)["score"] == 0.5
    abstain = {"beam_ability": "abstention", "rubric": ["there is no information"], "category": "abstention"}
    assert beam_rubric.score_beam("UNKNOWN", abstain)["score"] == 1.0
    assert beam_rubric.score_beam("Chase bank.", abstain)["score"] == 0.0
    follow = {"beam_ability": "instruction_following", "rubric": ["code blocks"], "category": "instruction_following"}
    verdict = beam_rubric.score_beam("```python\nx\n```", follow)
    assert verdict["score"] is None and "--recall-judge-cmd" in verdict["reason"]


def test_a_beam_hub_rows_chat_is_streamed_not_held(tmp_path):
    """A 3 MB row (its chat before its probing questions, as the hub writes it): the import's peak memory stays a
    fraction of the row, as for a MemoryAgentBench context, and the last batch is written."""
    row = hub_row(BEAM / "100K" / "1", "9")
    said = "the keeper of gate {n} is K{n:07d}. " * 12
    row["chat"] = [
        [{"role": "user", "id": n, "content": said.format(n=n)}, {"role": "assistant", "id": n, "content": "Noted."}]
        for n in range(5_000)
    ]
    rows = tmp_path / "100K.jsonl"
    rows.write_text(json.dumps(row) + "\n", encoding="utf-8")
    size = rows.stat().st_size
    warm = tmp_path / "warm" / "100K.jsonl"  # the first import loads modules: megabytes a second does not trace
    warm.parent.mkdir()
    warm.write_text(json.dumps(hub_row(BEAM / "100K" / "1", "1")) + "\n", encoding="utf-8")
    assert run_import("beam", warm, tmp_path / "warm-out") == 0
    tracemalloc.start()
    try:
        assert run_import("beam", rows, tmp_path / "out") == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert size > 2_500_000 and peak < size / 3, f"peak {peak} bytes for a {size}-byte row"
    steps = sorted((tmp_path / "out" / "100K-9").glob("ingest*.txt"), key=lambda p: int(p.stem[6:]))
    assert "K0004999" in steps[-1].read_text(encoding="utf-8")
