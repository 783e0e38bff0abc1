"""A collected case keeps no text: it is read from its folder, or generated again, when it runs."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from pytest_recall.cases.case_refs import ReadAgain
from pytest_recall.cases.model import CaseError, folder_digests, load_case_dir
from pytest_recall.suites import ledger
from pytest_recall.suites.suite_file import family_suite

# Counts the cases alive once collection is over: the items must hold none of them.
COUNTING_CONFTEST = """\
import gc
from pathlib import Path

from pytest_recall.cases.model import Case


def pytest_collection_finish(session):
    gc.collect()
    alive = sum(isinstance(thing, Case) for thing in gc.get_objects())
    Path("alive-after-collection.txt").write_text(str(alive))
"""

# Prints the answer; a prompt "rewrite PATH" or "remove PATH" first does that to another case's file.
REWRITER = """\
import pathlib
import sys

verb, _, path = sys.argv[-1].partition(" ")
if verb == "rewrite":
    pathlib.Path(path).write_text("say something else", encoding="utf-8")
elif verb == "remove":
    pathlib.Path(path).unlink()
print("12345.67")
"""


def test_collection_keeps_no_case_and_a_case_changed_before_it_runs_scores_0(recall_suite):
    pytester = recall_suite.pytester
    pytester.makeconftest(COUNTING_CONFTEST)
    rewritten = recall_suite.add("b_rewritten", ["say noted", "say 12345.67"])
    broken = recall_suite.add("c_broken", ["say noted", "say 12345.67"])
    recall_suite.add("a_first", [f"rewrite {rewritten / 'step2.txt'}", f"remove {broken / 'step2.txt'}"])
    generated = recall_suite.root / "generated"
    generated.mkdir()
    (generated / "suite.toml").write_text('family = "ledger"\nseed = 7\ncount = 3\n', encoding="utf-8")
    agent = pytester.path / "rewriter.py"
    agent.write_text(REWRITER, encoding="utf-8")

    result = recall_suite.run("--recall-concurrency=1", command=shlex.join([sys.executable, str(agent)]))

    assert (pytester.path / "alive-after-collection.txt").read_text() == "0"
    result.assert_outcomes(passed=1, failed=5)
    records = {record["nodeid"]: record for record in recall_suite.report()["cases"]}
    # A case read again as it starts is refused, not run, and scores 0 (an error would excuse it from the score).
    changed = "case files changed on disk before it ran: cases/suite/"
    assert (
        records["cases/suite/b_rewritten::recall"]["reason"]
        == f"{changed}b_rewritten: its files no longer hold the case collected"
    )
    assert records["cases/suite/c_broken::recall"]["reason"].startswith(f"{changed}c_broken: only one step")
    for name in ("b_rewritten", "c_broken"):
        record = records[f"cases/suite/{name}::recall"]
        assert (record["id"], record["score"], record["error"], record["outcome"]) == (name, 0.0, None, "wrong")
    result.stdout.fnmatch_lines([f"*{changed}b_rewritten: its files no longer hold the case collected*"])
    # The generated cases ran as generated: their prompts are those ledger builds from seed 7.
    for index in range(3):
        step1 = records[f"cases/generated::ledger_{index + 1:04d}::recall"]["steps"][0]["prompt"]
        assert step1 == ledger.generate_one(7, index).steps[0].prompt


ANSWER = {"id": "c", "category": "recall", "answer": "1.00", "answer_kind": "money"}


def _small_case_folder(tmp_path):
    """A two-step case folder, and how to read it."""
    folder = tmp_path / "case"
    folder.mkdir()
    (folder / "step1.txt").write_text("remember 1.00", encoding="utf-8")
    (folder / "step2.txt").write_text("recall", encoding="utf-8")
    (folder / "answer.json").write_text(json.dumps(ANSWER), encoding="utf-8")
    return folder, lambda: load_case_dir(folder, suite="s", source="s/case", known_kinds=None)


def test_a_case_read_again_is_the_case_collected_to_the_byte(tmp_path):
    suite = family_suite({"family": "ledger", "seed": 7, "count": 4}, suite="ledger", source="s")
    assert [case.content_hash for case in suite] == [case.content_hash for case in ledger.generate(7, 4)]
    assert suite.case(2) == ledger.generate_one(7, 2)
    folder, read = _small_case_folder(tmp_path)
    collected = read()
    again = ReadAgain.of(read, collected)
    assert again() == collected
    (folder / "answer.json").write_text(json.dumps({**ANSWER, "answer": "2.00"}), encoding="utf-8")
    with pytest.raises(CaseError, match=r"^s/case: its files no longer hold the case collected$"):
        again()


@pytest.mark.parametrize(
    "change",
    [
        lambda folder: (folder / "step2.txt").write_text("recall it", encoding="utf-8"),
        lambda folder: (folder / "step2.txt").write_text("recall", encoding="utf-8"),  # the same text, written again
        lambda folder: (folder / "case.toml").write_text("timeout = 5\n", encoding="utf-8"),
        lambda folder: (folder / "step2.txt").rename(folder / "step3.txt"),
    ],
    ids=["edited", "rewritten-unchanged", "file-added", "renamed"],
)
def test_a_plain_case_folder_is_checked_by_its_files_signature_not_a_hash(tmp_path, change):
    folder, read = _small_case_folder(tmp_path)
    on_disk = folder_digests(folder)
    again = ReadAgain.of(read, read(), folder=folder, on_disk=on_disk)
    assert again.collected == b"", "a plain folder needs no fingerprint"
    assert again() == read()
    change(folder)
    with pytest.raises(
        CaseError, match=r"^s/case: (its files no longer hold the case collected|step2\.txt is missing.*)$"
    ):
        again()


def test_a_case_hashed_once_still_hashes_anew_what_replace_changes() -> None:
    """content_hash is kept on the case after its first use (issue 27); a changed copy must not inherit it."""
    import dataclasses

    case = ledger.generate_one(7, 0)
    first = case.content_hash
    assert case.content_hash == first == ledger.generate_one(7, 0).content_hash
    changed = dataclasses.replace(case, expected={**case.expected, "answer": "0.01"})
    assert changed.content_hash != first and case.content_hash == first
    assert changed == dataclasses.replace(case, expected={**case.expected, "answer": "0.01"})
