"""The files judge as a plain function over snapshots, with a table of checks."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from pytest_recall.cases.answer_forms import answer_form_error
from pytest_recall.cases.workspace_tree import SnapshotEntry, WorkspaceSnapshot
from pytest_recall.scoring.judge import judge_answer


def file(text: str, **extra: Any) -> SnapshotEntry:
    return SnapshotEntry("file", size=len(text.encode()), data=text.encode(), **extra)


BEFORE = {
    "src": SnapshotEntry("dir"),
    "src/app.py": file("x = 1\n"),
    "legacy": SnapshotEntry("dir"),
    "legacy/old.py": file("OLD = 1\n"),
    "pyproject.toml": file('[tool.ruff]\nline-length = 97\n[project]\nname = "p"\n'),
    "data.json": file('{"a": {"b": [1, true]}}'),
}
AFTER = {
    **BEFORE,
    "src/app.py": file("# SPDX-FileContributor: team-kestrel-4417\ndef export_rows(rows):\n    return rows\n"),
    "src/alias.py": SnapshotEntry("symlink", target="app.py", inside="src/app.py"),
    "src/leak.py": SnapshotEntry("symlink", target="/etc/passwd", inside=None),
    "src/shared.py": file("team-kestrel-4417", links=2),
    "big.txt": file("head", truncated=True),
}
SNAPSHOT = WorkspaceSnapshot(after=MappingProxyType(AFTER), before=MappingProxyType(BEFORE), cap_bytes=4)

CASES = [
    ({"path": "src/app.py", "exists": True}, True),
    ({"path": "src/", "exists": True}, True),
    ({"path": "src/app.py/", "exists": True}, False),
    ({"path": "NOTES.md", "absent": True}, True),
    ({"path": "src/app.py", "absent": True}, False),
    ({"path": "src/app.py", "contains": "team-kestrel-4417"}, True),
    ({"path": "src/app.py", "contains": "team-kestrel-4418"}, False),
    ({"path": "src/app.py", "not_contains": "import requests"}, True),
    ({"path": "src/app.py", "not_contains": "export_rows"}, False),
    ({"path": "src/app.py", "matches": r"^def [a-z]+(_[a-z]+)*\(", "flags": "m"}, True),
    ({"path": "src/app.py", "matches": r"^def [a-z]+(_[a-z]+)*\("}, False),
    ({"path": "src/app.py", "matches": r"^# spdx", "flags": "im"}, True),
    ({"path": "legacy/", "unchanged": True}, True),
    ({"path": "legacy/old.py", "unchanged": True}, True),
    ({"path": "src/app.py", "unchanged": True}, False),
    ({"path": "src/", "unchanged": True}, False),
    ({"path": "NOTES.md", "unchanged": True}, True),
    ({"path": "pyproject.toml", "toml": "tool.ruff.line-length", "equals": 97}, True),
    ({"path": "pyproject.toml", "toml": "tool.ruff.line-length", "equals": 98}, False),
    ({"path": "pyproject.toml", "toml": "project.version", "equals": "1"}, False),
    ({"path": "data.json", "json": "a.b.1", "equals": True}, True),
    ({"path": "data.json", "json": ["a", "b", 0], "equals": True}, False),
    ({"path": "data.json", "json": "a.b.0", "equals": 1}, True),
    ({"path": "src/alias.py", "contains": "team-kestrel-4417"}, True),
    ({"path": "src/leak.py", "contains": "root"}, False),
    ({"path": "src/leak.py", "absent": True}, False),
    ({"path": "src/shared.py", "contains": "team-kestrel-4417"}, False),
    ({"path": "big.txt", "contains": "head"}, True),
    ({"path": "big.txt", "not_contains": "tail"}, False),
]


def expected(*checks: dict[str, Any]) -> dict[str, Any]:
    return {"id": "c", "category": "convention", "answer_kind": "files", "answer": {"checks": list(checks)}}


@pytest.mark.parametrize(("check", "holds"), CASES)
def test_each_check_holds_or_fails_as_the_table_says(check: dict[str, Any], holds: bool) -> None:
    verdict = judge_answer("", expected(check), snapshot=SNAPSHOT)
    assert verdict["score"] == (1.0 if holds else 0.0), verdict["reason"]
    assert (verdict["checks_passed"], verdict["checks_total"]) == (int(holds), 1)


def test_the_reason_names_the_first_failed_check_with_an_excerpt() -> None:
    checks = [CASES[0][0], {"path": "src/app.py", "contains": "logging.getLogger"}, CASES[6][0]]
    verdict = judge_answer("", expected(*checks), snapshot=SNAPSHOT)
    assert verdict["score"] == 0.0 and verdict["checks_passed"] == 1 and verdict["checks_total"] == 3
    assert verdict["reason"].startswith('check 2 of 3 failed: src/app.py contains "logging.getLogger"')
    assert "# SPDX-FileContributor" in verdict["reason"]


def test_a_symlink_out_of_the_workdir_says_so() -> None:
    verdict = judge_answer("", expected({"path": "src/leak.py", "contains": "root"}), snapshot=SNAPSHOT)
    assert "symlink pointing outside the workdir (to /etc/passwd)" in verdict["reason"]


def test_no_snapshot_scores_zero() -> None:
    assert judge_answer("", expected(CASES[0][0]))["score"] == 0.0


@pytest.mark.parametrize(
    "answer",
    [
        {"checks": []},
        {"checks": [{"path": "/etc/passwd", "exists": True}]},
        {"checks": [{"path": "../x", "exists": True}]},
        {"checks": [{"path": "a", "exists": True, "absent": True}]},
        {"checks": [{"path": "a", "exists": False}]},
        {"checks": [{"path": "a", "matches": "("}]},
        {"checks": [{"path": "a", "matches": "x", "flags": "q"}]},
        {"checks": [{"path": "a", "toml": "x.y"}]},
        {"checks": [{"path": "a", "contains": "x", "why": "typo"}]},
        ["not", "an", "object"],
    ],
)
def test_malformed_checks_are_refused_at_collection(answer: Any) -> None:
    assert answer_form_error("files", answer) is not None


def test_well_formed_checks_pass_validation() -> None:
    assert answer_form_error("files", {"checks": [case[0] for case in CASES]}) is None
