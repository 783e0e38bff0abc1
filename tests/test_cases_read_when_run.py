"""A collected case keeps no text: it is read from its folder, or generated again, when it runs."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from pytest_recall.cases.case_refs import ReadAgain
from pytest_recall.cases.model import CaseError, load_case_dir
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

# Prints the answer; a prompt "rewrite PATH" first rewrites PATH, another case's step file.
REWRITER = """\
import pathlib
import sys

prompt = sys.argv[-1]
if prompt.startswith("rewrite "):
    pathlib.Path(prompt.split(" ", 1)[1]).write_text("say something else", encoding="utf-8")
print("12345.67")
"""


def test_collection_keeps_no_case_and_a_case_edited_before_it_runs_is_refused(recall_suite):
    pytester = recall_suite.pytester
    pytester.makeconftest(COUNTING_CONFTEST)
    later = recall_suite.add("b_later", ["say noted", "say 12345.67"])
    recall_suite.add("a_first", [f"rewrite {later / 'step2.txt'}", "say 12345.67"])
    generated = recall_suite.root / "generated"
    generated.mkdir()
    (generated / "suite.toml").write_text('family = "ledger"\nseed = 7\ncount = 3\n', encoding="utf-8")
    agent = pytester.path / "rewriter.py"
    agent.write_text(REWRITER, encoding="utf-8")

    result = recall_suite.run("--recall-concurrency=1", command=shlex.join([sys.executable, str(agent)]))

    assert (pytester.path / "alive-after-collection.txt").read_text() == "0"
    result.assert_outcomes(passed=1, failed=3, errors=1)
    result.stdout.fnmatch_lines(["*b_later: its files changed on disk after collection and no longer hold the case*"])
    records = {record["nodeid"]: record for record in recall_suite.report()["cases"]}
    refused = records["cases/suite/b_later::recall"]
    assert "its files changed on disk after collection" in refused["reason"]
    # The generated cases ran as generated: their prompts are those ledger builds from seed 7.
    for index in range(3):
        step1 = records[f"cases/generated::ledger_{index + 1:04d}::recall"]["steps"][0]["prompt"]
        assert step1 == ledger.generate_one(7, index).steps[0].prompt


def test_a_case_read_again_is_the_case_collected_to_the_byte(tmp_path):
    suite = family_suite({"family": "ledger", "seed": 7, "count": 4}, suite="ledger", source="s")
    assert [case.content_hash for case in suite] == [case.content_hash for case in ledger.generate(7, 4)]
    assert suite.case(2) == ledger.generate_one(7, 2)
    folder = tmp_path / "case"
    folder.mkdir()
    (folder / "step1.txt").write_text("remember 1.00", encoding="utf-8")
    (folder / "step2.txt").write_text("recall", encoding="utf-8")
    answer = {"id": "c", "category": "recall", "answer": "1.00", "answer_kind": "money"}
    (folder / "answer.json").write_text(json.dumps(answer), encoding="utf-8")

    def read():
        return load_case_dir(folder, suite="s", source="s/case", known_kinds=None)

    collected = read()
    again = ReadAgain.of(read, collected)
    assert again() == collected
    (folder / "answer.json").write_text(json.dumps({**answer, "answer": "2.00"}), encoding="utf-8")
    with pytest.raises(CaseError, match=r"^s/case: its files changed on disk after collection"):
        again()
