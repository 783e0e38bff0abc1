"""Repeats and the no-memory control, end to end, with agents whose behaviour is known in advance."""

from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.plugin.junit import parse_figures_block
from pytest_recall.reporting.merge import merge_reports
from pytest_recall.reporting.run_report import RunReport

REMEMBERS = ("remember 12345.67", "recall")


def add_odd_run_cases(recall_suite: Any, names: tuple[str, ...]) -> None:
    for name in names:
        recall_suite.add(name, [f"case {name} remember 12345.67", f"case {name} recall"])


@pytest.fixture
def counter_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "counters"
    folder.mkdir()
    monkeypatch.setenv("RECALL_TEST_COUNTER_DIR", str(folder))
    return folder


def test_each_epoch_is_its_own_item_and_starts_with_an_empty_scope(recall_suite: Any) -> None:
    recall_suite.add("alpha", ["recall\nremember 12345.67", "recall"])
    result = recall_suite.run("--recall-epochs=3", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([f"*suite/alpha::recall[[]epoch{n}[]] PASSED*" for n in (1, 2, 3)])
    report = recall_suite.report()
    assert [(r["epoch"], r["steps"][0]["stdout"].strip()) for r in report["cases"]] == [
        (1, "UNKNOWN"),
        (2, "UNKNOWN"),
        (3, "UNKNOWN"),
    ]
    assert report["epochs"] == 3
    assert report["per_case"][0] | {"scores": None} == {
        "id": "alpha",
        "suite": "suite",
        "category": "recall",
        "k": 3,
        "mean": 1.0,
        "pass_at_k": True,
        "pass_all_k": True,
        "spread": 0.0,
        "scores": None,
    }


@pytest.mark.parametrize("workers", ["0", "2"])
def test_an_agent_that_remembers_on_odd_runs_is_solved_at_k_but_not_every_time(
    recall_suite: Any, counter_dir: Path, workers: str
) -> None:
    add_odd_run_cases(recall_suite, ("alpha", "beta"))
    result = recall_suite.run("--recall-epochs=4", "-n", workers, "-v", command=recall_suite.agent("odd_runs"))
    result.assert_outcomes(passed=4, failed=4)
    report = recall_suite.report()
    assert (report["score"], report["pass_at_k"], report["pass_all_k"], report["epochs"]) == (0.5, 1.0, 0.0, 4)
    for case in report["per_case"]:
        assert (case["k"], case["mean"], case["pass_at_k"], case["pass_all_k"], case["spread"]) == (
            4,
            0.5,
            True,
            False,
            1.0,
        )
        assert sorted(case["scores"]) == [0.0, 0.0, 1.0, 1.0]
    assert report["confidence"]["method"] == "bootstrap"
    assert report["confidence"]["n"] == 2
    assert {path.name: path.read_text() for path in counter_dir.iterdir()} == {"alpha.count": "4", "beta.count": "4"}
    result.stdout.fnmatch_lines(["*epochs 4: pass@4 1.000 (solved in any epoch), pass^4 0.000 (solved in every epoch)"])
    if workers == "2":
        ran_on = set(re.findall(r"\[(gw\d)\] .*suite/alpha::recall\[epoch\d\]", result.stdout.str()))
        assert ran_on == {"gw0", "gw1"}, "xdist should spread one case's epochs like any other items"


def test_epochs_and_control_give_the_same_report_with_and_without_xdist(
    recall_suite: Any, without_timing: Callable[[Any], Any]
) -> None:
    for name in ("alpha", "beta", "gamma"):
        recall_suite.add(name, REMEMBERS, category=f"kind_{name}")
    html = recall_suite.pytester.path / "out" / "report.html"
    reports = []
    for workers in ("0", "2"):
        result = recall_suite.run("--recall-epochs=2", "--recall-control", f"--recall-html={html}", "-n", workers)
        result.assert_outcomes(passed=12)
        reports.append(without_timing(recall_suite.report()))
        page = html.read_text(encoding="utf-8")
        assert "Memory lift" in page and "Consistency across epochs" in page
        assert sorted(p.name for p in html.parent.iterdir()) == ["report.html"], "written atomically, no leftovers"
    assert reports[0] == reports[1]


def control_run(recall_suite: Any, *args: str, command: str | None = None) -> pytest.RunResult:
    junit = recall_suite.pytester.path / "junit.xml"
    return recall_suite.run("--recall-control", f"--junitxml={junit}", *args, command=command)


def test_control_items_pass_at_any_score_and_never_count_toward_the_score(recall_suite: Any) -> None:
    names = [f"case_{i}" for i in range(6)]
    for name in names:
        recall_suite.add(name, REMEMBERS)
    result = control_run(recall_suite, "-v")
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(["*suite/case_0::control PASSED*"])
    report = recall_suite.report()
    assert (report["score"], report["n_total"], report["n_passed"]) == (1.0, 6, 6)
    controls = [r for r in report["cases"] if r["control"]]
    assert [(r["id"], r["score"], [s["step"] for s in r["steps"]]) for r in controls] == [(n, 0.0, [2]) for n in names]
    assert all(r["steps"][0]["stdout"].strip() == "UNKNOWN" for r in controls)
    control = report["control"]
    assert (control["score"], control["n"], control["lift"], control["lift_significant"]) == (0.0, 6, 1.0, True)
    assert control["lift_test"]["method"] == "mcnemar"
    assert control["lift_test"]["p_value"] == pytest.approx(2 / 2**6, abs=1e-4)
    result.stdout.fnmatch_lines(
        [
            "recall: PASSED  score 1.000  (threshold 0.5)  6/6 cases passed",
            "  95% interval [[]0.610, 1.000[]] (wilson, 6 cases)",
            "  control (no memory): score 0.000; memory lift +1.000 [[]+1.000, +1.000[]], p 0.031",
        ]
    )
    testcases = ET.parse(recall_suite.pytester.path / "junit.xml").getroot().iter("testcase")
    by_name = {case.get("name"): case for case in testcases if case.get("classname", "").endswith("case_0")}
    assert set(by_name) == {"recall", "control"}
    properties = {name: property_values(case) for name, case in by_name.items()}
    assert (properties["control"]["recall_control"], properties["control"]["recall_score"]) == ("true", "0.0")
    assert (properties["recall"]["recall_control"], properties["recall"]["recall_score"]) == ("false", "1.0")
    assert by_name["control"].find("failure") is None


def property_values(testcase: ET.Element) -> dict[str, Any]:
    """A case's figures: under the default xunit2 family they are a block in its system-out."""
    return parse_figures_block(testcase.findtext("system-out") or "")


def test_control_items_are_selected_by_the_control_keyword(recall_suite: Any) -> None:
    recall_suite.add("alpha", REMEMBERS)
    selected = recall_suite.run("--recall-control", "--recall-epochs=2", "--collect-only", "-q", "-k", "control")
    selected.stdout.fnmatch_lines(
        ["*alpha::control[[]epoch1[]]", "*alpha::control[[]epoch2[]]", "*2/4 tests collected*"]
    )
    left_out = recall_suite.run("--recall-control", "--collect-only", "-q", "-k", "not control")
    left_out.stdout.fnmatch_lines(["*alpha::recall", "*1/2 tests collected*"])


def test_an_agent_that_knows_the_answer_without_memory_shows_no_lift(recall_suite: Any) -> None:
    for i in range(6):
        recall_suite.add(f"case_{i}", ["Remember 12345.67.", "What was the amount?"])
    result = control_run(recall_suite, command=recall_suite.agent("guesser"))
    result.assert_outcomes(passed=12)
    control = recall_suite.report()["control"]
    assert (recall_suite.report()["score"], control["score"]) == (1.0, 1.0)
    assert (control["lift"], control["lift_low"], control["lift_high"], control["lift_significant"]) == (
        0.0,
        0.0,
        0.0,
        False,
    )
    result.stdout.fnmatch_lines(
        [
            "  control (no memory): score 1.000; memory lift +0.000 [[]+0.000, +0.000[]]"
            "  NOT SIGNIFICANT: the interval includes 0"
        ]
    )


def test_epochs_and_control_come_from_the_ini_file(recall_suite: Any) -> None:
    recall_suite.pytester.makeini("[pytest]\nrecall_epochs = 2\nrecall_control = true\n")
    recall_suite.add("alpha", REMEMBERS)
    result = recall_suite.run("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        ["*alpha::recall[[]epoch1[]]", "*alpha::recall[[]epoch2[]]", "*alpha::control[[]epoch1[]]", "*4 tests*"]
    )


def test_an_epoch_count_below_one_is_a_one_line_usage_error(recall_suite: Any) -> None:
    recall_suite.add("alpha", REMEMBERS)
    result = recall_suite.run("--recall-epochs=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --recall-epochs must be a whole number of at least 1, not '0'"])


def test_merging_a_report_gives_back_the_same_keys_and_statistics(recall_suite: Any) -> None:
    for name in ("alpha", "beta", "gamma"):
        recall_suite.add(name, REMEMBERS, category=f"kind_{name}")
    recall_suite.run("--recall-epochs=2", "--recall-control").assert_outcomes(passed=12)
    report = recall_suite.report()
    halves = [
        RunReport.from_json({**report, "cases": [r for r in report["cases"] if r["id"] == "alpha"]}),
        RunReport.from_json({**report, "cases": [r for r in report["cases"] if r["id"] != "alpha"]}),
    ]
    merged = merge_reports(halves).as_json()
    assert list(merged) == list(report)
    assert merged == report


def test_a_control_ini_value_that_is_no_boolean_is_a_one_line_usage_error(recall_suite: Any) -> None:
    recall_suite.pytester.makeini("[pytest]\nrecall_control = maybe\n")
    recall_suite.add("alpha", REMEMBERS)
    result = recall_suite.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: recall_control in your pytest configuration must be true or false: *'maybe'"])


def test_epochs_from_an_earlier_report_repeat_only_the_cases_it_found_unstable(
    recall_suite: Any, counter_dir: Path
) -> None:
    """alpha remembers on odd runs (unstable across two epochs), beta never does (stable): with the baseline's
    choice, beta runs once and alpha three times, and the score is the mean of each case's own mean."""
    add_odd_run_cases(recall_suite, ("alpha",))
    recall_suite.add("beta", ["case beta hello", "case beta recall"])
    odd_runs = recall_suite.agent("odd_runs")
    recall_suite.run("--recall-epochs=2", command=odd_runs).assert_outcomes(passed=1, failed=3)
    # The baseline is the report this run writes over: the protocol names the bytes that chose.
    baseline = recall_suite.report_path
    baseline_sha256 = hashlib.sha256(baseline.read_bytes()).hexdigest()

    result = recall_suite.run("--recall-epochs=3", f"--recall-epochs-from={baseline}", "-v", command=odd_runs)

    result.stdout.fnmatch_lines(["*suite/beta::recall[[]epoch1[]] FAILED*"])
    result.stdout.no_fnmatch_line("*suite/beta::recall[[]epoch2[]]*")
    result.assert_outcomes(passed=2, failed=2)
    report = recall_suite.report()
    runs = {case["id"]: case["k"] for case in report["per_case"]}
    assert runs == {"alpha": 3, "beta": 1} and report["epochs"] == 3
    assert report["score"] == pytest.approx((2 / 3 + 0) / 2, abs=1e-3)
    assert (counter_dir / "alpha.count").read_text() == "5"
    chosen = report["protocol"]["run"]["epochs_from"]
    assert chosen == {"report_sha256": baseline_sha256, "settled": 1}


def unstable_alpha_stable_beta(recall_suite: Any) -> tuple[str, Path]:
    """alpha remembers on odd runs, beta never: a two-epoch baseline finds alpha unstable and beta settled. The
    agent's command, and the baseline report kept apart from the runs that follow."""
    add_odd_run_cases(recall_suite, ("alpha",))
    recall_suite.add("beta", ["case beta hello", "case beta recall"])
    odd_runs = recall_suite.agent("odd_runs")
    recall_suite.run("--recall-epochs=2", command=odd_runs).assert_outcomes(passed=1, failed=3)
    baseline = recall_suite.pytester.path / "baseline.json"
    baseline.write_bytes(recall_suite.report_path.read_bytes())
    return odd_runs, baseline


def test_with_epochs_from_the_stop_gate_and_pass_at_k_weigh_cases_as_the_score_does(
    recall_suite: Any, counter_dir: Path
) -> None:
    """Half the cases repeat: the gate feeds one mean per case, so its estimate is the score, and pass@k is over
    the case that ran k times, the settled one said apart."""
    odd_runs, baseline = unstable_alpha_stable_beta(recall_suite)
    # 0.34 against a score of 1/3 over two cases: undecided until both are in.
    stop = ("--recall-stop=decided", "--recall-gate=score", "--recall-threshold=0.34")

    result = recall_suite.run("--recall-epochs=3", f"--recall-epochs-from={baseline}", *stop, command=odd_runs)

    report = recall_suite.report()
    assert report["score"] == pytest.approx(1 / 3, abs=1e-3)
    assert report["stop"] | {"estimate": None} == {**report["stop"], "n_cases": 2, "n_fed": 2, "estimate": None}
    assert report["stop"]["estimate"] == pytest.approx(report["score"], abs=1e-3)
    assert report["pass_at_k"] == 1.0 and report["pass_all_k"] == 0.0
    result.stdout.fnmatch_lines(
        [
            "*epochs 3: pass@3 1.000 (solved in any epoch), pass^3 0.000 (solved in every epoch) "
            "of the 1 case scored 3 times; 1 ran fewer (1 settled by --recall-epochs-from)"
        ]
    )


def test_ci_width_gives_the_unstable_case_the_runs_its_baseline_says_reach_the_width(
    recall_suite: Any, counter_dir: Path
) -> None:
    """alpha's two baseline runs disagreed, beta's agreed: for a half-width of 0.3 alpha needs 3 runs under the
    cap of 4 (z * sqrt(0.25 / k) / 2 <= 0.3), beta one; 0.2 is out of reach at the cap and refused before any
    session starts."""
    odd_runs, baseline = unstable_alpha_stable_beta(recall_suite)
    planned = ("--recall-epochs=4", f"--recall-epochs-from={baseline}")

    refused = recall_suite.run(*planned, "--recall-ci-width=0.2", command=odd_runs)
    refused.stderr.fnmatch_lines(
        [
            "ERROR: --recall-ci-width=0.2 with --recall-epochs-from=*: "
            "a half-width of 0.2 is out of reach: * predicts 0.245;*"
        ]
    )
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert (counter_dir / "alpha.count").read_text() == "2"

    recall_suite.run(*planned, "--recall-ci-width=0.3", command=odd_runs)
    report = recall_suite.report()
    assert {case["id"]: case["k"] for case in report["per_case"]} == {"alpha": 3, "beta": 1}
    chosen = report["protocol"]["run"]["epochs_from"]
    assert chosen | {"report_sha256": None} == {
        "report_sha256": None,
        "settled": 1,
        "ci_width": 0.3,
        "planned_runs": 4,
        "predicted_half_width": 0.2829,
    }


def test_ci_width_without_a_baseline_is_refused_in_one_line(recall_suite: Any) -> None:
    recall_suite.add("alpha", list(REMEMBERS))
    result = recall_suite.run("--recall-epochs=3", "--recall-ci-width=0.1")
    result.stderr.fnmatch_lines(
        ["ERROR: --recall-ci-width plans repeats from an earlier run: give --recall-epochs-from=*"]
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--recall-epochs=3", "--recall-epochs-from=missing.json"),
            "*--recall-epochs-from: cannot read *missing.json: No such file or directory",
        ),
        (
            ("--recall-epochs-from=missing.json",),
            "*--recall-epochs-from chooses which cases repeat: give --recall-epochs=N*",
        ),
    ],
    ids=["missing-report", "one-epoch"],
)
def test_epochs_from_refuses_what_it_cannot_use_in_one_line(
    recall_suite: Any, args: tuple[str, ...], message: str
) -> None:
    recall_suite.add("alpha", list(REMEMBERS))
    result = recall_suite.run(*args)
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
