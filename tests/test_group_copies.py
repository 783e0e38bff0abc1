"""Issue 54, holes 2 and 5: what a case group's ingest leaves in its scope for the copies its questions start from.

Each run holds one group (an ingest, three questions) and one plain case, run
by ``tests/hostile/group_planter.py``, which keeps the balance soundly and
plants one thing beside it at the ingest. A memory no copy can hold faithfully
is the agent's failure: the ingesting case and every question score 0 with the
reason, never an error that takes them out of the score. A memory a copy can
hold (a link inside it, a sparse file) reaches every question as it was, holes
kept.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from test_hostile import HOSTILE_DIR, MODES, mode_args, needs_bwrap

from pytest_recall.sessions.memory_copy import copy_memory, points_inside
from pytest_recall.sessions.memory_listing import ListingLimits

QUESTIONS = ("q1", "q2", "q3")
TELL, ASK = "Remember the balance 12345.67.", "What was the balance?"


def planter(*args: str) -> str:
    return shlex.join([sys.executable, str(HOSTILE_DIR / "group_planter.py"), *args])


@pytest.fixture
def agent_tmp(recall_suite: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The inner run's TMPDIR, where its case areas and the group's kept copy live."""
    folder = recall_suite.pytester.path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


def group_run(
    recall_suite: Any, agent_tmp: Path, *trick: str, mode: str = "none", args: tuple[str, ...] = ()
) -> tuple[Any, dict[str, Any]]:
    group = recall_suite.root / "suite" / "grp"
    for name in QUESTIONS:
        recall_suite.add(name, [ASK], suite="suite/grp")
    (group / "group.toml").write_text("", encoding="utf-8")
    (group / "ingest1.txt").write_text(TELL, encoding="utf-8")
    recall_suite.add("plain", [TELL, ASK])
    result = recall_suite.run("--recall-gate=score", *mode_args(mode), *args, command=planter(*trick))
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    leftovers = [p.name for p in agent_tmp.iterdir() if p.name.startswith(("recall-case-", "recall-groups-"))]
    assert leftovers == [], f"left on disk: {leftovers}"
    return result, recall_suite.records()


def can_mknod() -> bool:
    probe = Path(os.environ.get("TMPDIR", "/tmp")) / f"recall-mknod-probe-{os.getpid()}"
    try:
        os.mknod(probe, stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except OSError:
        return False
    probe.unlink()
    return True


needs_mknod = pytest.mark.skipif(not can_mknod(), reason="no CAP_MKNOD here: a device node cannot be planted")
PLANTED = [
    pytest.param(("fifo",), "none", "is a FIFO", id="fifo-default"),
    pytest.param(("fifo",), "bwrap", "is a FIFO", id="fifo-sandbox", marks=needs_bwrap),
    pytest.param(("socket",), "none", "is a socket", id="socket-default"),
    pytest.param(("socket",), "bwrap", "is a socket", id="socket-sandbox", marks=needs_bwrap),
    pytest.param(("device",), "none", "is a character device", id="device-default", marks=needs_mknod),
    pytest.param(("link-out",), "none", "is a symbolic link to '/etc/hostname', outside", id="link-out-default"),
    pytest.param(
        ("climb-out",), "bwrap", "is a symbolic link to '../../x', outside", id="climb-out-sandbox", marks=needs_bwrap
    ),
]  # fmt: skip


@pytest.mark.parametrize(("trick", "mode", "reason"), PLANTED)
def test_an_ingest_memory_no_copy_can_hold_scores_the_group_0_as_the_agents_failure(
    recall_suite: Any, agent_tmp: Path, trick: tuple[str, ...], mode: str, reason: str
) -> None:
    result, records = group_run(recall_suite, agent_tmp, *trick, mode=mode)
    for name in QUESTIONS:
        record = records[name]
        assert (record["error"], record["score"], record["outcome"]) == (None, 0.0, "agent_failed"), record
        assert "cannot be copied for the group's questions" in record["reason"], record["reason"]
        assert f"scope/planted {reason}" in record["reason"], record["reason"]
    # The case that ran the ingest is one of them; the others ran no session at all.
    assert sorted(len(records[name]["steps"]) for name in QUESTIONS) == [0, 0, 1]
    assert records["plain"]["score"] == 1.0
    report = recall_suite.report()
    assert report["score"] == 0.25
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    ("trick", "mode"),
    [
        pytest.param(("link-in",), "none", id="link-inside"),
        pytest.param(("sparse", str(1 << 30)), "none", id="sparse-1GiB-default"),
        pytest.param(("sparse", str(1 << 30)), "bwrap", id="sparse-1GiB-sandbox", marks=needs_bwrap),
    ],
)
def test_a_copy_keeps_links_inside_and_holes_so_every_question_recalls(
    recall_suite: Any, agent_tmp: Path, trick: tuple[str, ...], mode: str
) -> None:
    result, records = group_run(recall_suite, agent_tmp, *trick, mode=mode)
    for name in (*QUESTIONS, "plain"):
        assert (records[name]["error"], records[name]["outcome"]) == (None, "correct"), records[name]
    assert result.ret == pytest.ExitCode.OK


@pytest.mark.parametrize("mode", MODES)
def test_an_ingest_step_that_fails_scores_the_group_0_as_the_agents_failure(
    recall_suite: Any, agent_tmp: Path, mode: str
) -> None:
    """Not an error for each waiting question, which would take the group out of the score (issue 54, the
    general rule): a question whose ingest failed could recall nothing, as a case whose first step failed."""
    result, records = group_run(recall_suite, agent_tmp, "fail", mode=mode)
    for name in QUESTIONS:
        record = records[name]
        assert (record["error"], record["score"], record["outcome"]) == (None, 0.0, "agent_failed"), record
    waiting = [records[name]["reason"] for name in QUESTIONS if not records[name]["steps"]]
    assert len(waiting) == 2 and all("failed in cases/suite/grp/q1::recall: step 1 exited 1" in r for r in waiting)
    assert records["plain"]["outcome"] == "agent_failed"  # told too, it failed as well
    assert recall_suite.report()["score"] == 0.0
    result.stdout.fnmatch_lines(["*0/4 cases passed", "*2 cases: agent failed in step 1 (exit 1): rate limited"])
    result.stdout.fnmatch_lines(["*2 cases: the agent left what the harness refuses to handle: the ingest of group*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_the_group_waits_for_a_retried_ingest(recall_suite: Any, agent_tmp: Path) -> None:
    """The plain case is deselected: its first step is told too, and run beside the group it could be the one
    that fails once (seen in CI), leaving the ingest nothing to retry."""
    marker = recall_suite.pytester.path / "failed-once"
    retry = ("--recall-retries=1", "--recall-retry-delay=0.5", "--recall-concurrency=4", "-k", "grp")
    result, records = group_run(recall_suite, agent_tmp, "fail-once", str(marker), args=retry)
    assert marker.exists()
    assert "plain" not in records
    for name in QUESTIONS:
        assert (records[name]["error"], records[name]["outcome"]) == (None, "correct"), records[name]
    assert sorted(records[name]["attempts"] for name in QUESTIONS) == [1, 1, 2]
    assert result.ret == pytest.ExitCode.OK


def test_a_kept_memory_spoiled_by_a_question_scores_the_later_questions_0(recall_suite: Any, agent_tmp: Path) -> None:
    """Default mode leaves a group's kept memory in an agent's reach: what a question plants there that no copy
    can hold fails the questions seeded after it, as the agent's doing, never as errors."""
    result, records = group_run(recall_suite, agent_tmp, "spoil-kept")
    owner, *later = sorted(QUESTIONS, key=lambda name: -len(records[name]["steps"]))
    assert records[owner]["outcome"] == "correct"
    for name in later:
        record = records[name]
        assert (record["error"], record["score"], record["outcome"]) == (None, 0.0, "agent_failed"), record
        assert "the group's kept memory changed after its ingest: scope/planted is a FIFO" in record["reason"]
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_grouped_case_in_a_live_session_runs_its_own_ingest(recall_suite: Any, agent_tmp: Path) -> None:
    """One process holds a live session's turns, so nothing can be kept between ingest and question: each case
    runs both, where a group's waiting questions were errors, their ingest never kept."""
    group = recall_suite.root / "suite" / "grp"
    for name in QUESTIONS:
        recall_suite.add(name, [ASK], suite="suite/grp")
    (group / "group.toml").write_text("", encoding="utf-8")
    (group / "ingest1.txt").write_text(TELL, encoding="utf-8")
    recall_suite.run("--recall-session=continue", command=recall_suite.agent("repl_notebook"))
    for record in recall_suite.records().values():
        assert record["error"] is None and len(record["steps"]) == 2, record


def test_points_inside_holds_every_link_to_its_folder_whatever_the_others_point_to() -> None:
    assert points_inside("notes.txt", 0) and points_inside("./sub//notes.txt", 0)
    assert not points_inside("sub/../notes.txt", 0)
    assert points_inside("../notes.txt", 1) and not points_inside("../notes.txt", 0)
    assert not points_inside("/abs/path", 5)
    # Lexically inside, yet a/b/s -> ../../d makes a/b/w -> s/../../.. climb out of the folder: refused.
    assert points_inside("../../d", 2) and not points_inside("s/../../..", 2)


def tree(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "notes.txt").write_text("12345.67", encoding="utf-8")
    (root / "sub" / "twin").hardlink_to(root / "sub" / "notes.txt")
    (root / "up").symlink_to("sub/notes.txt")
    with open(root / "holes.bin", "wb") as handle:
        handle.truncate(1 << 40)
        handle.seek(1 << 39)
        handle.write(b"data")
    return root


def test_a_copy_is_faithful_and_keeps_holes(tmp_path: Path) -> None:
    source = tree(tmp_path / "scope")
    assert copy_memory([(source, tmp_path / "copy"), (tmp_path / "missing", tmp_path / "empty")]) is None
    copy = tmp_path / "copy"
    assert (copy / "up").readlink() == Path("sub/notes.txt")
    assert (copy / "sub" / "twin").stat().st_ino == (copy / "sub" / "notes.txt").stat().st_ino
    holes = (copy / "holes.bin").stat()
    assert holes.st_size == 1 << 40 and holes.st_blocks * 512 < 1 << 20
    with open(copy / "holes.bin", "rb") as handle:
        handle.seek(1 << 39)
        assert handle.read(4) == b"data"
    assert list((tmp_path / "empty").iterdir()) == []


@pytest.mark.parametrize(
    ("limits", "refusal"),
    [
        (ListingLimits(copy_bytes=1 << 20), "more than 1 MiB of data, holes aside"),
        (ListingLimits(max_entries=3), "more than 3 entries"),
        (ListingLimits(max_depth=1), "deeper than 1 directories"),
    ],
)
def test_a_copy_past_the_listing_bounds_is_refused(tmp_path: Path, limits: ListingLimits, refusal: str) -> None:
    source = tree(tmp_path / "scope")
    (source / "sub" / "notes.txt").write_bytes(b"x" * (2 << 20))
    assert refusal in (copy_memory([(source, tmp_path / "copy")], limits) or "")
