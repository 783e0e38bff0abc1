"""--recall-scope=suite: one memory for the whole run, cases in a fixed order, and what it refuses."""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from pytest_recall.cases.model import Case
from pytest_recall.suites import abilities

STATS = re.compile(r"notebook: (\d+) notes, (\d+) ledger accounts")
# Hundreds of cases, one after another, outlast the fixture's default safety net.
LONG_RUN_TIMEOUT_S = 1200.0


def accounts_of(cases: Iterable[Case]) -> set[str]:
    """Every account code the cases show, for checking what a shared memory holds."""
    pattern = re.compile(r"^Account (\d{4}-\d{3}) ·", re.MULTILINE)
    return {code for case in cases for step in case.steps[:-1] for code in pattern.findall(step.prompt)}


def notebook_cmd() -> str:
    return str(Path(sys.executable).parent / "recall-notebook")


def abilities_suite(recall_suite, count: int, seed: int = 31) -> list:
    folder = recall_suite.root / "abilities"
    folder.mkdir(parents=True)
    (folder / "suite.toml").write_text(f'family = "abilities"\nseed = {seed}\ncount = {count}\n', encoding="utf-8")
    return abilities.generate(seed, count, suite="abilities")


def held_accounts(record) -> int:
    found = STATS.search(record["steps"][-1]["stderr"])
    assert found is not None, record["steps"][-1]["stderr"]
    return int(found.group(2))


def run_order(records) -> list:
    """The records in the order a suite-scoped run ran them: by the seeded hash of their node ids."""
    seed = "pytest-recall suite scope 1"
    return sorted(records, key=lambda r: hashlib.sha256(f"{seed}:{r['nodeid']}".encode()).hexdigest())


@pytest.fixture
def stats_and_tmp(recall_suite, monkeypatch, tmp_path_factory):
    monkeypatch.setenv("RECALL_NOTEBOOK_STATS", "1")
    tmp = tmp_path_factory.mktemp("agent-tmp")
    monkeypatch.setenv("TMPDIR", str(tmp))
    return tmp


def test_suite_scope_shares_one_memory_and_removes_it_at_the_end(recall_suite, stats_and_tmp):
    cases = abilities_suite(recall_suite, 14)

    recall_suite.run("--recall-scope=suite", "--recall-home=case", command=notebook_cmd()).assert_outcomes(passed=14)

    report = recall_suite.report()
    assert report["score"] == 1.0
    held = [held_accounts(record) for record in run_order(report["cases"])]
    assert held == sorted(held) and held[-1] == len(accounts_of(cases))
    assert list(stats_and_tmp.iterdir()) == []


def test_case_scope_keeps_each_case_to_its_own_notes(recall_suite, stats_and_tmp):
    cases = abilities_suite(recall_suite, 7)

    recall_suite.run(command=notebook_cmd()).assert_outcomes(passed=7)

    by_id = {case.case_id: len(accounts_of([case])) for case in cases}
    assert {r["id"]: held_accounts(r) for r in recall_suite.report()["cases"]} == by_id


def test_control_items_still_run_in_a_fresh_scope(recall_suite, stats_and_tmp):
    abilities_suite(recall_suite, 7)

    recall_suite.run("--recall-scope=suite", "--recall-control", command=notebook_cmd())

    records = recall_suite.report()["cases"]
    controls = [r for r in records if r["control"]]
    assert len(controls) == 7
    assert {r["category"]: r["score"] for r in controls} == {
        **dict.fromkeys(abilities.CATEGORIES, 0.0),
        "abstention": 1.0,
    }
    assert all(held_accounts(r) == 0 for r in controls)
    assert all(r["score"] == 1.0 for r in records if not r["control"])


@pytest.mark.parametrize(
    ("flag", "reason"),
    [
        ("--recall-concurrency=4", "--recall-concurrency=4: cases would run at once"),
        ("-n2", "-n (xdist): each worker would keep a memory of its own"),
        ("--recall-epochs=2", "--recall-epochs=2: a repeat would find its own earlier notes"),
        ("--recall-shard=1/2", "--recall-shard: each shard would hold only part of the memory"),
        ("--recall-resume=old.jsonl", "--recall-resume: skipped cases would leave no notes behind"),
    ],
)
def test_suite_scope_refuses_what_would_split_or_repeat_its_memory_in_one_line(recall_suite, flag, reason):
    abilities_suite(recall_suite, 1)

    result = recall_suite.run("--recall-scope=suite", flag, command=notebook_cmd())

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --recall-scope=suite cannot be combined with {reason}; run the suite in one process, *"]
    )


def test_an_unknown_scope_is_one_line(recall_suite):
    abilities_suite(recall_suite, 1)

    result = recall_suite.run("--recall-scope=run", command=notebook_cmd())

    result.stderr.fnmatch_lines(["ERROR: --recall-scope must be one of case, suite, not 'run'"])


@pytest.mark.slow
def test_256_cases_in_one_scope_and_the_last_finds_all_their_notes(recall_suite, stats_and_tmp):
    cases = abilities_suite(recall_suite, 256)

    recall_suite.run("--recall-scope=suite", "-q", command=notebook_cmd(), timeout=LONG_RUN_TIMEOUT_S)

    report = recall_suite.report()
    assert (report["score"], report["n_total"]) == (1.0, 256)
    ordered = run_order(report["cases"])
    held = [held_accounts(record) for record in ordered]
    assert held == sorted(held)
    assert held[-1] == len(accounts_of(cases)) > 1000
