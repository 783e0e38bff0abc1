"""The traps a new user falls into in the first hour, each turned into one clear line or a right verdict."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from report_docs import run_report

from pytest_recall.cases.answer_forms import BUILTIN_KINDS
from pytest_recall.cases.model import CaseError, load_case_dir
from pytest_recall.plugin.checks import resolve_command_paths
from pytest_recall.reporting.merge import case_scalars
from pytest_recall.reporting.summary import format_summary
from pytest_recall.suites.suite_file import family_cases

ANSWER = "12345.67"


def write_case(folder: Path, answer: Any, kind: str = "money", **extra: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "step1.txt").write_text("remember", encoding="utf-8")
    (folder / "step2.txt").write_text("recall", encoding="utf-8")
    expected = {"id": folder.name, "category": "c", "answer": answer, "answer_kind": kind, **extra}
    (folder / "answer.json").write_text(json.dumps(expected), encoding="utf-8")
    return folder


def load(folder: Path) -> Any:
    return load_case_dir(folder, suite="s", source=f"s/{folder.name}", known_kinds=BUILTIN_KINDS)


@pytest.mark.parametrize(
    ("answer", "kind", "message"),
    [
        ("12345.67", "money", None),
        ("0.00", "money", None),
        ("12345", "money", 'a money answer must be a JSON string with two decimals and no grouping, like "12345.00"*'),
        (12345.00, "money", "*not 12345.0"),
        (None, "money", "*'answer' is null, so the case could never pass*"),
        ("12,345.00", "money", '*not "12,345.00"'),
        ("$12345.00", "money", "*like*"),
        ("AR-2026-0042", "voucher", None),
        ("ar-2026-0042", "voucher", 'a voucher answer must be a JSON string like "AR-2026-0042", not "ar-2026-0042"'),
        (42, "voucher", "*not 42"),
        ({"value": "x", "evidence": ["E1-1"]}, "evidence_json", None),
        ({"value": None, "evidence": []}, "evidence_json", None),
        ("x", "evidence_json", 'an evidence_json answer must be an object like {"value": *'),
        ({"value": 3, "evidence": []}, "evidence_json", "*its value is 3"),
        ({"value": "x"}, "evidence_json", "*it has key(s) value"),
        ({"value": "x", "evidence": ["a", "a"]}, "evidence_json", "*names an event twice"),
    ],
)
def test_answer_json_is_checked_per_kind_at_collection(
    tmp_path: Path, answer: Any, kind: str, message: str | None
) -> None:
    folder = write_case(tmp_path / "case", answer, kind)
    if message is None:
        assert load(folder).expected["answer"] == answer
        return
    with pytest.raises(CaseError) as caught:
        load(folder)
    assert caught.match(r"^s/case: answer\.json: ")
    from fnmatch import fnmatch

    assert fnmatch(str(caught.value).split("answer.json: ", 1)[1], message), str(caught.value)


def test_unknown_answer_json_keys_are_named(tmp_path: Path) -> None:
    folder = write_case(tmp_path / "case", ANSWER, anwser="1")
    with pytest.raises(
        CaseError, match=r"unknown key\(s\) anwser; allowed: id, category, answer, answer_kind, evidence_text"
    ):
        load(folder)


def test_a_misspelt_answer_json_is_named(tmp_path: Path) -> None:
    folder = write_case(tmp_path / "case", ANSWER)
    (folder / "answer.json").rename(folder / "anwser.json")
    with pytest.raises(CaseError, match=r"answer\.json is missing \(found anwser\.json: rename it answer\.json\)"):
        load(folder)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"family": "ledger", "seed": 1, "cont": 5},
            "unknown suite.toml key(s) cont; allowed: family, seed, count,*",
        ),
        ({"family": "audit", "split": "eval", "size": 2, "seed": 1}, "unknown suite.toml key(s) seed; allowed: *"),
    ],
)
def test_unknown_suite_toml_keys_are_named(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(CaseError) as caught:
        list(family_cases(settings, suite="s", source="s/suite.toml"))
    from fnmatch import fnmatch

    assert fnmatch(str(caught.value), f"s/suite.toml: {message}"), str(caught.value)


def test_relative_files_anywhere_in_the_command_are_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_agent.py").write_text("", encoding="utf-8")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "a.json").write_text("{}", encoding="utf-8")
    argv, resolved = resolve_command_paths(
        ("python", "-u", "my_agent.py", "--config=conf/a.json", "--model", "small", "bin/agent")
    )
    here = os.getcwd()
    assert argv == (
        "python",
        "-u",
        f"{here}/my_agent.py",
        f"--config={here}/conf/a.json",
        "--model",
        "small",
        "bin/agent",  # names nothing that exists: left alone
    )
    assert [given for given, _ in resolved] == ["my_agent.py", "conf/a.json"]
    assert resolve_command_paths(("agents/x.py",))[0] == (f"{here}/agents/x.py",)


def test_the_readme_recipe_with_a_relative_script_runs_and_says_what_it_resolved(recall_suite: Any) -> None:
    recall_suite.add("good", ["remember 12345.67", "recall"], ANSWER)
    scripted = Path(recall_suite.agent("scripted").split()[-1].strip("'"))
    (recall_suite.pytester.path / "my_agent.py").write_text(scripted.read_text(encoding="utf-8"), encoding="utf-8")
    result = recall_suite.run(command=f"{sys.executable} my_agent.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["recall: --recall-cmd names 'my_agent.py'; sessions run elsewhere, so it runs as */my_agent.py"]
    )


def test_a_missing_script_in_the_command_is_one_usage_line(recall_suite: Any) -> None:
    recall_suite.add("good", ["remember 12345.67", "recall"], ANSWER)
    result = recall_suite.run(command=f"{sys.executable} no_such_agent.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0].startswith("ERROR: --recall-cmd: 'no_such_agent.py' does not exist in ")


def test_step_files_without_answer_json_are_a_collection_error(recall_suite: Any) -> None:
    recall_suite.add("good", ["remember 12345.67", "recall"], ANSWER)
    typo = recall_suite.add("typo", ["remember 12345.67", "recall"], ANSWER)
    (typo / "answer.json").rename(typo / "anwser.json")
    result = recall_suite.run()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*malformed case: cases/suite/typo: answer.json is missing (found anwser.json*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_the_score_gate_is_never_green_when_a_case_failed_to_collect(recall_suite: Any) -> None:
    recall_suite.add("good", ["remember 12345.67", "recall"], ANSWER)
    recall_suite.add("bad", ["remember 12345", "recall"], "12345")
    result = recall_suite.run("--recall-gate=score")
    result.assert_outcomes(passed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["recall: FAILED  score 1.000 *1/1 case passed, 1 case failed to collect"])
    assert recall_suite.report()["n_collection_errors"] == 1


def test_an_interrupted_run_says_how_far_it_got_and_how_to_resume(recall_suite: Any) -> None:
    for name in ("a", "b", "c"):
        recall_suite.add(name, ["remember 12345.67", "recall"], ANSWER)
    recall_suite.pytester.makeconftest(
        """
        def pytest_runtest_teardown(item):
            if item.nodeid.startswith("cases/suite/a"):
                raise KeyboardInterrupt
        """
    )
    result = recall_suite.run()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "recall: INTERRUPTED  1 of 3 cases ran; no verdict (score so far 1.000)",
            f"  to resume, run the same command again with --recall-resume={recall_suite.report_path}",
        ]
    )
    assert "PASSED" not in result.stdout.str().split("pytest-recall")[-1]


def test_a_report_outside_the_working_tree_says_what_it_creates_and_never_starts_at_the_root(
    recall_suite: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    recall_suite.add("good", ["remember 12345.67", "recall"], ANSWER)
    outside = tmp_path_factory.mktemp("elsewhere") / "no" / "such" / "r.json"
    result = recall_suite.run(f"--recall-report={outside}", report=False)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"recall: --recall-report: creating {outside.parent} (outside *) for r.json"])
    assert outside.is_file()
    at_root = "/recall-no-such-top-folder/dir/r.json"
    refused = recall_suite.run(f"--recall-report={at_root}", report=False)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert refused.stderr.lines[0].startswith(
        "ERROR: --recall-report: /recall-no-such-top-folder/dir does not exist, and creating it would start a folder"
    )
    assert not Path("/recall-no-such-top-folder").exists()
    inside = recall_suite.pytester.path / "out" / "deep" / "r.json"
    quiet = recall_suite.run(f"--recall-report={inside}", report=False)
    quiet.assert_outcomes(passed=1)
    assert inside.is_file() and "creating" not in quiet.stdout.str()


def test_one_case_is_not_one_cases() -> None:
    report = {
        "passed": True,
        "score": 1.0,
        "threshold": 0.5,
        "n_passed": 1,
        "n_total": 1,
        "latency_ms_median": 0.0,
        "latency_ms_p95": 0.0,
        "latency_ms_total": 0.0,
        "confidence": {"level": 0.95, "low": 0.2, "high": 1.0, "method": "wilson", "n": 1},
    }
    report = run_report(report)
    text = "\n".join(format_summary(report, case_scalars(report)))
    assert "1/1 case passed" in text
    assert "(wilson, 1 case)" in text
    assert " 1 cases" not in text


def test_the_command_tells_its_version(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_recall import __version__
    from pytest_recall.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"pytest-recall {__version__}\n"


def test_the_license_file_is_the_mit_license_pyproject_names() -> None:
    root = Path(__file__).resolve().parent.parent
    assert 'license = "MIT"' in (root / "pyproject.toml").read_text(encoding="utf-8")
    assert (root / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")


def test_a_long_run_in_a_log_gets_a_progress_line_every_tenth_and_none_under_q(recall_suite: Any) -> None:
    for number in range(13):
        last = "recall" if number % 4 else "say 99999.99"
        recall_suite.add(f"case_{number:02d}", ["remember 12345.67", last], ANSWER)
    # 13 cases x 4 epochs: 52 runs, a line every 10 of them.
    result = recall_suite.run("--recall-epochs=4", "--recall-concurrency=8")
    result.assert_outcomes(passed=36, failed=16)
    progress = [line for line in result.stdout.lines if line.startswith("recall progress:")]
    assert [line.split(" runs done")[0] for line in progress] == [
        f"recall progress: {n}/52" for n in (10, 20, 30, 40, 50)
    ]
    assert all(", score so far " in line and ", ETA " in line and " failed, " in line for line in progress)
    quiet = recall_suite.run("--recall-epochs=4", "--recall-concurrency=8", "-q")
    assert "recall progress:" not in quiet.stdout.str()
    short = recall_suite.run()
    assert "recall progress:" not in short.stdout.str(), "a run of 13 runs needs no progress line"


def test_a_failure_is_compact_by_default_and_whole_under_v(recall_suite: Any) -> None:
    noisy = "\n".join(f"say line {n}" for n in range(1, 10)) + "\nsay 99999.99"
    recall_suite.add("case_01", ["say first step output", noisy], ANSWER)
    compact = recall_suite.run()
    compact.assert_outcomes(failed=1)
    compact.stdout.fnmatch_lines(
        [
            "case_01 scored 0.0: final line gives a different value",
            "  expected: '12345.67'",
            "  reported: '99999.99'",
            "  category: recall",
            "  step 2: exit 0 after *",
            "    stdout (last 3 lines):",
            "      | line 8",
            "      | line 9",
            "      | 99999.99",
            "  (-v shows every step's output; the JSON report and --recall-html keep the transcripts)",
        ]
    )
    assert "first step output" not in compact.stdout.str()
    assert "first step output" in recall_suite.run("-v").stdout.str()
