"""The coding suite through the real harness: the notebook, the amnesiac, both workspace modes, untouched folders."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import pytest

from conftest import REPO_DIR, RecallSuite
from pytest_recall.cases.model import write_case_folders
from pytest_recall.suites.coding import CATEGORIES, iter_cases

BUNDLED = REPO_DIR / "cases" / "coding"
LONG_RUN_TIMEOUT_S = 600.0


def notebook_cmd() -> str:
    return str(Path(sys.executable).parent / "recall-notebook")


def amnesiac_cmd() -> str:
    return str(Path(sys.executable).parent / "recall-amnesiac")


def digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


# The bundled suite's first cases: every category twice. All of its cases, carried, are solved in process by
# tests/test_coding_suite.py; this is the whole path.
SAMPLE = 2 * len(CATEGORIES)


@pytest.mark.slow
# As shipped (fresh and carry cases) it runs in tests/test_bundled_suites.py; here all of it carries.
@pytest.mark.parametrize("mode", ["carry"])
def test_the_bundled_suite_notebook_one_amnesiac_nowhere(recall_suite: RecallSuite, mode: str) -> None:
    suite = recall_suite.root / "coding"
    shutil.copytree(BUNDLED, suite)
    settings = (suite / "suite.toml").read_text(encoding="utf-8").replace("count = 224", f"count = {SAMPLE}")
    (suite / "suite.toml").write_text(settings, encoding="utf-8")
    if mode == "carry":
        with open(suite / "suite.toml", "a", encoding="utf-8") as handle:
            handle.write('workspace = "carry"\n')

    recall_suite.run("--recall-concurrency=6", "-q", command=notebook_cmd(), timeout=LONG_RUN_TIMEOUT_S)
    report = recall_suite.report()
    assert (report["score"], report["n_total"], report["n_errors"]) == (1.0, SAMPLE, 0)
    assert report["by_category"] == dict.fromkeys(CATEGORIES, 1.0)
    modes = {"fresh": {"fresh", "carry"}, "carry": {"carry"}}[mode]
    assert set(report["by_workspace"]) == modes
    assert all(record["checks_passed"] == record["checks_total"] for record in report["cases"])

    recall_suite.run("--recall-concurrency=6", "-q", command=amnesiac_cmd(), timeout=LONG_RUN_TIMEOUT_S)
    by_category = recall_suite.report()["by_category"]
    # Version 2 pairs scoped work with work in the rule's own project: no memory fails it too.
    assert all(score <= 0.10 for score in by_category.values()), by_category


def test_case_folders_are_unchanged_after_a_run(recall_suite: RecallSuite) -> None:
    folders = write_case_folders(iter_cases(5, 7), recall_suite.root / "coding")
    before = digests(folders[0].parent)

    recall_suite.run("--recall-concurrency=4", command=notebook_cmd()).assert_outcomes(passed=7)

    assert digests(folders[0].parent) == before
    records = recall_suite.records()
    assert {record["workspace"] for record in records.values()} == {"fresh", "carry"}
    assert all(record["score"] == 1.0 for record in records.values())


def test_memory_in_agents_md_counts_only_when_the_workspace_carries(
    recall_suite: RecallSuite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECALL_NOTEBOOK_MEMORY", "agents-md")
    suite = recall_suite.root / "coding"
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text('family = "coding"\nseed = 3\ncount = 14\n', encoding="utf-8")

    recall_suite.run("--recall-concurrency=4", command=notebook_cmd())
    fresh = recall_suite.report()
    assert fresh["by_workspace"]["fresh"]["by_category"] == dict.fromkeys(CATEGORIES[:-1], 0.0)
    assert fresh["by_workspace"]["carry"]["by_category"] == {"carry": 1.0}

    with open(suite / "suite.toml", "a", encoding="utf-8") as handle:
        handle.write('workspace = "carry"\n')
    recall_suite.run("--recall-concurrency=4", command=notebook_cmd())
    # The teammate's change in stale_memory replaces the workspace, AGENTS.md with it.
    expected = {**dict.fromkeys(CATEGORIES, 1.0), "stale_memory": 0.0}
    assert recall_suite.report()["by_workspace"]["carry"]["by_category"] == expected
