"""Workspaces: copied into each step's workdir (fresh or carried), pictured after the last step, judged as files."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from needs import needs_bwrap

from conftest import AGENTS_DIR, RecallSuite
from pytest_recall.cases.model import CaseError, load_case_dir
from pytest_recall.cases.workspace_tree import make_tree, read_tree, write_tree
from pytest_recall.sessions.workspace import SNAPSHOT_FILE_CAP, take_snapshot
from pytest_recall.sessions.workspace_copy import CopyPlan

CHECKS = [
    {"path": "src/app.py", "contains": "y = 2"},
    {"path": "src/app.py", "matches": "^x = 1$", "flags": "m"},
    {"path": "tests/", "unchanged": True},
]


def add_workspace_case(
    suite: RecallSuite, case_id: str, steps: list[str], checks: list[dict[str, object]], *, toml: str | None = None
) -> Path:
    folder = suite.add(case_id, steps, kind="files", toml=toml)
    (folder / "answer.json").write_text(
        json.dumps({"id": case_id, "category": "convention", "answer_kind": "files", "answer": {"checks": checks}})
    )
    for name, text in {"src/app.py": "x = 1\n", "tests/test_app.py": "def test_x():\n    pass\n"}.items():
        (folder / "workspace" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "workspace" / name).write_text(text)
    return folder


def tree_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }


def test_tree_round_trips_through_disk_and_changes_the_content_hash(tmp_path: Path) -> None:
    tree = make_tree({"src/pkg/a.py": "A\n", "README.md": b"\x00bin"})
    write_tree(tree, tmp_path)
    assert read_tree(tmp_path).files == tree.files
    case_dir = tmp_path / "case"
    case_dir.mkdir()
    (case_dir / "step1.txt").write_text("one")
    (case_dir / "step2.txt").write_text("two")
    checks = {"checks": [{"path": "a", "exists": True}]}
    (case_dir / "answer.json").write_text(
        json.dumps({"id": "c", "category": "x", "answer_kind": "files", "answer": checks})
    )
    (case_dir / "workspace").mkdir()
    (case_dir / "workspace" / "a").write_text("1")
    first = load_case_dir(case_dir, suite="s", source="c", known_kinds=frozenset({"files"})).content_hash
    (case_dir / "workspace" / "a").write_text("2")
    second = load_case_dir(case_dir, suite="s", source="c", known_kinds=frozenset({"files"})).content_hash
    assert first != second


def test_a_workspace_for_a_step_the_case_lacks_is_refused(tmp_path: Path) -> None:
    for name, text in {"step1.txt": "a", "step2.txt": "b"}.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "answer.json").write_text(
        json.dumps(
            {"id": "c", "category": "x", "answer_kind": "files", "answer": {"checks": [{"path": "a", "exists": True}]}}
        )
    )
    (tmp_path / "workspace.step5").mkdir()
    with pytest.raises(CaseError, match=r"workspace\.step5 belongs to no step"):
        load_case_dir(tmp_path, suite="s", source="c", known_kinds=frozenset({"files"}))


def test_a_one_gigabyte_file_costs_the_cap_not_a_gigabyte(tmp_path: Path) -> None:
    with open(tmp_path / "huge.bin", "wb") as handle:
        handle.truncate(1 << 30)
    (tmp_path / "small.txt").write_text("hello")
    tracemalloc.start()
    snapshot = take_snapshot(tmp_path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    huge = snapshot.after["huge.bin"]
    assert huge.size == 1 << 30 and huge.truncated and len(huge.data) == SNAPSHOT_FILE_CAP
    assert snapshot.after["small.txt"].data == b"hello"
    assert peak < 8 * SNAPSHOT_FILE_CAP


def test_symlinks_are_recorded_with_their_target_and_never_followed_out(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "real.py").write_text("inside")
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink("real.py", work / "src" / "alias.py")
    os.symlink(tmp_path / "secret.txt", work / "leak.txt")
    os.symlink(tmp_path, work / "up")
    after = take_snapshot(work).after
    assert after["src/alias.py"].inside == "src/real.py"
    assert after["leak.txt"].inside is None and after["leak.txt"].data == b""
    assert after["up"].inside is None and not any(name.startswith("up/") for name in after)


def test_fresh_workspace_starts_every_step_pristine(recall_suite: RecallSuite) -> None:
    steps = ["WRITE NOTES.md remember this", "APPEND src/app.py y = 2"]
    checks = [*CHECKS, {"path": "NOTES.md", "absent": True}]
    folder = add_workspace_case(recall_suite, "fresh_case", steps, checks)
    before = tree_digest(folder)
    result = recall_suite.run(command=recall_suite.agent("workspace_editor"))
    result.assert_outcomes(passed=1)
    record = recall_suite.records()["fresh_case"]
    assert (record["score"], record["workspace"], record["checks_passed"], record["checks_total"]) == (
        1.0,
        "fresh",
        4,
        4,
    )
    assert tree_digest(folder) == before


def test_carry_workspace_starts_from_what_the_previous_step_left(recall_suite: RecallSuite) -> None:
    steps = ["WRITE NOTES.md remember this", "APPEND src/app.py y = 2"]
    checks = [*CHECKS, {"path": "NOTES.md", "contains": "remember this"}, {"path": "seen.txt", "contains": "NOTES.md"}]
    add_workspace_case(recall_suite, "carry_case", steps, checks, toml='workspace = "carry"\n')
    recall_suite.run(command=recall_suite.agent("workspace_editor")).assert_outcomes(passed=1)
    record = recall_suite.records()["carry_case"]
    assert (record["score"], record["workspace"], record["checks_passed"]) == (1.0, "carry", 5)


def test_a_step_workspace_replaces_the_carried_one(recall_suite: RecallSuite) -> None:
    steps = ["WRITE NOTES.md remember this", "APPEND src/app.py y = 2"]
    checks = [{"path": "NOTES.md", "absent": True}, {"path": "src/new.py", "exists": True}]
    folder = add_workspace_case(recall_suite, "moved", steps, checks, toml='workspace = "carry"\n')
    (folder / "workspace.step2" / "src").mkdir(parents=True)
    (folder / "workspace.step2" / "src" / "new.py").write_text("z = 3\n")
    recall_suite.run(command=recall_suite.agent("workspace_editor")).assert_outcomes(passed=1)
    assert recall_suite.records()["moved"]["score"] == 1.0


def test_a_carried_workspace_goes_on_from_the_step_tree_that_replaced_it(recall_suite: RecallSuite) -> None:
    steps = ["WRITE one.txt first", "WRITE two.txt second", "APPEND src/app.py y = 2"]
    checks = [
        {"path": "one.txt", "absent": True},
        {"path": "two.txt", "exists": True},
        {"path": "src/new.py", "exists": True},
    ]
    folder = add_workspace_case(recall_suite, "three", steps, checks, toml='workspace = "carry"\n')
    (folder / "workspace.step2" / "src").mkdir(parents=True)
    (folder / "workspace.step2" / "src" / "new.py").write_text("z = 3\n")
    recall_suite.run(command=recall_suite.agent("workspace_editor")).assert_outcomes(passed=1)
    assert recall_suite.records()["three"]["checks_passed"] == 3


def test_a_failed_check_is_named_with_an_excerpt(recall_suite: RecallSuite) -> None:
    add_workspace_case(recall_suite, "wrong", ["WRITE a.txt one", "APPEND src/app.py y = 3"], CHECKS)
    recall_suite.run(command=recall_suite.agent("workspace_editor")).assert_outcomes(failed=1)
    record = recall_suite.records()["wrong"]
    assert record["score"] == 0.0 and (record["checks_passed"], record["checks_total"]) == (2, 3)
    assert record["reason"].startswith('check 1 of 3 failed: src/app.py contains "y = 2"')
    assert "x = 1" in record["reason"]


@pytest.mark.parametrize("target", ["answer", "outside", "hardlink"])
def test_a_symlinked_judged_path_scores_zero_with_a_reason(
    recall_suite: RecallSuite, tmp_path: Path, target: str
) -> None:
    outside = tmp_path / "right.txt"
    outside.write_text("x = 1\ny = 2\n")
    folder = add_workspace_case(recall_suite, "linker", ["WRITE a.txt one", "placeholder"], CHECKS[:1])
    pointed = folder / "answer.json" if target == "answer" else outside
    verb = "HARDLINK" if target == "hardlink" else "LINK"
    (folder / "step2.txt").write_text(f"{verb} src/app.py {pointed}")
    (folder / "workspace" / "src" / "app.py").unlink()
    recall_suite.run(command=recall_suite.agent("workspace_editor")).assert_outcomes(failed=1)
    record = recall_suite.records()["linker"]
    assert record["score"] == 0.0
    why = "hard links" if target == "hardlink" else "symlink pointing outside the workdir"
    assert why in record["reason"]


@needs_bwrap
def test_workspaces_carry_inside_the_sandbox(recall_suite: RecallSuite) -> None:
    steps = ["WRITE NOTES.md remember this", "APPEND src/app.py y = 2"]
    checks = [*CHECKS, {"path": "NOTES.md", "contains": "remember this"}]
    add_workspace_case(recall_suite, "boxed", steps, checks, toml='workspace = "carry"\n')
    agent = recall_suite.agent("workspace_editor")
    sandbox = ["--recall-sandbox=bwrap", f"--recall-sandbox-bind={AGENTS_DIR}"]
    recall_suite.run(*sandbox, command=agent).assert_outcomes(passed=1)
    assert recall_suite.records()["boxed"]["checks_passed"] == 4


def test_the_copy_is_private_files_and_its_picture_from_memory_is_what_a_disk_read_sees(tmp_path: Path) -> None:
    tree = make_tree({"src/pkg/a.py": "A\n", "src/pkg/deep/b.py": "B\n" * 1000, "README.md": b"\x00bin", "e/f": ""})
    plan = CopyPlan.of(tree)
    target = tmp_path / "work"
    target.mkdir()

    plan.write_into(target)

    assert read_tree(target).files == tree.files
    assert all(os.stat(target / name).st_nlink == 1 for name in tree.files), "a copy must be the workdir's own inode"
    (target / "src/pkg/a.py").write_text("edited in place\n")
    assert tree.files["src/pkg/a.py"] == b"A\n"
    (target / "src/pkg/a.py").write_text("A\n")
    assert plan.picture(100) == take_snapshot(target, cap_bytes=100).after


def test_the_copy_never_writes_through_a_path_that_is_already_there(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    target = tmp_path / "work"
    target.mkdir()
    (target / "a.py").symlink_to(outside)

    with pytest.raises(FileExistsError):
        CopyPlan.of(make_tree({"a.py": "planted\n"})).write_into(target)
    assert outside.read_text() == "keep\n"


# Step 1 fills the disk, from its memory folder or from beside the case's area (as another process would);
# step 2 answers.
DISK_FILLER = """\
import os, sys
from pathlib import Path

if "fill" in sys.argv[-1]:
    scope = Path(os.environ["RECALL_SCOPE_DIR"])
    where = scope if sys.argv[1] == "scope" else scope.parent.parent
    hoard = os.open(where / "hoard.bin", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(hoard, b"x" * 65536):
            pass
    except OSError:
        os.close(hoard)
    print("noted")
else:
    print("12345.67")
"""


def _tmpfs_usable(where: Path) -> bool:
    """Whether this process may mount a small tmpfs in a mount namespace of its own (root, or allowed)."""
    where.mkdir(exist_ok=True)
    probe = ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=1m tmpfs "$0"', str(where)]
    try:
        return subprocess.run(probe, capture_output=True, check=False, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.parametrize("where", ["scope", "beside"])
def test_a_full_disk_at_a_later_step_is_the_agents_failure_only_when_its_own_files_fill_it(
    recall_suite: RecallSuite, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """The run's TMPDIR is a 16 MB tmpfs that step 1 fills, so step 2's workspace copy (2 MB) meets a full disk.
    Filled from the agent's memory folder, its files hold the disk: 0, agent_failed. Filled from beside the
    case's area, as another process would: the harness's error, which leaves the score."""
    tmp = recall_suite.pytester.path / "small-disk"
    if not _tmpfs_usable(tmp):
        pytest.skip("cannot mount a tmpfs in a mount namespace here (needs root or unprivileged user namespaces)")
    folder = recall_suite.add("filler", ["fill the disk", "recall"])
    # Step 1's copy is freed when its workdir goes; step 2's, a teammate's larger tree, needs more than that.
    for tree, size in (("workspace", 1000), ("workspace.step2", 2_000_000)):
        (folder / tree).mkdir()
        (folder / tree / "data.bin").write_bytes(b"y" * size)
    agent = recall_suite.pytester.path / "disk_filler.py"
    agent.write_text(DISK_FILLER, encoding="utf-8")
    monkeypatch.setenv("TMPDIR", str(tmp))
    mount = 'mount -t tmpfs -o size=16m tmpfs "$0" && exec "$@"'
    result = recall_suite.pytester.run(
        "unshare", "-m", "sh", "-c", mount, str(tmp), sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
        f"--recall-cmd={sys.executable} {agent} {where}", f"--recall-report={recall_suite.report_path}",
        timeout=120,
    )  # fmt: skip

    record = recall_suite.records()["filler"]
    if where == "scope":
        result.assert_outcomes(failed=1)
        assert (record["score"], record["outcome"], record["error"]) == (0.0, "agent_failed", None)
        assert record["reason"].startswith(
            "the agent left what the harness refuses to handle: it filled the disk before step 2 (the case's "
            "folders hold 1"
        )
        assert record["reason"].endswith("MB free when it began): No space left on device")
    else:
        result.assert_outcomes(errors=1)
        assert (record["score"], record["outcome"]) == (None, "error")
        assert "the disk is full, not by this case's agent (the case's folders hold 0.0 MB of the" in record["reason"]
