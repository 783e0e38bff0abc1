"""The sandbox, tested with real bwrap and real processes.

Each test runs a tiny Python agent inside ``wrap_argv`` and reports what it saw,
so a failure shows what leaked, not just that something did.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from needs import needs_bwrap

from pytest_recall.sessions.sandbox import PACKAGE_DIR, SandboxSpec, check_bwrap, default_binds, wrap_argv

RUN_TIMEOUT = 10.0


@dataclass(frozen=True)
class Tree:
    """A fake run on disk: what the session may use, and what it must not see."""

    spec: SandboxSpec
    case_answers: Path
    earlier_session: Path
    basetemp_leftover: Path
    report: Path


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    basetemp = tmp_path / "basetemp"
    case_dir = basetemp / "case_01"
    workdir, scope, earlier = case_dir / "session_2", case_dir / "scope", case_dir / "session_1"
    cost_dir = case_dir / "cost"
    for directory in (workdir, scope, earlier, cost_dir):
        directory.mkdir(parents=True)
    answers = tmp_path / "cases" / "case_01" / "step1.txt"
    answers.parent.mkdir(parents=True)
    answers.write_text("expected: 42\n")
    (earlier / "notes.txt").write_text("the answer is 42\n")
    (basetemp / "leftover.txt").write_text("from another case\n")
    (tmp_path / "report.json").write_text("{}\n")
    spec = SandboxSpec(workdir=workdir, scope=scope, home=None, binds=(), cost_file_dir=cost_dir)
    return Tree(spec, answers, earlier / "notes.txt", basetemp / "leftover.txt", tmp_path / "report.json")


@pytest.fixture
def fresh_check_bwrap() -> Iterator[None]:
    check_bwrap.cache_clear()
    yield
    check_bwrap.cache_clear()


def run_agent(spec: SandboxSpec, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -c code`` in the sandbox; the interpreter is the one running these tests."""
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_DIR.parent)}
    argv = wrap_argv([sys.executable, "-c", code, *args], spec)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)


def observe(spec: SandboxSpec, code: str, *args: str) -> Any:
    """Run code that prints one JSON value, and return that value."""
    result = run_agent(spec, code, *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# argv: "r" or "w", then paths. Prints {path: content read, "ok" for a write, or the OSError's class name}.
PROBE_OPEN = """
import json, sys
mode, outcome = sys.argv[1], {}
for path in sys.argv[2:]:
    try:
        with open(path, mode) as handle:
            outcome[path] = handle.read() if mode == "r" else "ok" if handle.write("x") else "?"
    except OSError as exc:
        outcome[path] = type(exc).__name__
print(json.dumps(outcome))
"""

PROBE_LISTDIR = "import json, os, sys; print(json.dumps(sorted(os.listdir(sys.argv[1]))))"

PROBE_EXISTS = "import json, os, sys; print(json.dumps({p: os.path.exists(p) for p in sys.argv[1:]}))"


def host_pids_with(marker: str) -> list[int]:
    """Host pids whose command line contains marker; pids inside the sandbox differ, the marker does not."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


DAEMON = """
import os, sys, time
heartbeat, marker, then = sys.argv[1], sys.argv[2], sys.argv[3]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        # Like a real daemon: it ignores hangups and holds no pipe open to the harness.
        os.closerange(0, 3)
        while True:
            with open(heartbeat, "a") as handle:
                handle.write(".")
            time.sleep(0.02)
    os._exit(0)
while not os.path.exists(heartbeat):
    time.sleep(0.01)
print("daemon up", flush=True)
if then == "linger":
    time.sleep(60)
"""


def assert_daemon_gone(heartbeat: Path, marker: str) -> None:
    deadline = time.monotonic() + 3
    while host_pids_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = host_pids_with(marker)
    for pid in survivors:  # a broken sandbox must not leave this test's daemons behind
        os.kill(pid, signal.SIGKILL)
    assert survivors == []
    size = heartbeat.stat().st_size
    time.sleep(0.2)
    assert heartbeat.stat().st_size == size, "the daemon still writes to the scope"


@needs_bwrap
def test_workdir_scope_and_cost_dir_are_writable(tree: Tree) -> None:
    spec = tree.spec
    assert spec.cost_file_dir is not None
    targets = [spec.workdir / "a", spec.scope / "b", spec.cost_file_dir / "cost.json", Path("/tmp/c")]
    outcome = observe(spec, PROBE_OPEN, "w", *map(str, targets))
    assert outcome == {str(path): "ok" for path in targets}
    assert (spec.scope / "b").read_text() == "x"


@needs_bwrap
def test_everything_outside_the_session_dirs_is_read_only(tree: Tree) -> None:
    targets = ["/x", "/etc/x", "/usr/x", str(PACKAGE_DIR / "x"), str(Path(sys.prefix) / "x")]
    outcome = observe(tree.spec, PROBE_OPEN, "w", *targets)
    assert all(result in ("OSError", "PermissionError") for result in outcome.values()), outcome


@needs_bwrap
def test_session_cannot_see_cases_other_sessions_basetemp_or_reports(tree: Tree) -> None:
    repo_cases = PACKAGE_DIR.parent / "cases"
    hidden = [tree.case_answers, tree.earlier_session, tree.basetemp_leftover, tree.report, repo_cases]
    assert all(path.exists() for path in hidden[:4])
    outcome = observe(tree.spec, PROBE_EXISTS, *map(str, hidden))
    assert outcome == {str(path): False for path in hidden}


@needs_bwrap
def test_fresh_tmp_shows_only_the_way_to_the_session_dirs(tree: Tree) -> None:
    case_dir = tree.spec.workdir.parent
    assert observe(tree.spec, PROBE_LISTDIR, str(case_dir)) == ["cost", "scope", "session_2"]
    # Inside, /tmp holds only the first step of each path bound below it: the session's own
    # directories, and the interpreter's install when it lives under /tmp (a clone there, say).
    bound = [tree.spec.workdir, *tree.spec.binds, *default_binds()]
    expected = sorted({path.relative_to("/tmp").parts[0] for path in bound if Path("/tmp") in path.parents})
    assert observe(tree.spec, PROBE_LISTDIR, "/tmp") == expected


@needs_bwrap
def test_hidden_path_under_a_user_bind_is_masked(tree: Tree, tmp_path: Path) -> None:
    cases = tree.case_answers.parent.parent
    spec = replace(tree.spec, binds=(tmp_path,), hide=(cases, tree.report))
    outcome = observe(spec, PROBE_EXISTS, str(tree.case_answers), str(cases), str(tmp_path / "basetemp"))
    assert outcome == {str(tree.case_answers): False, str(cases): True, str(tmp_path / "basetemp"): True}
    assert observe(spec, PROBE_OPEN, "r", str(tree.report)) == {str(tree.report): "PermissionError"}
    assert observe(spec, PROBE_OPEN, "w", str(spec.workdir / "still-writable")) == {
        str(spec.workdir / "still-writable"): "ok"
    }


@needs_bwrap
def test_proc_shows_only_the_sandbox_processes(tree: Tree) -> None:
    code = "import glob, json; print(json.dumps([open(path).read() for path in glob.glob('/proc/[0-9]*/cmdline')]))"
    programs = sorted(cmdline.split("\0")[0] for cmdline in observe(tree.spec, code))
    assert programs == sorted(["bwrap", sys.executable])  # bwrap's init inside the namespace, and the agent


@needs_bwrap
def test_home_is_an_empty_tmpfs_at_the_usual_path_when_not_configured(tree: Tree) -> None:
    marker = f"recall-home-probe-{uuid.uuid4().hex}"
    code = (
        "import json, os, sys; home = os.environ['HOME']; listing = os.listdir(home);"
        "open(os.path.join(home, sys.argv[1]), 'w').close(); print(json.dumps([home, listing]))"
    )
    home, listing = observe(tree.spec, code, marker)
    # Only the mount points of read-only binds that live under the real home, such as ~/.pyenv.
    under_home = {bind.relative_to(Path.home()).parts[0] for bind in default_binds() if Path.home() in bind.parents}
    assert home == str(Path.home()) and set(listing) <= under_home
    assert not (Path.home() / marker).exists()


@needs_bwrap
def test_home_is_the_configured_dir_inside_scope(tree: Tree) -> None:
    home = tree.spec.scope / "home"
    home.mkdir()
    (home / ".agentrc").write_text("remembered\n")
    spec = replace(tree.spec, home=home)
    code = "import json, os; home = os.environ['HOME']; print(json.dumps([home, open(home + '/.agentrc').read()]))"
    assert observe(spec, code) == [str(home), "remembered\n"]


@needs_bwrap
def test_real_home_stays_hidden_with_a_case_home_even_under_a_bind(
    tree: Tree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_home = tmp_path / "real-home"
    (real_home / ".agent").mkdir(parents=True)
    (real_home / ".agent" / "memory.json").write_text('{"answer": 42}')
    monkeypatch.setenv("HOME", str(real_home))
    case_home = tree.spec.scope / "home"
    case_home.mkdir()
    spec = replace(tree.spec, home=case_home, binds=(tmp_path,))
    outcome = observe(spec, PROBE_EXISTS, str(real_home / ".agent"), str(case_home))
    assert outcome == {str(real_home / ".agent"): False, str(case_home): True}


def test_home_of_root_dir_falls_back_to_a_tmp_home(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/")
    argv = wrap_argv(["agent"], tree.spec)
    assert "--tmpfs /tmp/recall-home" in " ".join(argv) and "--setenv HOME /tmp/recall-home" in " ".join(argv)


@needs_bwrap
def test_interpreter_and_package_are_reachable_but_not_the_repo(tree: Tree) -> None:
    code = "import json, os, sys, pytest_recall.sessions.sandbox as m;"
    code += " print(json.dumps([sys.executable, m.__file__, os.getcwd(), os.listdir(sys.argv[1])]))"
    repo = PACKAGE_DIR.parent
    executable, module_file, cwd, repo_listing = observe(tree.spec, code, str(repo))
    assert (executable, cwd) == (sys.executable, str(tree.spec.workdir))
    assert Path(module_file).parent.parent == PACKAGE_DIR
    # A venv inside the repo (such as .venv) is an interpreter prefix and rightly bound; nothing else is.
    prefixes = {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    allowed = {PACKAGE_DIR.name} | {prefix.relative_to(repo).parts[0] for prefix in prefixes if repo in prefix.parents}
    assert set(repo_listing) <= allowed and PACKAGE_DIR.name in repo_listing
    assert (repo / "cases").is_dir() and "cases" not in repo_listing
    assert observe(tree.spec, PROBE_EXISTS, str(repo / "cases")) == {str(repo / "cases"): False}


@needs_bwrap
def test_agent_exit_status_reaches_the_runner(tree: Tree) -> None:
    assert run_agent(tree.spec, "raise SystemExit(3)").returncode == 3


@needs_bwrap
def test_no_capabilities_inside_even_as_root(tree: Tree) -> None:
    code = "import json; print(json.dumps([l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')]))"
    assert observe(tree.spec, code) == ["0000000000000000"]


@needs_bwrap
def test_daemon_dies_when_the_agent_exits(tree: Tree) -> None:
    marker, heartbeat = f"recall-daemon-{uuid.uuid4().hex}", tree.spec.scope / "heartbeat"
    result = run_agent(tree.spec, DAEMON, str(heartbeat), marker, "exit")
    assert result.stdout == "daemon up\n", result.stderr
    assert_daemon_gone(heartbeat, marker)


@needs_bwrap
def test_daemon_dies_when_the_runner_kills_bwrap(tree: Tree) -> None:
    marker, heartbeat = f"recall-daemon-{uuid.uuid4().hex}", tree.spec.scope / "heartbeat"
    argv = wrap_argv([sys.executable, "-c", DAEMON, str(heartbeat), marker, "linger"], tree.spec)
    bwrap = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert bwrap.stdout is not None
        assert bwrap.stdout.readline() == "daemon up\n"
        assert len(host_pids_with(marker)) >= 2  # at least the lingering agent and its daemon
    finally:
        bwrap.kill()
        bwrap.communicate(timeout=RUN_TIMEOUT)
    assert_daemon_gone(heartbeat, marker)


@needs_bwrap
def test_output_and_input_flow_through_the_harness_pty_despite_new_session(tree: Tree) -> None:
    code = (
        "import os, sys; line = sys.stdin.readline().strip();"
        "\ntry:\n    open('/dev/tty').close(); tty = 'yes'\nexcept OSError:\n    tty = 'no'\n"
        "print(f'got:{line} isatty:{os.isatty(1)} devtty:{tty}', flush=True)"
    )
    # Like pexpect, make the pty bwrap's controlling terminal; setsid(1) avoids forking a threaded pytest.
    argv = ["setsid", "--ctty", *wrap_argv([sys.executable, "-c", code], tree.spec)]
    master, slave = pty.openpty()
    bwrap = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    output = b""
    try:
        os.write(master, b"ping\n")
        deadline = time.monotonic() + RUN_TIMEOUT
        while b"devtty:" not in output and time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                output += os.read(master, 4096)
    finally:
        bwrap.kill()
        bwrap.wait(timeout=RUN_TIMEOUT)
        os.close(master)
    assert b"got:ping isatty:True devtty:no" in output, output


@needs_bwrap
def test_agent_in_a_venv_runs_with_its_packages(tree: Tree, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=RUN_TIMEOUT)
    site_packages = next(venv.glob("lib/python*/site-packages"))
    (site_packages / "agent_memory_lib.py").write_text("WHERE = __file__\n")
    # The runner lives in the venv, so default_binds() must find the venv and its base interpreter.
    runner = f"""
import subprocess, sys
from pathlib import Path
from pytest_recall.sessions.sandbox import SandboxSpec, wrap_argv
spec = SandboxSpec(workdir=Path({str(tree.spec.workdir)!r}), scope=Path({str(tree.spec.scope)!r}),
                   home=None, binds=(), cost_file_dir=None)
agent = [sys.executable, "-c", "import agent_memory_lib, sys; print(sys.prefix, agent_memory_lib.WHERE)"]
raise SystemExit(subprocess.run(wrap_argv(agent, spec), timeout={RUN_TIMEOUT}).returncode)
"""
    # The venv holds the agent's package; pytest-recall's own dependencies (pexpect, pyte) come from this one.
    dependencies = sysconfig.get_paths()["purelib"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PACKAGE_DIR.parent), dependencies])}
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-c", runner], env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(venv), str(site_packages / "agent_memory_lib.py")]


@needs_bwrap
def test_check_bwrap_passes_here(fresh_check_bwrap: None) -> None:
    assert check_bwrap() is None


def test_check_bwrap_says_how_to_install_when_missing(
    fresh_check_bwrap: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    message = check_bwrap()
    assert message is not None and "\n" not in message
    assert "apt-get install bubblewrap" in message and "dnf install bubblewrap" in message


def test_missing_bind_is_one_clear_error(tree: Tree, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-agent"
    expected = r"^sandbox: --recall-sandbox-bind path does not exist: .*/no-such-agent "
    with pytest.raises(ValueError, match=expected) as info:
        wrap_argv(["agent"], replace(tree.spec, binds=(missing,)))
    assert "\n" not in str(info.value)


def test_empty_argv_is_rejected(tree: Tree) -> None:
    with pytest.raises(ValueError, match="argv is empty"):
        wrap_argv([], tree.spec)


def test_agent_argv_is_never_read_as_bwrap_options(tree: Tree) -> None:
    argv = wrap_argv(["--help", "remember 42"], tree.spec)
    assert argv[0] == "bwrap" and argv[-3:] == ["--", "--help", "remember 42"]


def test_default_binds_have_the_package_but_not_the_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    repo_root = PACKAGE_DIR.parent
    monkeypatch.setattr(sys, "path", ["", str(repo_root), str(repo_root / "tests"), *sys.path])
    binds = default_binds()
    assert PACKAGE_DIR in binds
    assert not any(repo_root == bind or bind in repo_root.parents for bind in binds)
    assert Path(sys.prefix) in binds and Path(sys.base_prefix) in binds
