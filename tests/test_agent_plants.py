"""Issue 26, items 1 to 4 and 6: what an agent with no memory plants so that its failure becomes the harness's.

Each test runs a real inner pytest with ``tests/hostile/planter.py``, which
answers UNKNOWN and plays one trick on the way. Whatever it planted, the case
must score 0 as the agent's failure (``agent_failed``, with the reason), never
become an error that leaves the score, and its area must still be removed.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

HOSTILE_DIR = Path(__file__).resolve().parent / "hostile"
STEPS = ("Remember the balance 12345.67.", "What was the balance?")
# Deeper than Python's recursion limit, which a recursive walk or rmtree needs a frame per level of.
DEEP = 3000


def planter(*args: str) -> str:
    return shlex.join([sys.executable, str(HOSTILE_DIR / "planter.py"), *args])


@pytest.fixture
def agent_tmp(recall_suite: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The inner run's TMPDIR (a tmpfs where there is one: deep trees are slow to remove on some disks)."""
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else recall_suite.pytester.path
    folder = base / f"recall-plants-{os.getpid()}-{id(recall_suite)}"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    yield folder
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def planted_run(recall_suite: Any, agent_tmp: Path, *trick: str, cases: int = 1, args: tuple[str, ...] = ()) -> Any:
    for number in range(cases):
        recall_suite.add(f"case_{number}", STEPS)
    result = recall_suite.run(*args, command=planter(*trick))
    leftovers = [p.name for p in agent_tmp.iterdir() if p.name.startswith(("recall-case-", "recall-step-"))]
    assert leftovers == [], f"the area was left on disk: {leftovers}"
    return result


def assert_agent_failure(record: dict[str, Any], *reason_parts: str) -> None:
    assert record["error"] is None, record["error"]
    assert record["score"] == 0.0
    assert record["outcome"] == "agent_failed", record
    for part in reason_parts:
        assert part in record["reason"], record["reason"]


# -- item 1: a deep tree -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("where", ["deep-scope", "deep-workdir"])
def test_a_deep_tree_is_the_agents_failure_and_still_removed(recall_suite: Any, agent_tmp: Path, where: str) -> None:
    result = planted_run(recall_suite, agent_tmp, where, str(DEEP), cases=2, args=("--recall-gate=score",))
    for record in recall_suite.records().values():
        if where == "deep-scope":
            # The memory listing stops at its depth bound: the agent's failure, with the reason.
            assert_agent_failure(record, "deeper than 100 directories")
        else:
            # The workdir is simply removed (iteratively): the case is judged on what the agent said.
            assert (record["error"], record["score"], record["outcome"]) == (None, 0.0, "unknown")
    assert recall_suite.report()["score"] == 0.0
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


# -- item 2: the cost file -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trick", "reason"),
    [
        (("cost-fifo",), "is a FIFO, not a regular file"),
        (("cost-link", "/dev/zero"), "is a symbolic link"),
        (("cost-nested", "30000"), "nests more than"),
    ],
    ids=["fifo", "link-to-dev-zero", "nested"],
)
def test_a_cost_file_that_is_no_small_regular_file_is_the_agents_failure(
    recall_suite: Any, agent_tmp: Path, trick: tuple[str, ...], reason: str
) -> None:
    planted_run(recall_suite, agent_tmp, *trick)
    record = recall_suite.records()["case_0"]
    assert_agent_failure(record, "RECALL_COST_FILE", reason)
    assert record["cost_usd"] is None
    assert len(record["steps"]) == 1, "the case stops at the step that planted it"


@pytest.mark.parametrize("kind", ["cost-link", "cost-hardlink"])
def test_a_host_file_linked_as_the_cost_file_is_never_read_into_the_report(
    recall_suite: Any, agent_tmp: Path, kind: str
) -> None:
    host = agent_tmp / "host-billing.json"
    host.write_text('{"cost_usd": 4242}', encoding="utf-8")
    planted_run(recall_suite, agent_tmp, kind, str(host))
    record = recall_suite.records()["case_0"]
    assert record["cost_usd"] is None
    assert_agent_failure(record, "RECALL_COST_FILE")
    assert "4242" not in recall_suite.report_path.read_text(encoding="utf-8")


# -- item 3: names that are not UTF-8 ------------------------------------------------------------


def test_a_name_that_is_not_utf8_in_scope_or_home_is_listed_as_text(recall_suite: Any, agent_tmp: Path) -> None:
    result = planted_run(recall_suite, agent_tmp, "odd-names")
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    record = recall_suite.records()["case_0"]
    assert record["error"] is None
    listed = sorted(entry["path"] for entry in record["steps"][0]["memory"])
    assert listed == ["home/note-\\xff\\xfe.txt", "scope/note-\\xff\\xfe.txt"]


# -- item 4: the memory listing ------------------------------------------------------------------


def test_a_one_terabyte_sparse_file_is_listed_without_reading_it(recall_suite: Any, agent_tmp: Path) -> None:
    planted_run(recall_suite, agent_tmp, "sparse", str(1 << 40))
    record = recall_suite.records()["case_0"]
    assert record["error"] is None
    (entry,) = record["steps"][0]["memory"]
    assert entry["size"] == 1 << 40
    assert entry["sha256"].startswith("not hashed: larger than")
    # The listing is bounded in time too: the step's harness time is nowhere near a terabyte's read.
    assert record["duration_s"] < 60


def test_a_hard_link_to_a_host_file_shows_neither_its_size_nor_its_digest(recall_suite: Any, agent_tmp: Path) -> None:
    host = agent_tmp / "host-secret.txt"  # on the area's file system: a hard link cannot cross one
    host.write_bytes(b"s" * 12345)
    planted_run(recall_suite, agent_tmp, "hardlink", str(host))
    (entry,) = recall_suite.records()["case_0"]["steps"][0]["memory"]
    assert entry["path"] == "scope/linked"
    assert entry["size"] == 0
    assert entry["sha256"].startswith("not hashed: hard links")


def test_only_a_memory_with_nothing_in_it_skips_the_walk(tmp_path: Path) -> None:
    """The shortcut for an empty memory (issue 27) may never hide what an agent planted from the walk."""
    from pytest_recall.sessions.memory_listing import holds_nothing, list_memory

    scope, home = tmp_path / "scope", tmp_path / "home"
    scope.mkdir()
    home.mkdir()
    assert holds_nothing([scope, home]) and holds_nothing([scope, tmp_path / "missing"])
    (home / ".cache").mkdir()  # an empty folder: nothing to list, yet it goes to the walk
    assert not holds_nothing([scope, home]) and list_memory([scope, home]).files == ()
    (home / ".cache").rmdir()
    (scope / "notes").symlink_to("/etc/passwd")
    assert not holds_nothing([scope, home])
    (scope / "notes").unlink()
    scope.chmod(0)  # unreadable: the walk says so (root reads it anyway, and finds it empty)
    try:
        assert holds_nothing([scope]) == (os.geteuid() == 0)
    finally:
        scope.chmod(stat.S_IRWXU)


def test_a_small_memory_is_listed_at_once_and_a_larger_one_as_before(tmp_path: Path) -> None:
    """Listed on the run loop's thread, a small memory reads exactly as the listing threads list it; past any of
    the small bounds the attempt gives up, so the full limits, and the faults they find, are the threads'."""
    from pytest_recall.sessions.memory_listing import SMALL_MEMORY, list_memory, list_small_memory

    scope, home = tmp_path / "scope", tmp_path / "home"
    scope.mkdir()
    (home / ".config" / "agent").mkdir(parents=True)
    (scope / "notebook.sqlite").write_bytes(os.urandom(12288))
    (home / ".config" / "agent" / "notes.md").write_text("the balance is 12345.67\n")
    (scope / "linked").hardlink_to(scope / "notebook.sqlite")  # noted, never read, in both
    small = list_small_memory([scope, home])
    assert small is not None and small == list_memory([scope, home])
    assert [entry.path for entry in small.files] == [
        "home/.config/agent/notes.md",
        "scope/linked",
        "scope/notebook.sqlite",
    ]
    (scope / "linked").unlink()

    big = scope / "big.bin"
    big.write_bytes(b"x" * (SMALL_MEMORY.file_hash_bytes + 1))
    assert list_small_memory([scope, home]) is None
    big.unlink()
    deep = scope.joinpath(*["d"] * SMALL_MEMORY.max_depth)
    deep.mkdir(parents=True)
    assert list_small_memory([scope, home]) is None
    deep.rmdir()
    for index in range(SMALL_MEMORY.max_entries):
        (home / f"note{index}").write_text("n")
    assert list_small_memory([scope, home]) is None
    assert list_memory([scope, home]).count == SMALL_MEMORY.max_entries + 2

    # A fault that is no bound (a root the agent made a file) is the small listing's to report, as the threads do.
    for index in range(SMALL_MEMORY.max_entries):
        (home / f"note{index}").unlink()
    scope_file = tmp_path / "scope-file"
    scope_file.write_text("not a folder")
    small = list_small_memory([scope_file, home])
    assert small is not None and small.fault is not None and small == list_memory([scope_file, home])


# -- item 6: a workdir swapped for a symbolic link -----------------------------------------------


@pytest.mark.parametrize("workdir", ["fresh", "case"])
def test_a_workdir_swapped_for_a_link_is_never_followed(
    recall_suite: Any, agent_tmp: Path, tmp_path_factory: pytest.TempPathFactory, workdir: str
) -> None:
    target = tmp_path_factory.mktemp("target")
    (target / "keep.txt").write_text("keep", encoding="utf-8")
    os.chmod(target, 0o755)
    recall_suite.add("case_0", STEPS)
    recall_suite.run(f"--recall-workdir={workdir}", command=planter("swap-workdir", str(target)))
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o755
    assert (target / "keep.txt").read_text(encoding="utf-8") == "keep"
    record = recall_suite.records()["case_0"]
    assert_agent_failure(record, "replaced by a symbolic link")
    for moved in agent_tmp.rglob("*.moved"):
        moved.rmdir()
