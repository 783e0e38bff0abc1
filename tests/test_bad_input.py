"""Broken input from the user: one clear line each, naming the file and the fix, no traceback;
broken cases spoil only themselves, and the rest of the suite still runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ANSWER = "12345.67"


def breakers() -> list[Any]:
    """(how to break a case folder, the line that must say so)."""

    def write(name: str, text: str) -> Any:
        return lambda folder: (folder / name).write_text(text, encoding="utf-8")

    def remove(name: str) -> Any:
        return lambda folder: (folder / name).unlink()

    def make_dir(name: str) -> Any:
        def broken(folder: Path) -> None:
            (folder / name).unlink()
            (folder / name).mkdir()

        return broken

    def answer(**fields: Any) -> Any:
        expected = {"id": "bad", "category": "recall", "answer": ANSWER, "answer_kind": "money", **fields}
        return write("answer.json", json.dumps({k: v for k, v in expected.items() if v is not None}))

    cases = [
        ("one-step", remove("step2.txt"), "only one step; a case needs step1.txt and step2.txt at least"),
        ("three-steps-are-fine", write("step3.txt", f"say {ANSWER}"), None),
        ("step-gap", write("step4.txt", "x"), "step3.txt is missing; steps must be numbered*"),
        ("broken-answer-json", write("answer.json", "{not json"), "answer.json is not valid JSON*"),
        ("answer-json-not-object", write("answer.json", "[1, 2]"), "answer.json must hold a JSON object*"),
        ("answer-json-missing-key", answer(answer_kind=None), "*answer.json lacks key(s) answer_kind*"),
        ("unknown-kind", answer(answer_kind="haiku"), "*unknown answer_kind 'haiku'; use one of: *"),
        ("broken-case-toml", write("case.toml", "timeout = [oops"), "case.toml is not valid TOML*"),
        ("negative-timeout", write("case.toml", "timeout = -5"), "*timeout must be a positive number of seconds*"),
        ("word-timeout", write("case.toml", 'timeout = "soon"'), "*timeout must be a number of seconds, not 'soon'"),
        ("toml-typo", write("case.toml", "tiemout = 5"), "unknown case.toml key(s) tiemout; allowed: *"),
        ("step-is-a-dir", make_dir("step2.txt"), "cannot read step2.txt (Is a directory); make it a readable file"),
        ("nul-in-step", write("step2.txt", "a\0b"), "*step2.txt holds a NUL byte, which no agent can take in argv*"),
        ("step-not-utf8", lambda folder: (folder / "step1.txt").write_bytes(b"\xff\xfe"), "*step1.txt is not UTF-8*"),
    ]
    return [pytest.param(breaker, message, id=name) for name, breaker, message in cases]


@pytest.mark.parametrize(("breaker", "message"), breakers())
def test_a_malformed_case_is_one_line_naming_its_file_and_the_rest_still_runs(
    recall_suite: Any, breaker: Any, message: str | None
) -> None:
    recall_suite.add("good", ["say 1.00", f"say {ANSWER}"], ANSWER)
    breaker(recall_suite.add("bad", ["say 1.00", f"say {ANSWER}"], ANSWER))
    result = recall_suite.run()
    if message is None:
        result.assert_outcomes(passed=2)
        return
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"malformed case: cases/suite/bad*{message}"])
    assert "Traceback" not in result.stdout.str()
    assert recall_suite.records()["good"]["score"] == 1.0


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--recall-timeout=-1", "--recall-timeout must be a positive number of seconds, not '-1'"),
        ("--recall-timeout=soon", "--recall-timeout must be a number of seconds, not 'soon'"),
        ("--recall-grace=0", "--recall-grace must be a positive number of seconds, not '0'"),
        ("--recall-sandbox=docker", "--recall-sandbox must be one of none, bwrap, not 'docker'"),
        ("--recall-sandbox-bind=/no/such/agent", None),  # ignored without a sandbox
        ("--recall-concurrency=0", "--recall-concurrency must be a whole number of at least 1, not '0'"),
    ],
)
def test_a_bad_option_is_one_usage_line(recall_suite: Any, flag: str, message: str | None) -> None:
    recall_suite.add("good", ["say 1.00", f"say {ANSWER}"], ANSWER)
    result = recall_suite.run(flag)
    if message is None:
        result.assert_outcomes(passed=1)
        return
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == f"ERROR: {message}"
    assert "Traceback" not in result.stderr.str()


def test_a_bad_option_in_the_ini_file_is_the_same_usage_line(recall_suite: Any) -> None:
    recall_suite.pytester.makeini("[pytest]\nrecall_sandbox = firejail\n")
    recall_suite.add("good", ["say 1.00", f"say {ANSWER}"], ANSWER)
    result = recall_suite.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == "ERROR: --recall-sandbox must be one of none, bwrap, not 'firejail'"


def test_a_sandbox_bind_that_does_not_exist_is_a_usage_line(recall_suite: Any) -> None:
    recall_suite.add("good", ["say 1.00", f"say {ANSWER}"], ANSWER)
    result = recall_suite.run("--recall-sandbox=bwrap", "--recall-sandbox-bind=/no/such/agent")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        result.stderr.lines[0] == "ERROR: --recall-sandbox-bind: /no/such/agent does not exist; fix the path or drop it"
    )
