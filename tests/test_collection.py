"""Collecting case folders: malformed cases, order, selection, configuration and usage errors."""

from __future__ import annotations

import json
import re

import pytest

GOOD_STEPS = ["remember 12345.67\nsay noted", "recall"]

# name -> (how the folder is broken, the one line the error must read after "malformed case: <folder>: ")
MALFORMED = {
    "no_steps": ({"step1.txt": None, "step2.txt": None}, "no steps; a case needs step1.txt and step2.txt at least"),
    "one_step": ({"step2.txt": None}, "only one step; a case needs step1.txt and step2.txt at least"),
    "gap_in_numbering": (
        {"step2.txt": None, "step3.txt": "recall"},
        "step2.txt is missing; steps must be numbered 1, 2, 3 ... without gaps",
    ),
    "bad_json": ({"answer.json": '{"id": "bad_json",'}, "answer.json is not valid JSON (*)"),
    "json_not_an_object": ({"answer.json": "[1, 2]"}, "answer.json must hold a JSON object"),
    "missing_key": (
        {"answer.json": json.dumps({"id": "missing_key", "category": "c", "answer": "12345.67"})},
        "answer.json lacks key(s) answer_kind",
    ),
    "unknown_answer_kind": (
        {"answer.json": json.dumps({"id": "u", "category": "c", "answer": "1", "answer_kind": "haiku"})},
        "answer.json: unknown answer_kind 'haiku'; use one of: *money*voucher*",
    ),
    "bad_toml": ({"case.toml": "timeout = \n"}, "case.toml is not valid TOML (*)"),
    "unknown_toml_key": ({"case.toml": "timout = 3\n"}, "unknown case.toml key(s) timout; allowed: *timeout*"),
    "timeout_not_a_number": ({"case.toml": 'timeout = "soon"\n'}, "timeout must be a number of seconds, not 'soon'"),
    "timeout_zero": ({"case.toml": "timeout = 0\n"}, "timeout must be a positive number of seconds, not 0"),
    "timeout_negative": ({"case.toml": "timeout = -5\n"}, "timeout must be a positive number of seconds, not -5"),
    "timeout_infinite": ({"case.toml": "timeout = inf\n"}, "timeout must be a positive number of seconds, not inf"),
    "timeout_boolean": ({"case.toml": "timeout = true\n"}, "timeout must be a number of seconds, not True"),
}


def error_sections(output: str) -> dict[str, list[str]]:
    """The lines under each ``ERROR collecting <path>`` heading, up to the next heading."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        heading = re.match(r"^_+ ERROR collecting (\S+) _+$", line)
        if heading:
            current = sections.setdefault(heading.group(1), [])
        elif re.match(r"^[_=]{3,}", line):
            current = None
        elif current is not None:
            current.append(line)
    return sections


def test_each_malformed_case_is_a_one_line_collection_error_and_the_rest_still_run(recall_suite):
    recall_suite.add("case_00_good", GOOD_STEPS)
    for name, (changes, _) in MALFORMED.items():
        folder = recall_suite.add(name, GOOD_STEPS)
        for file_name, content in changes.items():
            if content is None:
                (folder / file_name).unlink()
            else:
                (folder / file_name).write_text(content)

    result = recall_suite.run("--recall-timeout=5")

    result.assert_outcomes(passed=1, errors=len(MALFORMED))
    assert "Traceback" not in result.stdout.str()
    sections = error_sections(result.stdout.str())
    for name, (_, message) in MALFORMED.items():
        lines = sections.get(f"cases/suite/{name}")
        assert lines is not None, f"{name}: no collection error"
        assert len(lines) == 1, f"{name}: the error is {len(lines)} lines: {lines}"
        pattern = f"malformed case: cases/suite/{name}: {message}"
        pytest.LineMatcher(lines).fnmatch_lines([pattern])
    assert recall_suite.records()["case_00_good"]["score"] == 1.0


def test_cases_are_collected_in_sorted_order_every_time(recall_suite):
    names = ["case_10", "b_case", "case_02", "A_case", "case_1"]
    for name in names:
        recall_suite.add(name, GOOD_STEPS)

    listings = [
        [line for line in recall_suite.run("--co", "-q", report=False).stdout.lines if "::recall" in line]
        for _ in range(2)
    ]

    assert listings[0] == [f"cases/suite/{name}::recall" for name in sorted(names)]
    assert listings[1] == listings[0]


@pytest.mark.parametrize(
    ("expression", "selected"),
    [
        ("case_03", ["case_03"]),
        ("closing_balance", ["case_01", "case_02"]),
        ("voucher and not nth", ["case_03", "case_04"]),
    ],
)
def test_k_selects_cases_by_id_and_by_category(recall_suite, expression, selected):
    recall_suite.copy_seed_suite()

    result = recall_suite.run("--co", "-q", "-k", expression, with_command=False, report=False)

    collected = [line for line in result.stdout.lines if "::recall" in line]
    assert collected == [f"cases/session-memory-recall/{name}::recall" for name in selected]


def test_last_failed_reruns_only_the_failed_cases(recall_suite):
    recall_suite.add("case_01_remembers", GOOD_STEPS)
    recall_suite.add("case_02_forgets", ["say noted", "recall"])
    recall_suite.add("case_03_remembers", GOOD_STEPS)
    recall_suite.run("--recall-timeout=5", cache=True).assert_outcomes(passed=2, failed=1)

    result = recall_suite.run("--recall-timeout=5", "--lf", cache=True)

    result.assert_outcomes(failed=1, deselected=2)
    assert [record["id"] for record in recall_suite.report()["cases"]] == ["case_02_forgets"]


def test_bare_pytest_runs_the_testpaths_with_the_ini_command(recall_suite):
    recall_suite.add("case_01", GOOD_STEPS)
    recall_suite.pytester.makepyprojecttoml(
        f"""
        [tool.pytest.ini_options]
        testpaths = ["cases"]
        recall_cmd = {json.dumps(recall_suite.agent("scripted"))}
        recall_timeout = "5"
        """
    )

    result = recall_suite.run(with_command=False, report=False)

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["cases/suite/case_01 .*", "recall: PASSED  score 1.000*"])


def test_the_flag_wins_over_the_ini_command(recall_suite):
    recall_suite.add("case_01", GOOD_STEPS)
    recall_suite.pytester.makeini(f"[pytest]\nrecall_cmd = {recall_suite.module('pytest_recall.agents.amnesiac')}\n")

    result = recall_suite.run("cases", "--recall-timeout=5")

    result.assert_outcomes(passed=1)


def test_cases_without_a_command_are_one_usage_error(recall_suite):
    recall_suite.add("case_01", GOOD_STEPS)

    result = recall_suite.run("cases", with_command=False)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: these cases need an agent to run: pass --recall-cmd=*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not recall_suite.report_path.exists()


def test_listing_cases_needs_no_command(recall_suite):
    recall_suite.add("case_01", GOOD_STEPS)

    result = recall_suite.run("cases", "--co", "-q", with_command=False)

    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["cases/suite/case_01::recall", "1 test collected*"])


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("no-such-agent-9f2c --fast", "ERROR: --recall-cmd: 'no-such-agent-9f2c' was not found on PATH; *"),
        ("/etc", "ERROR: --recall-cmd: '/etc' is not an executable file; *"),
        ("'unbalanced", "ERROR: --recall-cmd cannot be split like a shell command line: *"),
        ("   ", "ERROR: --recall-cmd is empty: *"),
    ],
)
def test_a_command_that_cannot_run_is_one_usage_error(recall_suite, command, message):
    recall_suite.add("case_01", GOOD_STEPS)

    result = recall_suite.run("cases", command=command)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert len([line for line in result.stderr.lines if line.strip()]) == 1
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
