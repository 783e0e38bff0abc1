"""Fixtures that build case folders inside a pytester directory and run the plugin on them.

The agents the inner runs call are the small scripts in ``tests/agents/``,
run by the same interpreter as these tests.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import shutil
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import cli_wiring
import pytest

from pytest_recall.plugin.checks import NAME_A_SUITE
from pytest_recall.reporting.document import with_shared

# The inner runs are pytester's. Loaded from here, not a conftest.py at the clone's root, which a
# user's run over a bundled suite in the clone (or in a .venv inside it) would load as well.
pytest_plugins = ["pytester"]

TESTS_DIR = Path(__file__).resolve().parent
AGENTS_DIR = TESTS_DIR / "agents"
REPO_DIR = TESTS_DIR.parent
SEED_SUITE = REPO_DIR / "cases" / "session-memory-recall"
# A safety net for inner runs: a hung harness fails the test instead of the whole CI job.
INNER_RUN_TIMEOUT_S = 120.0
# The agents are programs the inner runs start, never tests.
collect_ignore = ["agents"]
# The tiers beyond the quick one: each marker names what its tests need (tests/pytest.ini). The README's
# test command runs the quick tier, every test with none of them; --full adds them all.
TIER_MARKERS = ("real_cli", "mcp_server", "browser", "ssh", "slow")
# The most CPU a quick-tier test may take (setup and call: its process and every process it waited for) before
# it fails itself; on the 2-core machine with a core a worker, that is its wall time too. CPU, not wall time, so a
# busy machine (CI installs the CLIs meanwhile) fails no test; a test that only waits has three times as long.
QUICK_TEST_LIMIT_S = float(os.environ.get("RECALL_QUICK_TEST_LIMIT_S", "20"))
QUICK_TEST_WALL_FACTOR = 3
STARTED = pytest.StashKey[tuple[float, float]]()  # (CPU seconds, wall duration of setup) as the test started


def cpu_seconds() -> float:
    """CPU of this process and of every child it has waited for (an inner pytest, and what that one waited for)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        help=(
            "run every tier: the quick tier and the tests marked real_cli, mcp_server, browser, ssh or slow "
            "(left out by default). Narrow it with -m, e.g. --full -m real_cli"
        ),
    )


def pytest_configure(config: pytest.Config) -> None:
    """A run meant for an agent never collects this project's own tests by default: they are no cases.

    ``pytest --recall-cmd=...`` with no suite named (or a ``$(pytest-recall suite NAME)`` that
    failed, unquoted) in the clone would collect this folder beside the bundled suites, and run
    the whole development suite. This file is loaded then, as a conftest of a ``test*`` folder
    of where pytest runs; naming ``tests`` on the command line is still allowed.
    """
    agent = config.getoption("recall_cmd", None) or config.getoption("recall_live_preset", None)
    if agent and config.args_source is not pytest.Config.ArgsSource.ARGS:
        raise pytest.UsageError(
            f"no suite named, so pytest would collect this project's own tests in {TESTS_DIR} as well as every "
            f"bundled suite; {NAME_A_SUITE}"
        )


def tier_of(item: pytest.Item) -> str:
    """The first tier marker the test carries, or ``quick``."""
    return next((name for name in TIER_MARKERS if item.get_closest_marker(name)), "quick")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The quick tier alone unless ``--full``; then the longest first, for xdist.

    Longest first, so xdist's workers end together on short tests rather than one waiting out a long
    one. The README's commands add ``--maxschedchunk 2``: each worker holds two tests and gets the next
    ones in this order as it finishes, so the long tests are shared out first. Without it, xdist hands
    each worker a quarter of the collection up front, and the worker that drew every real-CLI and slow
    test still ran them long after the other had finished the rest (``--dist worksteal`` still left a
    long test alone at the end: it only steals what a worker has not started and more than one of).
    The order is a stable sort of collection order, the same on every worker, as xdist requires.
    """
    if not config.getoption("full"):
        left_out = [item for item in items if tier_of(item) != "quick"]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if tier_of(item) == "quick"]
    rank = {"real_cli": 0, "mcp_server": 0, "ssh": 1, "browser": 1, "slow": 1, "quick": 2}
    items.sort(key=lambda item: rank[tier_of(item)])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    item.stash[STARTED] = (cpu_seconds(), 0.0)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A quick-tier test that took more than QUICK_TEST_LIMIT_S of CPU (setup and call) fails, saying so.

    The quick tier is the README's test command, which a newcomer runs on a 2-core machine in a few
    minutes; one slow test left in it is how it grows back to forty. The fix is to make the test
    quicker (fewer cases, a shared fixture, a pure function beside one real run) or to mark it slow.
    """
    report = yield
    cpu_at_start, setup_s = item.stash.get(STARTED, (cpu_seconds(), 0.0))
    if call.when == "call" and report.passed and tier_of(item) == "quick":
        cpu, wall = cpu_seconds() - cpu_at_start, setup_s + report.duration
        wall_limit = QUICK_TEST_LIMIT_S * QUICK_TEST_WALL_FACTOR
        if cpu > QUICK_TEST_LIMIT_S or wall > wall_limit:
            report.outcome = "failed"
            report.longrepr = (
                f"this quick-tier test took {cpu:.1f} s of CPU and {wall:.1f} s of wall time (setup and call), over "
                f"the {QUICK_TEST_LIMIT_S:g} s of CPU ({wall_limit:g} s of wall time) the quick tier allows: make it "
                "quicker, or mark it slow (docs/development.md, Test tiers)"
            )
    elif call.when == "setup":
        item.stash[STARTED] = (cpu_at_start, report.duration)
    return report


class RecallSuite:
    """Case folders under ``cases/<suite>/`` in a pytester directory, and inner runs over them."""

    def __init__(self, pytester: pytest.Pytester, probe_dir: Path) -> None:
        self.pytester = pytester
        self.root = pytester.path / "cases"
        self.probe_dir = probe_dir
        self.report_path = pytester.path / "report.json"

    @staticmethod
    def agent(name: str, *args: str) -> str:
        """The ``--recall-cmd`` value that runs ``tests/agents/<name>.py`` with this interpreter."""
        return shlex.join([sys.executable, str(AGENTS_DIR / f"{name}.py"), *args])

    @staticmethod
    def module(module: str) -> str:
        """The ``--recall-cmd`` value that runs ``python -m <module>`` with this interpreter."""
        return shlex.join([sys.executable, "-m", module])

    def add(
        self,
        case_id: str,
        steps: Sequence[str],
        answer: str = "12345.67",
        *,
        kind: str = "money",
        category: str = "recall",
        suite: str = "suite",
        toml: str | None = None,
    ) -> Path:
        folder = self.root / suite / case_id
        folder.mkdir(parents=True)
        for number, prompt in enumerate(steps, start=1):
            (folder / f"step{number}.txt").write_text(prompt, encoding="utf-8")
        expected = {"id": case_id, "category": category, "answer": answer, "answer_kind": kind}
        (folder / "answer.json").write_text(json.dumps(expected), encoding="utf-8")
        if toml is not None:
            (folder / "case.toml").write_text(toml, encoding="utf-8")
        return folder

    def copy_seed_suite(self) -> Path:
        target = self.root / SEED_SUITE.name
        shutil.copytree(SEED_SUITE, target)
        return target

    def run(
        self,
        *args: str | Path,
        command: str | None = None,
        with_command: bool = True,
        report: bool = True,
        cache: bool = False,
        timeout: float = INNER_RUN_TIMEOUT_S,
    ) -> pytest.RunResult:
        """Run pytest over the cases in a subprocess, with the scripted agent unless told otherwise."""
        full: list[str | Path] = [] if cache else ["-p", "no:cacheprovider"]
        if with_command:
            full.append(f"--recall-cmd={command or self.agent('scripted')}")
        if report:
            full.append(f"--recall-report={self.report_path}")
        full.extend(args)
        return self.pytester.runpytest_subprocess(*full, timeout=timeout)

    def report(self) -> dict[str, Any]:
        """The report as a reader sees it: each case with the values it shares with the report put back."""
        loaded: dict[str, Any] = json.loads(self.report_path.read_text(encoding="utf-8"))
        for record in loaded["cases"]:
            with_shared(record, loaded)
        return loaded

    def records(self) -> dict[str, dict[str, Any]]:
        """The report's case records by case id (ids are unique in these tests)."""
        return {record["id"]: record for record in self.report()["cases"]}

    def probe(self, name: str, step: int) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((self.probe_dir / f"{name}-step{step}.json").read_text())
        return loaded


@pytest.fixture(autouse=True)
def _tier_markers(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tells ``cli_wiring.installed`` the running test's markers, so an unmarked real-CLI test fails."""
    cli_wiring.running_markers = frozenset(mark.name for mark in request.node.iter_markers())
    yield
    cli_wiring.running_markers = frozenset()


# The plugins the test extras bring that no inner run uses but tests/test_reruns.py's, which turns it back on:
# anyio's (pulled in by mcp) and pytest-rerunfailures. They cost each inner pytest 0.18 s of its 0.6 s start
# (`pytest --co` of the seed suite, 3 runs each way), and the quick tier starts one in most of its tests. A run
# with workers over ssh turns pytest-rerunfailures back on too: those workers load it whatever this says.
UNUSED_PLUGINS = ("-p", "no:anyio", "-p", "no:rerunfailures")


@pytest.fixture(autouse=True)
def _inner_run_options(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner runs keep every transcript and full prompts, as reports did before --recall-transcripts, and load
    no plugin they do not use.

    The tests that read a passing case's stdout or prompt out of a report stay
    as they were; the tests of --recall-transcripts pass the flag themselves,
    and a flag on the command line wins. pytester clears PYTEST_ADDOPTS when it
    starts, so this sets it after.
    """
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")
        monkeypatch.setenv("PYTEST_ADDOPTS", shlex.join(["--recall-transcripts=all", *UNUSED_PLUGINS]))


@pytest.fixture
def recall_suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> RecallSuite:
    probe_dir = pytester.path / "probes"
    probe_dir.mkdir()
    monkeypatch.setenv("RECALL_TEST_PROBE_DIR", str(probe_dir))
    return RecallSuite(pytester, probe_dir)


@pytest.fixture
def without_timing() -> Any:
    """Strips a report of everything that depends on the clock, for comparing runs."""
    return strip_timing


def strip_timing(document: Any) -> Any:
    """A report or record with every field that depends on the clock removed."""
    if isinstance(document, Mapping):
        return {
            key: strip_timing(value)
            for key, value in document.items()
            if key != "duration_s" and not key.startswith("latency_ms")
        }
    if isinstance(document, list):
        return [strip_timing(value) for value in document]
    return document
