"""A real CLI writes the files of coding cases: Claude Code in print mode, its own Write tool, the fake model.

A small generated coding suite (``convention``, ``decision`` and ``carry``
cases) runs through ``recall-claude`` four cases at a time with a HOME per
case. The fake model does each task with Claude Code's ``Write`` tool (and
``Read``, for a registry rule in pyproject.toml), computing the files with
the project's coding solver from the request alone. In ``memory`` mode it
stores what step 1 teaches in ``~/.claude/CLAUDE.md`` and the last step
writes by the notes Claude Code sent back: 1.000. In ``plain`` mode nothing
is stored and the files lack what was taught: 0.000.

That the judged files are the ones the CLI's tool wrote is checked from the
model's request log: the files judge, run on the case's workspace with the
last step's ``Write`` calls applied, gives each case the verdict the
harness gave from the workdir it pictured.

The CLI comes from ``.ci/install-clis`` (``RECALL_CLAUDE_BIN``) or PATH; a
missing CLI skips these tests on a developer's machine and fails them under CI.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from pytest_recall.cases.model import write_case_folders
from pytest_recall.cases.workspace_tree import (
    ENTRY_DIR,
    ENTRY_FILE,
    SnapshotEntry,
    WorkspaceSnapshot,
    WorkspaceTree,
    read_case_workspace,
)
from pytest_recall.scoring.files_judge import score_files
from pytest_recall.suites.coding import iter_cases
from pytest_recall.testing import FakeModelServer, Mode
from pytest_recall.testing.fake_coder import workdir_of
from pytest_recall.testing.wire import read_anthropic

pytestmark = pytest.mark.real_cli
SEED = 11
CATEGORIES = ("convention", "decision", "carry")
# Indices 0..13 hold two cases of each category; these three categories give six cases.
GENERATED = 14
N_CASES = 6
INNER_RUN_TIMEOUT_S = 600.0


def claude_cli() -> str:
    """Claude Code's path; skip when it is absent, unless under CI, where that is a failure."""
    found = shutil.which(os.environ.get("RECALL_CLAUDE_BIN") or "claude")
    if found is not None:
        return found
    reason = 'claude is not installed: run `eval "$(.ci/install-clis)"` or set RECALL_CLAUDE_BIN'
    if os.environ.get("CI") == "true":
        pytest.fail(f"under CI every CLI must be installed; {reason}")
    pytest.skip(reason)


@pytest.fixture
def coding_cases(pytester: pytest.Pytester) -> Path:
    suite = pytester.path / "cases" / "coding"
    cases = [case for case in iter_cases(SEED, GENERATED) if case.category in CATEGORIES]
    assert len(cases) == N_CASES
    write_case_folders(cases, suite)
    return suite


@pytest.fixture
def claude_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, coding_cases: Path) -> Iterator[Any]:
    """``claude_run(mode)``: the suite through recall-claude against a fake model of that mode; (report, log)."""
    servers: list[FakeModelServer] = []
    monkeypatch.setenv("RECALL_CLAUDE_BIN", claude_cli())
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fake")
    # The model is on loopback: never through a proxy.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")

    def run(mode: Mode) -> tuple[pytest.RunResult, dict[str, Any], list[dict[str, Any]]]:
        log_path = pytester.path / f"model-{mode}.jsonl"
        server = FakeModelServer(mode, log_path=log_path).__enter__()
        servers.append(server)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        report_path = pytester.path / f"report-{mode}.json"
        result = pytester.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            str(coding_cases),
            f"--recall-cmd={Path(sys.executable).with_name('recall-claude')}",
            "--recall-concurrency=4",
            "--recall-home=case",
            f"--recall-report={report_path}",
            timeout=INNER_RUN_TIMEOUT_S,
        )
        report: dict[str, Any] = json.loads(report_path.read_text(encoding="utf-8"))
        requests = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]
        return result, report, requests

    yield run
    for server in servers:
        server.close()


def last_step_writes(case_folder: Path, requests: list[dict[str, Any]]) -> dict[str, str]:
    """Relative path -> content of every ``Write`` call the model made in the case's last step, in order."""
    last_prompt = sorted(case_folder.glob("step*.txt"))[-1].read_text(encoding="utf-8")
    writes: dict[str, str] = {}
    for entry in requests:
        if entry["tool"] != "Write" or last_prompt.strip() not in entry["prompt"]:
            continue
        workdir = workdir_of(read_anthropic(entry["body"]).context)
        call = json.loads(entry["tool_input"])
        assert workdir is not None and call["file_path"].startswith(workdir + "/"), call["file_path"]
        writes[call["file_path"][len(workdir) + 1 :]] = call["content"]
    return writes


def picture(tree: WorkspaceTree, writes: dict[str, str] | None = None) -> dict[str, SnapshotEntry]:
    """A snapshot's entries for a tree with ``writes`` applied, as the harness pictures a workdir."""
    files = {name: data for name, data in tree.files.items()}
    files.update({name: text.encode("utf-8") for name, text in (writes or {}).items()})
    dirs = {name for name in tree.dirs}
    for name in files:
        parts = name.split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    entries = {name: SnapshotEntry(ENTRY_DIR) for name in dirs}
    entries.update({name: SnapshotEntry(ENTRY_FILE, size=len(data), data=data) for name, data in files.items()})
    return entries


def verdict_of_the_write_calls(case_folder: Path, requests: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """The files judge on the last step's starting tree with its Write calls applied; and how many calls."""
    workspace = read_case_workspace(case_folder)
    assert workspace is not None
    steps = sorted(case_folder.glob("step*.txt"))
    tree = workspace.tree_for(len(steps))
    writes = last_step_writes(case_folder, requests)
    snapshot = WorkspaceSnapshot(after=MappingProxyType(picture(tree, writes)), before=MappingProxyType(picture(tree)))
    expected = json.loads((case_folder / "answer.json").read_text(encoding="utf-8"))
    return score_files(snapshot, expected), len(writes)


@pytest.mark.parametrize(("mode", "score"), [("memory", 1.0), ("plain", 0.0)])
def test_claude_writes_the_files_with_its_own_tool_and_only_memory_passes(claude_run, coding_cases, mode, score):
    result, report, requests = claude_run(mode)

    assert report["score"] == score, result.stdout.str()[-3000:]
    assert (report["n_total"], report["n_errors"]) == (N_CASES, 0)
    by_id = {record["id"]: record for record in report["cases"]}
    for case_folder in sorted(coding_cases.iterdir()):
        record = by_id[case_folder.name]
        assert record["score"] == score, record
        assert record["checks_total"] > 0, record
        held_all = record["checks_passed"] == record["checks_total"]
        assert held_all is (mode == "memory"), record
        verdict, n_writes = verdict_of_the_write_calls(case_folder, requests)
        assert n_writes >= 1, f"{case_folder.name}: no Write call in the last step"
        assert (verdict["score"], verdict["checks_passed"], verdict["checks_total"]) == (
            record["score"],
            record["checks_passed"],
            record["checks_total"],
        ), f"{case_folder.name}: the Write calls and the judged workdir disagree: {verdict} vs {record}"
    shells = [json.loads(entry["tool_input"])["command"] for entry in requests if entry["tool"] == "Bash"]
    if mode == "memory":
        assert shells and all(command.endswith(">> ~/.claude/CLAUDE.md") for command in shells), shells
    else:
        assert shells == [], "a plain model stored a note"
