"""xdist workers on another host, over ssh: results travel back in test reports, not files.

CI proves it against an sshd on loopback that ``.ci/start-sshd`` starts with
keys made for the run; it sets ``RECALL_TEST_SSH=user@host:port`` and
``RECALL_TEST_SSH_KEY``. Without them this test is skipped. The "remote"
host is this machine, so the worker runs the same interpreter from the same
path and changes into the same directory (``//chdir=``): nothing needs to be
copied over.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

SSH_TARGET = os.environ.get("RECALL_TEST_SSH", "")
SSH_KEY = os.environ.get("RECALL_TEST_SSH_KEY", "")

pytestmark = [
    pytest.mark.ssh,
    pytest.mark.skipif(
        not (SSH_TARGET and SSH_KEY) or shutil.which("ssh") is None,
        reason='no sshd to test against: run `eval "$(.ci/start-sshd)"` (as .ci/run does) to set RECALL_TEST_SSH',
    ),
]


def ssh_config(path: Path) -> Path:
    """A host alias with the run's own key; host keys of a throwaway sshd are not worth remembering."""
    user, _, host_port = SSH_TARGET.rpartition("@")
    host, _, port = host_port.rpartition(":")
    path.write_text(
        "Host recall-loopback\n"
        f"  HostName {host}\n"
        f"  Port {port}\n"
        f"  User {user or 'root'}\n"
        f"  IdentityFile {SSH_KEY}\n"
        "  IdentitiesOnly yes\n"
        "  StrictHostKeyChecking no\n"
        "  UserKnownHostsFile /dev/null\n"
        "  BatchMode yes\n"
        "  LogLevel ERROR\n"
    )
    return path


@pytest.mark.slow
def test_seed_suite_on_ssh_workers_reports_what_a_local_run_reports(recall_suite: Any, without_timing: Any) -> None:
    recall_suite.copy_seed_suite()
    # Workers on another host get no arguments that name local paths; they collect testpaths.
    recall_suite.pytester.makeini("[pytest]\ntestpaths = cases\n")
    notebook = recall_suite.module("pytest_recall.agents.notebook")
    recall_suite.run(command=notebook).assert_outcomes(passed=8)
    local = recall_suite.report()
    config = ssh_config(recall_suite.pytester.path / "ssh_config")
    spec = f"2*ssh=recall-loopback//ssh_config={config}//python={sys.executable}//chdir={recall_suite.pytester.path}"

    # A worker over ssh gets no PYTEST_ADDOPTS, so it loads every plugin installed (tests/conftest.py's
    # UNUSED_PLUGINS stay blocked only here), and pytest-rerunfailures on a worker needs the port its
    # controller-side half hands out: the controller loads it too.
    result = recall_suite.run(
        "-p", "rerunfailures", "--tx", spec, "--dist=load", "--junitxml=junit.xml", command=notebook
    )

    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["*2 workers*"])
    assert without_timing(recall_suite.report()) == without_timing(local)
    junit = (recall_suite.pytester.path / "junit.xml").read_text()
    assert junit.count('name="recall_score" value="1.0"') == 1  # the run
    assert junit.count("\nrecall_score=1.0\n") == 8  # each case, in its system-out under xunit2
