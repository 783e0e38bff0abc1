"""The test tiers: the README's command runs the quick one, --full runs them all, and the quick one stays quick."""

from __future__ import annotations

import shlex
import shutil

import pytest

from conftest import REPO_DIR, TESTS_DIR, TIER_MARKERS

SLEEPY_TESTS = """
import subprocess
import sys
import time

import pytest

# A second of CPU in a child process: the guard counts what a test's children spent.
BUSY = "import time\\nstart = time.process_time()\\nwhile time.process_time() - start < 1.0: pass"


def test_quick():
    pass


def test_busy():
    subprocess.run([sys.executable, "-c", BUSY], check=True)


def test_sleepy():
    time.sleep(0.5)


def test_sleepy_for_long():
    time.sleep(3.0)


@pytest.mark.slow
def test_busy_but_marked_slow():
    subprocess.run([sys.executable, "-c", BUSY], check=True)


@pytest.mark.real_cli
def test_needs_a_cli():
    pass
"""


@pytest.fixture
def project_tests(pytester: pytest.Pytester) -> pytest.Pytester:
    """This project's test settings and conftest in a pytester folder, beside a few tests of known speed."""
    for name in ("conftest.py", "pytest.ini", "cli_wiring.py"):
        shutil.copy(TESTS_DIR / name, pytester.path / name)
    pytester.makepyfile(test_speeds=SLEEPY_TESTS)
    return pytester


def test_a_quick_tier_test_over_the_limit_fails_and_says_how_to_mend_it(project_tests, monkeypatch):
    monkeypatch.setenv("RECALL_QUICK_TEST_LIMIT_S", "0.5")

    result = project_tests.runpytest_subprocess("--full", "-p", "no:cacheprovider")

    # A second of a child's CPU is over 0.5 s, however long a busy machine makes it last; half a second's sleep
    # is not (it only waits, and 1.5 s is its bound), three seconds' is; a marked test is not held to it.
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(
        [
            "this quick-tier test took 1.* s of CPU and * s of wall time (setup and call), over the 0.5 s of CPU "
            "(1.5 s of wall time) the quick tier allows: make it quicker, or mark it slow*",
            "this quick-tier test took 0.* s of CPU and 3.* s of wall time*",
            "FAILED test_speeds.py::test_busy - *",
            "FAILED test_speeds.py::test_sleepy_for_long - *",
        ]
    )


def collected(result: pytest.RunResult) -> list[str]:
    """The test names a ``--co -q`` run lists."""
    return [line.split("::")[1] for line in result.outlines if "::" in line]


def test_the_default_run_is_the_quick_tier_and_full_adds_the_marked_tiers(project_tests):
    # Collected only: which tests a tier selects, without the seconds the sample tests spend.
    quick = project_tests.runpytest_subprocess("--co", "-q", "-p", "no:cacheprovider")
    full = project_tests.runpytest_subprocess("--full", "--co", "-q", "-p", "no:cacheprovider", "-m", "real_cli")

    assert collected(quick) == ["test_quick", "test_busy", "test_sleepy", "test_sleepy_for_long"]
    quick.stdout.fnmatch_lines(["4/6 tests collected (2 deselected)*"])
    assert collected(full) == ["test_needs_a_cli"]
    full.stdout.fnmatch_lines(["1/6 tests collected (5 deselected)*"])


def test_a_test_that_drives_a_real_cli_without_its_marker_fails_at_once(project_tests):
    project_tests.makepyfile(
        test_unmarked="""
from cli_wiring import installed

def test_unmarked():
    installed('/bin/true', 'true is not installed: never mind')
"""
    )

    result = project_tests.runpytest_subprocess("-p", "no:cacheprovider", "test_unmarked.py")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*this test drives what the real_cli tier is for (true): mark it real_cli*"])


def test_the_tier_markers_are_the_registered_ones_and_the_docs_name_each():
    ini = (TESTS_DIR / "pytest.ini").read_text(encoding="utf-8")
    markers = [line.split(":")[0].strip() for line in ini.split("markers =", 1)[1].splitlines() if ":" in line]
    assert markers == list(TIER_MARKERS)
    development = (REPO_DIR / "docs" / "development.md").read_text(encoding="utf-8")
    assert all(f"`{marker}`" in development for marker in TIER_MARKERS)


def without_workers(argv: list[str]) -> list[str]:
    """A pytest command line without its ``-n N``."""
    at = argv.index("-n")
    return argv[:at] + argv[at + 2 :]


def test_ci_runs_the_readmes_test_command_first_and_then_every_other_tier():
    readme = (REPO_DIR / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    command = next(line for line in quick.splitlines() if " -m pytest tests" in line)
    test_command = shlex.split(command.split("&&")[-1])
    test_command[0] = "python"  # .ci/run has activated the .venv the README's line runs from
    ci = (REPO_DIR / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    pytest_lines = [shlex.split(line.strip()) for line in ci if line.strip().startswith("python -m pytest tests")]
    assert pytest_lines[0] == test_command
    # The marked tiers: the same command with its worker count of their own (their tests wait on their CLIs
    # and servers, so more workers than cores), every tier the quick one leaves out.
    common = without_workers(test_command)
    marked = without_workers(pytest_lines[1])
    assert marked[: len(common)] == common
    assert marked[len(common) :][:2] == ["--full", "-m"]
    assert set(marked[len(common) + 2].split(" or ")) == set(TIER_MARKERS)
    assert "-m pytest tests -n auto --maxschedchunk 2 --full" in readme, "the README says how to run every tier"
