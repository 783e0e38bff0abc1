"""The slot cgroups sessions are born in: one that emptied by itself is reused, a killed one is not.

Real processes, real cgroups: skipped where this machine gives the harness none.
"""

from __future__ import annotations

import os
import subprocess
import sys
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


# A harness whose pid a killed one had: the dead one's folder (with a slot in it) is there when it starts.
TAKES_OVER = """
import os, sys
from pytest_recall.sessions import cgroup
home = cgroup.cgroup2_home()
stale = home / f"recall-{os.getpid()}"
(stale / "judge-0").mkdir(parents=True)
slot = cgroup.SessionCgroup.create(kind="judge")
print(slot.path.parent.name, stale.name)
slot.remove()
"""


def test_a_harness_never_takes_over_the_folder_a_dead_one_with_its_pid_left(tmp_path: Path) -> None:
    """A pid names a process for a while only (pid_max is 32768 here): a new harness with a dead one's pid made its
    slots in the dead one's folder, which another harness's sweep, having found that pid dead, was emptying with
    cgroup.kill; a harness caught in a slot for a spawn died by SIGKILL. Its folder is its own, by start time."""
    script = tmp_path / "takes_over.py"
    script.write_text(TAKES_OVER, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    used, stale = done.stdout.split()
    assert used != stale and used.startswith(stale + "-")
    home = cgroup.cgroup2_home()
    assert home is not None
    cgroup._sweep(home)  # the stale folder's pid is gone with its process: swept
    assert not (home / stale).exists() and not (home / used).exists()


def test_the_sweep_takes_a_folder_whose_pid_another_process_now_has(tmp_path: Path) -> None:
    """A folder named for a running pid but another start time is a dead harness's: what runs in it is killed and
    the folder removed, nested folders too; the folder of the process that has the pid now is left alone."""
    holder = subprocess.Popen(["sleep", "60"])
    try:
        home = cgroup.cgroup2_home()
        assert home is not None
        stale = home / f"recall-{holder.pid}-1"
        (stale / "slot-0" / "recall-1-1").mkdir(parents=True)
        left = subprocess.Popen(["sleep", "60"])
        (stale / "slot-0" / "cgroup.procs").write_text(str(left.pid))
        live = home / f"recall-{holder.pid}-{cgroup._start_time(holder.pid)}"
        live.mkdir()
        try:
            cgroup._sweep(home)
            assert left.wait(timeout=10) == -9
            assert not stale.exists() and live.exists()
        finally:
            live.rmdir()
    finally:
        holder.kill()
        holder.wait()
