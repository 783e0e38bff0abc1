"""The slot cgroups sessions are born in: one that emptied by itself is reused, a killed one is not.

Real processes, real cgroups: skipped where this machine gives the harness none.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_recall.sessions import cgroup
from pytest_recall.sessions.driver import run_session
from pytest_recall.sessions.session import SessionSpec
from pytest_recall.sessions.spawn import AgentStartError

pytestmark = pytest.mark.skipif(not cgroup.available(), reason="no writable cgroup v2 here")


def session(tmp_path: Path, script: str) -> tuple[str, int]:
    """Run ``sh -c script`` as a session; (its stdout, the processes it left)."""
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    spec = SessionSpec(("/bin/sh", "-c", script), workdir, {"PATH": os.defpath}, 30.0, 1.0, 1 << 20)
    result = run_session(spec)
    assert result.exit_code == 0, (result.exit_code, result.signal, result.stderr)
    return result.stdout.decode().replace("\r\n", "\n"), result.killed_leftovers


def test_a_slot_that_emptied_itself_is_reused_and_a_killed_one_is_not(tmp_path: Path) -> None:
    first, _ = session(tmp_path, "tail -n 1 /proc/self/cgroup")
    again, _ = session(tmp_path, "tail -n 1 /proc/self/cgroup")
    assert again == first
    # A process left running: the slot is killed, and the next session is born in another one.
    # (Deaf to the hangup its terminal sends when the shell, the session's leader, exits.)
    killed, left = session(tmp_path, "tail -n 1 /proc/self/cgroup; trap '' HUP; sleep 30 &")
    assert left == 1
    assert killed == first
    after, _ = session(tmp_path, "tail -n 1 /proc/self/cgroup; echo alive")
    # Born alive: on kernels that count kills per cgroup, a killed slot would kill it at birth.
    assert after.endswith("alive\n")
    assert after.splitlines()[0] != first.strip()
    run_folder = cgroup._run_cgroup()
    assert run_folder is not None
    assert Path(first.strip().split("::", 1)[1]).name not in os.listdir(run_folder)  # removed


def test_a_program_that_cannot_be_executed_says_why(tmp_path: Path) -> None:
    script = tmp_path / "no-shebang"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    spec = SessionSpec((str(script),), tmp_path, {"PATH": os.defpath}, 30.0, 1.0, 1 << 20)
    with pytest.raises(AgentStartError, match="no program and has no #! line"):
        run_session(spec)


@pytest.mark.skipif(
    cgroup.waiting_mount() is None, reason="this cgroup2 mount has favordynmods: moves never wait, no quickener runs"
)
def test_where_moves_wait_one_quickener_runs_beside_the_sessions_and_is_gone_when_the_run_ends(recall_suite) -> None:
    for number in (1, 2):
        recall_suite.add(f"case_{number}", ["remember 12345.67\n", "what was it?\n"])
    notes = recall_suite.pytester.path / "quickeners.txt"

    result = recall_suite.run(command=recall_suite.agent("quickener_seer", str(notes)), report=False)

    result.assert_outcomes(passed=2)
    seen = notes.read_text(encoding="utf-8").split("\n")[:-1]
    # Every session saw it, and the same one: one quickener a run, started before the first session.
    assert len(seen) == 4
    assert len(set(seen)) == 1
    assert seen[0].isdigit(), seen
    assert not os.path.exists(f"/proc/{seen[0]}"), "the quickener outlived its run"
