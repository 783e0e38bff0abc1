"""Agents born in their session's cgroup by the spawner, and the slot cgroups they are born in.

The spawner (``pytest_recall/sessions/spawner_main.py``) clones each agent
straight into a cgroup, so the harness never moves itself into one; a slot
that emptied by itself is reused, a killed one is not. Real processes, real
cgroups: skipped where this machine gives the harness none.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_recall.sessions import cgroup, spawn, spawner
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


def own_cgroup() -> str:
    return Path("/proc/self/cgroup").read_text().splitlines()[-1]


def test_an_agent_is_born_in_its_slot_without_the_harness_ever_entering_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cgroup.SessionCgroup, "entered", None)  # the fallback would fail loudly
    before = own_cgroup()
    shown, _ = session(tmp_path, "tail -n 1 /proc/self/cgroup")
    assert f"/recall-{os.getpid()}/slot-" in shown
    assert own_cgroup() == before


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


def test_where_the_kernel_refuses_the_clone_the_harness_steps_into_the_cgroup_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise spawner.SpawnerGone("Function not implemented")

    monkeypatch.setattr(spawner, "_refused", False)
    monkeypatch.setattr(spawner.Spawner, "spawn", refused)
    shown, _ = session(tmp_path, "tail -n 1 /proc/self/cgroup")
    assert f"/recall-{os.getpid()}/slot-" in shown
    assert spawner.get() is None  # asked once, then never again


def test_a_workdir_gone_before_the_start_is_the_sessions_start_error(tmp_path: Path) -> None:
    spec = SessionSpec(("/bin/true",), tmp_path / "gone", {"PATH": os.defpath}, 30.0, 1.0, 1 << 20)
    with pytest.raises(AgentStartError, match="setting up its process failed: No such file or directory"):
        run_session(spec)


def test_a_program_that_cannot_be_executed_says_why(tmp_path: Path) -> None:
    script = tmp_path / "no-shebang"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    spec = SessionSpec((str(script),), tmp_path, {"PATH": os.defpath}, 30.0, 1.0, 1 << 20)
    with pytest.raises(AgentStartError, match="no program and has no #! line"):
        run_session(spec)


def test_a_pre_exec_hook_runs_in_the_child_before_its_exec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hooks_module = tmp_path / "recall_test_hook.py"
    hooks_module.write_text("import os\ndef mark():\n    os.environ.clear()\n    os.write(1, b'hooked\\n')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    helper = spawner.get()
    assert helper is not None
    master, slave = spawn._open_terminal()
    out_read, out_write = os.pipe()
    slot = cgroup.SessionCgroup.create()
    assert slot is not None
    try:
        pid, _ = helper.spawn(
            "/bin/echo",
            ["/bin/echo", "exec'd"],
            {},
            str(tmp_path),
            terminal=slave,
            stderr=out_write,
            stdin=None,
            live=False,
            cgroup_fd=slot.fd(),
            hooks=("recall_test_hook:mark",),
        )
        assert os.waitpid(pid, 0)[1] == 0
        os.close(slave)
        seen = os.read(master, 1024).replace(b"\r\n", b"\n")
    finally:
        os.close(master)
        os.close(out_read)
        os.close(out_write)
        slot.remove()
    assert seen == b"hooked\nexec'd\n"
