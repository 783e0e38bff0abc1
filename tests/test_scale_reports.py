"""Reports sized to their use: prompts by reference, --recall-transcripts, and records streamed from disk."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from pytest_recall.reporting.files import dump_streaming
from pytest_recall.reporting.transcripts import PROMPT_EDGE_CHARS, prompt_reference, prompt_text

# A step long enough that its reference keeps only a head and a tail.
FILLER = "ignore this line of filler\n" * 60
PASSING = ("remember 12345.67\n" + FILLER, "recall\n")
FAILING = ("say nothing kept\n" + FILLER, "say 1.00\n")


def two_cases(recall_suite: Any) -> None:
    recall_suite.add("passes", PASSING)
    recall_suite.add("fails", FAILING)


def test_by_default_a_passing_case_keeps_scalars_and_step_summaries_and_a_failing_one_its_output(recall_suite):
    two_cases(recall_suite)
    log = recall_suite.pytester.path / "run.jsonl"

    result = recall_suite.run(f"--recall-log={log}", "--recall-transcripts=failed")

    result.assert_outcomes(passed=1, failed=1)
    records = recall_suite.records()
    passed, failed = records["passes"], records["fails"]
    assert all("stdout" not in step and "stderr" not in step for step in passed["steps"])
    assert passed["score"] == 1.0 and passed["steps"][1]["exit_code"] == 0 and passed["steps"][1]["stdout_bytes"] > 0
    assert failed["steps"][1]["stdout"] == "1.00\n"
    # The run log keeps everything, whatever the report leaves out.
    logged = {record["id"]: record for record in map(json.loads, log.read_text().splitlines())}
    assert logged["passes"]["steps"][1]["stdout"] == "12345.67\n"


def test_a_prompt_is_named_by_size_and_sha256_with_its_head_and_tail(recall_suite):
    two_cases(recall_suite)

    recall_suite.run("--recall-transcripts=failed").assert_outcomes(passed=1, failed=1)

    # A failing case keeps the references; a passing one's prompts are pinned by its content_hash.
    assert all("prompt" not in step for step in recall_suite.records()["passes"]["steps"])
    prompt = recall_suite.records()["fails"]["steps"][0]["prompt"]
    text = FAILING[0]
    assert prompt == {
        "size": len(text.encode()),
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "head": text[:PROMPT_EDGE_CHARS],
        "tail": text[-PROMPT_EDGE_CHARS:],
    }
    assert recall_suite.records()["fails"]["steps"][1]["prompt"]["head"] == FAILING[1]


@pytest.mark.parametrize(
    ("mode", "passing_has_stdout", "failing_has_stdout", "full_prompts"),
    [("all", True, True, True), ("none", False, False, False)],
)
def test_all_keeps_every_transcript_and_whole_prompts_and_none_keeps_none(
    recall_suite, mode, passing_has_stdout, failing_has_stdout, full_prompts
):
    two_cases(recall_suite)

    recall_suite.run(f"--recall-transcripts={mode}").assert_outcomes(passed=1, failed=1)

    records = recall_suite.records()
    assert all(("stdout" in step) is passing_has_stdout for step in records["passes"]["steps"])
    assert all(("stdout" in step) is failing_has_stdout for step in records["fails"]["steps"])
    assert (records["passes"]["steps"][0].get("prompt") == PASSING[0]) is full_prompts


def test_the_ini_twin_sets_it_and_a_bad_value_is_one_usage_line(recall_suite, monkeypatch):
    two_cases(recall_suite)
    recall_suite.pytester.makeini("[pytest]\nrecall_transcripts = none\n")
    monkeypatch.delenv("PYTEST_ADDOPTS")

    recall_suite.run().assert_outcomes(passed=1, failed=1)
    assert all("stdout" not in step for record in recall_suite.records().values() for step in record["steps"])

    bad = recall_suite.run("--recall-transcripts=some")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--recall-transcripts*some*"])


def test_a_reference_reads_as_head_then_tail():
    reference = prompt_reference("a" * 400 + "b" * 400)
    assert prompt_text(reference).startswith("a" * PROMPT_EDGE_CHARS)
    assert prompt_text(reference).endswith("b" * PROMPT_EDGE_CHARS)
    assert prompt_text(prompt_reference("short")) == "short"


class Lazy(Sequence[Any]):
    """A sequence that is not a list, as the report's streamed case list is."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: Any) -> Any:
        return self.items[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)


@pytest.mark.parametrize("cases", [[], [{"id": "a", "steps": [{"n": 1, "t": "x\ny"}], "e": {}}, {"id": "é", "s": []}]])
def test_a_streamed_report_is_json_dump_with_one_case_a_line(cases):
    document = {"schema_version": 1, "by_category": {"x": 0.5}, "cases": cases, "task_grader": {"a": [1]}}
    streamed, listed = io.StringIO(), io.StringIO()

    dump_streaming({**document, "cases": Lazy(cases)}, streamed)
    dump_streaming(document, listed, line_each="cases")

    assert json.loads(streamed.getvalue()) == document
    assert streamed.getvalue() == listed.getvalue()
    lines = streamed.getvalue().splitlines()
    if cases:
        start = lines.index('  "cases": [') + 1
        assert [json.loads(line.strip().rstrip(",")) for line in lines[start : start + len(cases)]] == cases
