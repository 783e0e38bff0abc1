"""Issue 14, items 1, 2, 4, 5 and 7: holes a red-team pass found in the sessions and the sandbox.

Each test drives a real pytest run (``runpytest_subprocess``) with a hostile
agent from ``tests/hostile/`` or a fault injected for real, and checks what the
agent or the fault managed to do.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

HOSTILE_DIR = Path(__file__).resolve().parent / "hostile"
ANSWER = "12345.67"


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

@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    while held:
        os.close(held.pop())
"""


def test_a_session_that_cannot_open_its_stderr_pipe_is_its_cases_error_and_nothing_hangs(recall_suite: Any) -> None:
    for name in ("case_a", "case_b", "case_c"):
        recall_suite.add(name, ["remember 12345.67", "recall"], ANSWER)
    recall_suite.pytester.makeconftest(EMFILE_CONFTEST)
    result = recall_suite.run("--recall-concurrency=2", timeout=60)
    records = recall_suite.records()
    for name in ("case_a", "case_b"):  # case_b is started early, as case_a's look-ahead
        assert "Too many open files" in str(records[name].get("error")), records[name]
    assert records["case_c"]["score"] == 1.0, records["case_c"]
    result.assert_outcomes(passed=1, errors=2)
