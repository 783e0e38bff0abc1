"""A harness with odd descriptors still starts its agents, and passes them none (issue 14, item 12)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

HOSTILE_DIR = Path(__file__).resolve().parent / "hostile"

# A plugin that leaves an inheritable descriptor open, then a lowered soft limit puts it out of range:
# glibc's posix_spawn refuses a close action for any descriptor at or above the soft RLIMIT_NOFILE.
HIGH_FD_CONFTEST = """
import os, resource

HIGH_FD = 900


def pytest_configure(config):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = os.open(os.devnull, os.O_RDONLY)
    os.dup2(target, HIGH_FD, inheritable=True)
    os.close(target)
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard))
"""


def test_an_inheritable_descriptor_above_the_soft_fd_limit_neither_fails_cases_nor_reaches_the_agent(
    recall_suite: Any,
) -> None:
    recall_suite.pytester.makeconftest(HIGH_FD_CONFTEST)
    recall_suite.add("high-fd", ["say 1.00", "say 12345.67"], "12345.67")
    result = recall_suite.run(command=shlex.join([sys.executable, str(HOSTILE_DIR / "fd_peeker.py")]))
    result.assert_outcomes(passed=1)
    for step in recall_suite.records()["high-fd"]["steps"]:
        assert step["stderr"].strip() == "FDS -"
