"""Hostile agents against the real harness: each is a program in ``tests/hostile/``.

Every test runs pytest-recall in a subprocess over case folders in a pytester
directory, in the default mode and (where bwrap works) under
``--recall-sandbox=bwrap``, and checks what the agent managed to do: find an
answer, exhaust memory, leave a process, hang, crash the report, or change a
case. Survivors are found by a marker each agent puts in the command line of
every process it starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sys
import time
import uuid
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
from needs import needs_bwrap
from processes import processes_with

from pytest_recall.sessions.cgroup import available as cgroups_available

HOSTILE_DIR = Path(__file__).resolve().parent / "hostile"
MODES = [pytest.param("none", id="default"), pytest.param("bwrap", id="sandbox", marks=needs_bwrap)]
ANSWER = "12345.67"


def hostile(name: str, *args: str) -> str:
    """The ``--recall-cmd`` that runs ``tests/hostile/<name>.py`` with this interpreter."""
    return shlex.join([sys.executable, str(HOSTILE_DIR / f"{name}.py"), *args])


def mode_args(mode: str) -> list[str]:
    """The sandbox flags of a mode; the agents' own folder is the one extra bind, as for any installed agent."""
    return [f"--recall-sandbox={mode}", f"--recall-sandbox-bind={HOSTILE_DIR}"] if mode == "bwrap" else []


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


def last_stdout(record: dict[str, Any]) -> str:
    return str(record["steps"][-1]["stdout"])


# -- snooper -------------------------------------------------------------------


def snoop_case(recall_suite: Any) -> tuple[Path, str]:
    key = f"ZK-{uuid.uuid4().hex[:12]}"
    table = f"Remember this table:\n{key} balance {ANSWER}\nZK-0 balance 1.00\n"
    folder = recall_suite.add("snoop", [table, f"What is the balance of {key}?"], ANSWER)
    return folder, key


def snoop(recall_suite: Any, mode: str) -> tuple[list[str], str]:
    snoop_case(recall_suite)
    # 45 s to search: a walk of a few seconds on a quiet machine, and what a busy one (CI's installs) needs.
    recall_suite.run("--recall-timeout=60", *mode_args(mode), command=hostile("snooper", "45"))
    stdout = last_stdout(recall_suite.records()["snoop"])
    lines = stdout.splitlines()
    assert "BUDGET enough" in lines, stdout  # it searched everything in reach, not just what time allowed
    return [line.split(" ", 1)[1] for line in lines if line.startswith("FOUND ")], lines[-1]


@needs_bwrap
def test_snooper_in_the_sandbox_finds_its_step_one_table_nowhere(recall_suite: Any) -> None:
    found, answer = snoop(recall_suite, "bwrap")
    assert found == [] and answer == "NOTFOUND"


def test_snooper_without_sandbox_finds_nothing_outside_the_case_folder_it_was_pointed_at(recall_suite: Any) -> None:
    found, answer = snoop(recall_suite, "none")
    case_folder = str(recall_suite.root / "suite" / "snoop") + os.sep
    # The default mode cannot hide the folder pytest was given; that it is found proves the hunt is real.
    assert found and answer == ANSWER
    assert [where for where in found if not where.startswith(f"file:{case_folder}")] == []


# -- flood ---------------------------------------------------------------------

RSS_PROBE = """
import json, os

START = {}


def _status(field):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith(field + ":"))


def pytest_collection_finish(session):
    START["rss"] = _status("VmRSS")


def pytest_unconfigure(config):
    with open(os.environ["RSS_PROBE_FILE"], "w") as handle:
        json.dump({"start": START.get("rss"), "peak": _status("VmHWM")}, handle)
"""


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "flood_mb"), [("none", 256), pytest.param("bwrap", 64, marks=needs_bwrap)])
def test_flood_is_capped_the_final_line_still_judged_and_memory_stays_flat(
    recall_suite: Any, monkeypatch: pytest.MonkeyPatch, mode: str, flood_mb: int
) -> None:
    recall_suite.pytester.makeconftest(RSS_PROBE)
    probe_file = recall_suite.pytester.path / "rss.json"
    monkeypatch.setenv("RSS_PROBE_FILE", str(probe_file))
    recall_suite.add("flood", ["warm up: say 1.00", f"now flood, then answer {ANSWER}"], ANSWER)
    flood = flood_mb * 1024 * 1024
    result = recall_suite.run("--recall-timeout=120", *mode_args(mode), command=hostile("flood", str(flood)))
    result.assert_outcomes(passed=1)
    step = recall_suite.records()["flood"]["steps"][-1]
    assert step["truncated"] is True and step["stdout_bytes"] > flood
    assert last_stdout(recall_suite.records()["flood"]).splitlines()[-1] == ANSWER
    rss = json.loads(probe_file.read_text())
    growth_mb = (rss["peak"] - rss["start"]) / 2**20
    print(f"flood {flood_mb} MB: harness peak RSS growth {growth_mb:.1f} MB")
    assert growth_mb < 100


# -- processes left behind -----------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_forker_children_and_setsid_daemon_do_not_outlive_the_session(recall_suite: Any, mode: str) -> None:
    marker = f"recall-forker-{uuid.uuid4().hex}"
    recall_suite.add("forker", ["fork and say 1.00", f"fork again and say {ANSWER}"], ANSWER)
    result = recall_suite.run(*mode_args(mode), command=hostile("forker", marker, "plain"))
    result.assert_outcomes(passed=1)
    assert survivors(marker) == []
    if mode == "none":
        # At least the daemon, which only the session token ties to it; the two children in the
        # agent's group may already have died of the hangup its exit sent them.
        assert all(step["killed_leftovers"] >= 1 for step in recall_suite.records()["forker"]["steps"])


@needs_bwrap
def test_sandbox_kills_a_daemon_that_scrubs_its_environment_and_leaves_the_group(recall_suite: Any) -> None:
    marker = f"recall-forker-{uuid.uuid4().hex}"
    recall_suite.add("forker", ["fork and say 1.00", f"fork again and say {ANSWER}"], ANSWER)
    recall_suite.run(*mode_args("bwrap"), command=hostile("forker", marker, "scrub")).assert_outcomes(passed=1)
    assert survivors(marker) == []


def test_default_mode_a_daemon_that_scrubs_its_environment_and_leaves_the_group_escapes_only_without_cgroups(
    recall_suite: Any,
) -> None:
    """Documents the stated limit: with a cgroup per session it is gone; without one, the daemon escapes."""
    marker = f"recall-forker-{uuid.uuid4().hex}"
    recall_suite.add("forker", ["fork and say 1.00", f"fork again and say {ANSWER}"], ANSWER)
    recall_suite.run(command=hostile("forker", marker, "scrub")).assert_outcomes(passed=1)
    escaped = survivors(marker, settle_s=0.5)
    # One daemon per step without cgroups; survivors() has killed them now.
    assert len(escaped) == (0 if cgroups_available() else 2)


@pytest.mark.parametrize("mode", MODES)
def test_stubborn_agent_ignoring_sigterm_is_killed_at_the_grace_deadline_and_scored_as_timeout(
    recall_suite: Any, mode: str
) -> None:
    marker = f"recall-stubborn-{uuid.uuid4().hex}"
    recall_suite.add("stubborn", ["say 1.00", f"say {ANSWER}"], ANSWER)
    result = recall_suite.run(
        "--recall-timeout=1", "--recall-grace=0.5", *mode_args(mode), command=hostile("stubborn", marker)
    )
    result.assert_outcomes(failed=1)
    record = recall_suite.records()["stubborn"]
    assert (record["score"], record["reason"], record["error"]) == (0.0, "timeout in step 1", None)
    assert record["steps"][0]["timed_out"] is True and len(record["steps"]) == 1
    assert survivors(marker) == []


# -- output that is not text ---------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_binary_output_is_judged_without_a_crash_and_reports_stay_valid(recall_suite: Any, mode: str) -> None:
    recall_suite.add("binary", ["say 1.00", f"say {ANSWER}"], ANSWER)
    junit = recall_suite.pytester.path / "junit.xml"
    right = recall_suite.run(f"--junitxml={junit}", *mode_args(mode), command=hostile("binary", "right"))
    right.assert_outcomes(passed=1)
    ElementTree.parse(junit)
    wrong = recall_suite.run(f"--junitxml={junit}", *mode_args(mode), command=hostile("binary", "wrong"))
    wrong.assert_outcomes(failed=1)
    ElementTree.parse(junit)  # the failure text quotes the garbage
    assert "INTERNALERROR" not in wrong.stdout.str() + wrong.stderr.str()
    text = recall_suite.report_path.read_bytes().decode("utf-8")  # strict: no lone surrogate got through
    record = json.loads(text)["cases"][0]
    assert record["score"] == 0.0 and record["reported"] == "99999.99"
    assert "\ufffd" in record["steps"][-1]["stderr"] and "NUL" in record["steps"][-1]["stderr"]


# -- writes where it should not ------------------------------------------------


def vandal_cases(recall_suite: Any) -> tuple[Path, Path]:
    vandal = recall_suite.add("vandal", ["vandalise, then say 1.00", f"vandalise again, then say {ANSWER}"], ANSWER)
    bystander = recall_suite.add("bystander", ["say 1.00", f"say {ANSWER}"], ANSWER)
    return vandal, bystander


def snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_vandal_changing_its_case_on_disk_fails_with_the_files_named_and_the_rest_still_runs(recall_suite: Any) -> None:
    vandal, _ = vandal_cases(recall_suite)
    marker = uuid.uuid4().hex
    # Only the case folder: in the default mode this test keeps the agent out of the real /tmp and /.
    command = hostile("vandal", marker, str(vandal), "--no-parents")
    result = recall_suite.run("--recall-concurrency=2", command=command)
    result.assert_outcomes(passed=1, failed=1)
    records = recall_suite.records()
    reason = "case files changed on disk during the run: answer.json, planted.txt, step1.txt, step2.txt"
    assert (records["vandal"]["score"], records["vandal"]["reason"]) == (0.0, reason)
    assert records["bystander"]["score"] == 1.0
    result.stdout.fnmatch_lines([f"*{reason}*"])


@needs_bwrap
def test_vandal_in_the_sandbox_cannot_touch_case_files_or_anything_outside_its_rooms(recall_suite: Any) -> None:
    vandal, _ = vandal_cases(recall_suite)
    before = snapshot(vandal)
    marker = uuid.uuid4().hex
    result = recall_suite.run(
        "--recall-concurrency=2", *mode_args("bwrap"), command=hostile("vandal", marker, str(vandal))
    )
    result.assert_outcomes(passed=2)
    assert snapshot(vandal) == before
    stdout = last_stdout(recall_suite.records()["vandal"])
    assert f"DENIED {vandal} FileNotFoundError" in stdout  # hidden entirely, so not even there to refuse
    assert f"DENIED /vandal-{marker} OSError" in stdout  # the root is read-only
    leaked = [path for path in (Path("/tmp") / f"vandal-{marker}", Path("/") / f"vandal-{marker}") if path.exists()]
    for path in leaked:
        path.unlink()
    assert leaked == []


# -- agents written for people -------------------------------------------------


@pytest.mark.parametrize("agent", ["stdin_reader", "tty_checker"])
@pytest.mark.parametrize("mode", MODES)
def test_agents_that_read_stdin_or_wait_on_a_terminal_do_not_hang(recall_suite: Any, mode: str, agent: str) -> None:
    recall_suite.add("interactive", ["say 1.00", f"say {ANSWER}"], ANSWER)
    result = recall_suite.run("--recall-timeout=30", *mode_args(mode), command=hostile(agent))
    result.assert_outcomes(passed=1)
    assert not any(step["timed_out"] for step in recall_suite.records()["interactive"]["steps"])
