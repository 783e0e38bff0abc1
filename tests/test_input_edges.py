"""Input edge cases a red-team pass found (issue 14, item 14): each is one collection error,
or a bounded behaviour the README states.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ANSWER = "12345.67"


def test_a_directory_symlink_cycle_collects_each_case_once(recall_suite: Any) -> None:
    folder = recall_suite.add("looped", ["say 1.00", f"say {ANSWER}"], ANSWER)
    os.symlink("..", folder / "back-to-suite")
    os.symlink("../..", folder.parent / "back-to-root")
    result = recall_suite.run("--recall-report=" + str(recall_suite.report_path))
    result.assert_outcomes(passed=1)
    assert [record["id"] for record in recall_suite.report()["cases"]] == ["looped"]


def test_a_step_file_that_is_a_symlink_out_of_its_case_folder_is_refused(recall_suite: Any, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("root:$6$hash-of-a-password\n", encoding="utf-8")
    recall_suite.add("good", ["say 1.00", f"say {ANSWER}"], ANSWER)
    bad = recall_suite.add("bad", ["say 1.00", f"say {ANSWER}"], ANSWER)
    (bad / "step1.txt").unlink()
    os.symlink(secret, bad / "step1.txt")
    result = recall_suite.run()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*malformed case: cases/suite/bad*step1.txt is a symlink to a file outside the case folder*"]
    )
    assert "hash-of-a-password" not in recall_suite.report_path.read_text(encoding="utf-8")


def test_a_step_file_symlinked_within_its_case_folder_is_still_read(recall_suite: Any) -> None:
    folder = recall_suite.add("shared", ["say 1.00", f"say {ANSWER}"], ANSWER)
    (folder / "step1.txt").unlink()
    (folder / "common.md").write_text("say 1.00", encoding="utf-8")
    os.symlink("common.md", folder / "step1.txt")
    recall_suite.run().assert_outcomes(passed=1)


def test_a_null_answer_is_one_collection_error(recall_suite: Any) -> None:
    recall_suite.add("good", ["say 1.00", f"say {ANSWER}"], ANSWER)
    bad = recall_suite.add("bad", ["say 1.00", f"say {ANSWER}"], ANSWER)
    expected = {"id": "bad", "category": "recall", "answer": None, "answer_kind": "money"}
    (bad / "answer.json").write_text(json.dumps(expected), encoding="utf-8")
    result = recall_suite.run()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*malformed case: cases/suite/bad*answer.json: 'answer' is null*"])


def write_suite(recall_suite: Any, text: str) -> None:
    folder = recall_suite.root / "generated"
    folder.mkdir(parents=True)
    (folder / "suite.toml").write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('family = "ledger"\nseed = 1\ncount = 1000000000\n', "*'count' must be a whole number from 1 to 10000*"),
        ('family = "ledger"\nseed = 1\ncont = 5\n', "*unknown suite.toml key(s) cont; allowed: *count*"),
        ('family = "ledger"\nseed = 1\ncount = 2\ntimout = 5\n', "*unknown suite.toml key(s) timout; allowed: *"),
        ('family = "audit"\nsplit = "eval"\nsize = 2\nsesion = "x"\n', "*unknown suite.toml key(s) sesion;*"),
        ('family = "audit"\nsplit = "eval"\nsize = 2\ncount = 5\n', "*unknown suite.toml key(s) count;*"),
    ],
    ids=["huge-count", "cont", "timout", "sesion", "other-familys-key"],
)
def test_suite_toml_counts_are_bounded_and_unknown_keys_are_named(recall_suite: Any, text: str, message: str) -> None:
    write_suite(recall_suite, text)
    result = recall_suite.run("--collect-only", report=False)
    result.stdout.fnmatch_lines([f"*malformed case: *suite.toml*{message[1:]}"])
    result.assert_outcomes(errors=1)
    assert "Traceback" not in result.stdout.str()


def test_case_files_read_with_windows_or_old_mac_line_ends_read_as_python_reads_text(tmp_path: Path) -> None:
    """The lean reader (issue 27) must give the prompts and answer ``Path.read_text`` gives: same hash, same run."""
    from pytest_recall.cases.model import load_case_dir

    folder = tmp_path / "crlf"
    folder.mkdir()
    steps = [b"Remember 12345.67.\r\nThen stop.\r\n", b"What was it?\rAnswer only.\r"]
    for number, data in enumerate(steps, 1):
        (folder / f"step{number}.txt").write_bytes(data)
    (folder / "answer.json").write_bytes(
        b'{"id": "crlf", "category": "c",\r\n "answer": "12345.67", "answer_kind": "money"}\r\n'
    )
    case = load_case_dir(folder, suite="s", source="s/crlf", known_kinds=None)
    expected = [(folder / f"step{number}.txt").read_text(encoding="utf-8") for number in (1, 2)]
    assert [step.prompt for step in case.steps] == expected
    assert expected == ["Remember 12345.67.\nThen stop.\n", "What was it?\nAnswer only.\n"]
    assert case.expected["answer"] == "12345.67"
