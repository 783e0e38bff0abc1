"""Issue 14, items 1, 2, 4, 5 and 7: holes a red-team pass found in the sessions and the sandbox.

Each test drives a real pytest run (``runpytest_subprocess``) with a hostile
agent from ``tests/hostile/`` or a fault injected for real, and checks what the
agent or the fault managed to do.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from needs import needs_bwrap
from processes import processes_with

from pytest_recall.sessions.cgroup import available as cgroups_available
from pytest_recall.sessions.cgroup import cgroup2_home as cgroup_home

HOSTILE_DIR = Path(__file__).resolve().parent / "hostile"
ANSWER = "12345.67"


def survivors(marker: str, settle_s: float = 3.0) -> list[int]:
    """Processes still alive after a moment for killed ones to be reaped; they are killed on the way out."""
    deadline = time.monotonic() + settle_s
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = processes_with(marker)
    for pid in alive:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return alive


def hostile(name: str, *args: str) -> str:
    return shlex.join([sys.executable, str(HOSTILE_DIR / f"{name}.py"), *args])


# -- item 7: an error while starting a session -------------------------------------------------

# No free descriptor while the first item runs: the stderr pipe of every session it starts
# (its own and the look-ahead's) fails with EMFILE. The descriptors are given back at its teardown.
EMFILE_CONFTEST = """
import os, resource
import pytest

held = []

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if "case_a" in item.nodeid:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        try:
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass
        # LEAVE descriptors left: with one, the case's files are read one at a time, but no pipe (two) is made.
        for _ in range(LEAVE):
            os.close(held.pop())

@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    while held:
        os.close(held.pop())
"""


def test_a_session_that_cannot_open_its_stderr_pipe_is_its_cases_error_and_nothing_hangs(recall_suite: Any) -> None:
    for name in ("case_a", "case_b", "case_c"):
        recall_suite.add(name, ["remember 12345.67", "recall"], ANSWER)
    recall_suite.pytester.makeconftest(EMFILE_CONFTEST.replace("LEAVE", "1"))
    result = recall_suite.run("--recall-concurrency=2", timeout=60)
    records = recall_suite.records()
    for name in ("case_a", "case_b"):  # case_b is started early, as case_a's look-ahead
        assert "Too many open files" in str(records[name].get("error")), records[name]
    assert records["case_c"]["score"] == 1.0, records["case_c"]
    result.assert_outcomes(passed=1, errors=2)


def test_a_case_the_harness_has_no_descriptor_to_read_again_is_an_error_not_a_changed_case(recall_suite: Any) -> None:
    for name in ("case_a", "case_b"):
        recall_suite.add(name, ["remember 12345.67", "recall"], ANSWER)
    recall_suite.pytester.makeconftest(EMFILE_CONFTEST.replace("LEAVE", "0"))
    result = recall_suite.run(timeout=60)
    records = recall_suite.records()
    assert "Too many open files" in str(records["case_a"].get("error")), records["case_a"]
    assert records["case_a"]["score"] is None and "changed on disk" not in str(records["case_a"])
    assert records["case_b"]["score"] == 1.0
    result.assert_outcomes(passed=1, errors=1)


# -- item 1: the same folder under another spelling ---------------------------------------------


def spelling_tree(pytester: pytest.Pytester, *, git: bool = False) -> tuple[Path, Path]:
    """``real/cases/suite/case_x`` and ``link -> real``; with ``git``, ``real`` is a repository holding the case."""
    real = pytester.path / "real"
    folder = real / "cases" / "suite" / "case_x"
    folder.mkdir(parents=True)
    (folder / "step1.txt").write_text("Remember the balance 48213.57.", encoding="utf-8")
    (folder / "step2.txt").write_text("What was the balance?", encoding="utf-8")
    expected = {"id": "case_x", "category": "recall", "answer": "48213.57", "answer_kind": "money"}
    (folder / "answer.json").write_text(json.dumps(expected), encoding="utf-8")
    link = pytester.path / "link"
    link.symlink_to(real, target_is_directory=True)
    if git:
        quiet = {"cwd": real, "check": True, "capture_output": True}
        subprocess.run(["git", "init", "-q"], **quiet)  # type: ignore[call-overload]
        subprocess.run(["git", "add", "."], **quiet)  # type: ignore[call-overload]
        identity = ["-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(["git", *identity, "commit", "-qm", "cases"], **quiet)  # type: ignore[call-overload]
    return real, link


@needs_bwrap
@pytest.mark.parametrize("given", ["link", "real"])
def test_a_bind_that_reaches_the_cases_through_another_spelling_exposes_no_answer(
    pytester: pytest.Pytester, given: str
) -> None:
    real, link = spelling_tree(pytester)
    cases, bound = (link, real) if given == "link" else (real, link)
    result = pytester.runpytest_subprocess(
        str(cases / "cases"),
        "-p",
        "no:cacheprovider",
        f"--recall-cmd={hostile('spelling_reader', str(real), str(link))}",
        "--recall-sandbox=bwrap",
        f"--recall-sandbox-bind={bound},{HOSTILE_DIR}",
        f"--recall-report={pytester.path / 'report.json'}",
        timeout=120,
    )
    record = json.loads((pytester.path / "report.json").read_text())["cases"][0]
    assert record["steps"][-1]["stdout"].strip().splitlines()[-1] == "NOTFOUND", record["steps"][-1]["stdout"]
    result.assert_outcomes(failed=1)


@needs_bwrap
def test_a_bound_repository_that_holds_the_cases_shows_no_git_objects(pytester: pytest.Pytester) -> None:
    real, link = spelling_tree(pytester, git=True)
    result = pytester.runpytest_subprocess(
        str(real / "cases"),
        "-p",
        "no:cacheprovider",
        f"--recall-cmd={hostile('spelling_reader', str(real), str(link))}",
        "--recall-sandbox=bwrap",
        f"--recall-sandbox-bind={link},{HOSTILE_DIR}",
        f"--recall-report={pytester.path / 'report.json'}",
        timeout=120,
    )
    record = json.loads((pytester.path / "report.json").read_text())["cases"][0]
    assert record["steps"][-1]["stdout"].strip().splitlines()[-1] == "NOTFOUND", record["steps"][-1]["stdout"]
    result.assert_outcomes(failed=1)


@needs_bwrap
def test_a_bind_inside_the_repository_that_holds_the_cases_is_one_usage_line(pytester: pytest.Pytester) -> None:
    real, link = spelling_tree(pytester, git=True)
    result = pytester.runpytest_subprocess(
        str(real / "cases"),
        "-p",
        "no:cacheprovider",
        f"--recall-cmd={hostile('spelling_reader', str(real))}",
        "--recall-sandbox=bwrap",
        f"--recall-sandbox-bind={link / '.git' / 'objects'},{HOSTILE_DIR}",
        timeout=120,
    )
    result.stderr.fnmatch_lines(
        ["*--recall-sandbox-bind: *objects lies in *.git, the git repository that holds the cases*"]
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR


# -- item 2: the kernel keyring ------------------------------------------------------------------


def keyring_case(pytester: pytest.Pytester) -> Path:
    folder = pytester.path / "cases" / "suite" / "case_k"
    folder.mkdir(parents=True)
    (folder / "step1.txt").write_text("Remember the balance 48213.57.", encoding="utf-8")
    (folder / "step2.txt").write_text("What was the balance?", encoding="utf-8")
    expected = {"id": "case_k", "category": "recall", "answer": "48213.57", "answer_kind": "money"}
    (folder / "answer.json").write_text(json.dumps(expected), encoding="utf-8")
    return folder


def keyring_run(pytester: pytest.Pytester, name: str, ring: str, *args: str) -> list[dict[str, Any]]:
    pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        f"--recall-cmd={hostile('keyring', name, ring)}",
        f"--recall-report={pytester.path / 'report.json'}",
        *args,
        timeout=120,
    )
    cases: list[dict[str, Any]] = json.loads((pytester.path / "report.json").read_text())["cases"]
    return cases


KEYRING_DENIED = "add_key failed: Function not implemented"
SANDBOX_ARGS = ("--recall-sandbox=bwrap", f"--recall-sandbox-bind={HOSTILE_DIR}")
KEYRING_MODES = [
    pytest.param("session", (), id="session-keyring-default-mode"),
    pytest.param("session", SANDBOX_ARGS, id="session-keyring-sandbox", marks=needs_bwrap),
    pytest.param("user", SANDBOX_ARGS, id="user-keyring-sandbox", marks=needs_bwrap),
]


@pytest.mark.parametrize(("ring", "args"), KEYRING_MODES)
def test_step_two_cannot_read_a_key_step_one_added(pytester: pytest.Pytester, ring: str, args: tuple[str, ...]) -> None:
    keyring_case(pytester)
    name = f"recall-hostile-{uuid.uuid4().hex[:12]}"
    record = keyring_run(pytester, name, ring, *args)[0]
    # Issue 26: agents get no keyring at all (sessions.seccomp); the key is never stored.
    assert record["steps"][0]["stdout"].strip() == KEYRING_DENIED, record["steps"][0]
    assert record["steps"][-1]["stdout"].strip() == "NOTFOUND", record["steps"][-1]


@needs_bwrap
def test_a_later_runs_control_items_cannot_read_an_earlier_runs_keys(pytester: pytest.Pytester) -> None:
    keyring_case(pytester)
    name = f"recall-hostile-{uuid.uuid4().hex[:12]}"
    first = keyring_run(pytester, name, "user", *SANDBOX_ARGS)[0]
    assert first["steps"][0]["stdout"].strip() == KEYRING_DENIED, first["steps"][0]
    controls = [r for r in keyring_run(pytester, name, "user", *SANDBOX_ARGS, "--recall-control") if r["control"]]
    assert controls, "the second run had no control item"
    assert [r["steps"][-1]["stdout"].strip() for r in controls] == ["NOTFOUND"]
    assert controls[0]["score"] == 0.0


# -- item 5: processes that outrun the reaper ----------------------------------------------------

RACES = 50


AS_ROOT = pytest.mark.skipif(os.getuid() != 0, reason="changing uid needs root")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("mode", ["race", pytest.param("uid", marks=AS_ROOT)])
def test_no_process_outruns_the_default_mode_reaper(pytester: pytest.Pytester, mode: str) -> None:
    marker = f"escaper-{uuid.uuid4().hex[:12]}"
    for number in range(RACES // 2):  # two sessions per case
        folder = pytester.path / "cases" / "suite" / f"case_{number:02d}"
        folder.mkdir(parents=True)
        (folder / "step1.txt").write_text("Say 1.00", encoding="utf-8")
        (folder / "step2.txt").write_text("Say 12345.67", encoding="utf-8")
        expected = {"id": folder.name, "category": "recall", "answer": ANSWER, "answer_kind": "money"}
        (folder / "answer.json").write_text(json.dumps(expected), encoding="utf-8")
    try:
        result = pytester.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            f"--recall-cmd={hostile('escaper', marker, mode)}",
            "--recall-concurrency=4",
            timeout=300,
        )
        result.assert_outcomes(passed=RACES // 2)
        alive = survivors(marker)
    finally:
        survivors(marker, settle_s=0)
    assert alive == [], f"{len(alive)} processes outlived their sessions"


# -- item 4: sessions that meet over abstract sockets, and the model server on the host's loopback --


def simple_case(pytester: pytest.Pytester, name: str, steps: tuple[str, ...], answer: str = "48213.57") -> None:
    folder = pytester.path / "cases" / "suite" / name
    folder.mkdir(parents=True)
    for number, text in enumerate(steps, start=1):
        (folder / f"step{number}.txt").write_text(text, encoding="utf-8")
    expected = {"id": name, "category": "recall", "answer": answer, "answer_kind": "money"}
    (folder / "answer.json").write_text(json.dumps(expected), encoding="utf-8")


RELAY_MODES = [
    pytest.param("private", False, marks=needs_bwrap),
    pytest.param("none", False, marks=needs_bwrap),
    pytest.param("host", True, marks=needs_bwrap),
    pytest.param("default-mode", True),
]


@pytest.mark.parametrize(("net", "recovered"), RELAY_MODES)
def test_concurrent_sessions_cannot_relay_over_abstract_sockets(
    pytester: pytest.Pytester, net: str, recovered: bool
) -> None:
    simple_case(pytester, "case_a_keeper", ("keep", "keep"))
    simple_case(pytester, "case_b", ("Remember the balance 48213.57.", "What was the balance?"))
    pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        f"--recall-cmd={hostile('relay', f'recall-relay-{uuid.uuid4().hex[:12]}')}",
        "--recall-concurrency=2",
        *(() if net == "default-mode" else (*SANDBOX_ARGS, f"--recall-sandbox-net={net}")),
        f"--recall-report={pytester.path / 'report.json'}",
        timeout=120,
    )
    records = {r["id"]: r for r in json.loads((pytester.path / "report.json").read_text())["cases"]}
    answer = records["case_b"]["steps"][-1]["stdout"].strip()
    assert (answer == "48213.57") is recovered, records["case_b"]["steps"]


@needs_bwrap
def test_a_sandboxed_agent_reaches_a_server_on_the_hosts_loopback(pytester: pytest.Pytester) -> None:
    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"48213.57"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        simple_case(pytester, "case_http", ("Remember the balance 48213.57.", "What was the balance?"))
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", f"--recall-cmd={hostile('fetcher', url)}", *SANDBOX_ARGS, timeout=120
        )
    finally:
        server.shutdown()
        server.server_close()
    result.assert_outcomes(passed=1)


# Where no cgroup can be made (not root, no delegation): the run falls back to the group and token scan.
NO_CGROUP_CONFTEST = """
from pytest_recall.sessions import cgroup

cgroup.SessionCgroup.create = classmethod(lambda cls, name: None)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@AS_ROOT
def test_without_cgroups_a_daemon_that_changed_uid_is_still_killed_by_its_token(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(NO_CGROUP_CONFTEST)
    marker = f"escaper-{uuid.uuid4().hex[:12]}"
    simple_case(pytester, "case_uid", ("Say 1.00", "Say 12345.67"), answer=ANSWER)
    try:
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", f"--recall-cmd={hostile('escaper', marker, 'uid')}", timeout=120
        )
        result.assert_outcomes(passed=1)
        alive = survivors(marker)
    finally:
        survivors(marker, settle_s=0)
    assert alive == []


@pytest.mark.skipif(not cgroups_available(), reason="no writable cgroup v2 here")
def test_what_a_killed_harness_left_in_its_cgroups_is_killed_and_swept_by_the_next_run(
    pytester: pytest.Pytester,
) -> None:
    home = cgroup_home()
    assert home is not None
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    left = home / f"recall-{int(dead.stdout)}" / "session"
    left.mkdir(parents=True)
    marker = f"left-by-a-dead-harness-{uuid.uuid4().hex[:12]}"
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", marker])
    try:
        (left / "cgroup.procs").write_text(str(orphan.pid))
        simple_case(pytester, "case_ok", ("Say 1.00", "Say 12345.67"), answer=ANSWER)
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", f"--recall-cmd={hostile('escaper', marker + '-agent', 'race')}", timeout=120
        )
        result.assert_outcomes(passed=1)
        assert orphan.wait(timeout=10) == -signal.SIGKILL
        assert not left.parent.exists()
    finally:
        orphan.kill()
        orphan.wait()
        survivors(marker, settle_s=0)
