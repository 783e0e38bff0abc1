"""A newcomer's first hour, third pass: a typo that ran this project's tests, the clone's dev settings, MCP paths.

Each test here failed before its fix; each names the trap it keeps shut.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO_DIR = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
# An agent that prints the MCP configuration its step was handed.
PRINT_CONFIG = shlex.join(
    [sys.executable, "-c", "import os; print(open(os.environ['RECALL_MCP_CONFIG']).read())"],
)


def user_environment() -> dict[str, str]:
    """The environment of a user's shell: none of the variables this test run's pytest or xdist set."""
    return {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "CI"))}


def pytest_process(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    return subprocess.run(
        command, cwd=cwd, env=user_environment(), capture_output=True, text=True, timeout=300, check=False
    )


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_an_empty_suite_argument_is_one_line_not_the_whole_working_folder(recall_suite: Any) -> None:
    # `pytest "$(pytest-recall suite TYPO)"`: the substitution failed, and pytest got "".
    recall_suite.add("case_01", ["remember 12345.67", "recall"])
    result = recall_suite.run("", report=False)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    line = one_error_line(result.stderr.str())
    assert line.startswith(f"ERROR: an empty path argument would collect everything under {recall_suite.pytester.path}")
    assert 'name a suite folder: pytest "$(pytest-recall suite session-memory-recall)"' in line
    # Without an agent command it is pytest's business, as before.
    assert recall_suite.run("", "--collect-only", with_command=False, report=False).ret == pytest.ExitCode.OK


@pytest.mark.parametrize("args", [[], ["tests/test_bundled_suites.py"]], ids=["no-suite", "tests-named"])
def test_a_run_with_an_agent_in_the_clone_never_collects_this_projects_tests_unasked(args: list[str]) -> None:
    agent = f"--recall-cmd={VENV_BIN / 'recall-notebook'}"  # the README's shell may not have activated the venv
    done = pytest_process([*args, agent, "--collect-only", "-q"], cwd=REPO_DIR)
    if args:
        # Naming them is asking for them (collect-only runs nothing).
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:]
    line = one_error_line(done.stderr)
    assert line.startswith(f"ERROR: no suite named, so pytest would collect this project's own tests in {REPO_DIR}")
    assert "(pytest-recall suite --list lists the bundled suites)" in line


def test_the_clone_root_holds_no_pytest_setting_a_users_run_would_meet() -> None:
    # A suite from `pytest-recall suite` lies under the clone (editable) or its .venv (pip install .):
    # pytest reads the nearest config above it, so the dev settings live in tests/ only.
    pyproject = tomllib.loads((REPO_DIR / "pyproject.toml").read_text(encoding="utf-8"))
    assert "pytest" not in pyproject.get("tool", {})
    assert not (REPO_DIR / "pytest.ini").exists()
    # The root conftest.py (the design card's top level) is a docstring and nothing a run could meet.
    root_conftest = ast.parse((REPO_DIR / "conftest.py").read_text(encoding="utf-8"))
    assert [type(node) for node in root_conftest.body] == [ast.Expr]
    dev = (REPO_DIR / "tests" / "pytest.ini").read_text(encoding="utf-8")
    assert "filterwarnings = error" in dev and "--strict-config" in dev


@pytest.mark.slow
def test_a_run_from_another_folder_over_a_suite_in_the_clones_venv_gets_none_of_the_dev_settings(
    tmp_path: Path,
) -> None:
    # The Quickstart's layout: the clone's tracked root files, and the suite in the .venv inside it.
    clone = tmp_path / "clone"
    tracked = subprocess.run(
        ["git", "-C", str(REPO_DIR), "ls-files", "--", ":(top)*.toml", ":(top)*.py", ":(top)*.ini", ":(top)*.cfg"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout: there is no clone to copy")
    for name in tracked:
        if "/" not in name:
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_DIR / name, clone / name)
    suite = clone / ".venv/lib/python3/site-packages/pytest_recall/bundled_cases/session-memory-recall"
    shutil.copytree(REPO_DIR / "cases/session-memory-recall", suite)
    project = tmp_path / "project"
    project.mkdir()
    agent = f"--recall-cmd={VENV_BIN / 'recall-notebook'}"

    helped = pytest_process([str(suite), agent, "--help"], cwd=project)
    assert helped.returncode == 0, helped.stderr
    assert "--runpytest" not in helped.stdout, "the clone's conftest.py loaded pytester into a user's run"

    # A warning is a warning, not an error (the dev suite's filterwarnings = error), and -ra is not added.
    warns = project / "warns.py"
    warns.write_text("import warnings\nwarnings.warn('a user warning', UserWarning)\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "warns", str(suite), agent, "-k", "case_01"],
        cwd=project,
        env={**user_environment(), "PYTHONPATH": str(project)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "short test summary info" not in done.stdout


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("first_line", "says"),
    [
        ("", "it is a script with no #! line, so the system cannot tell what runs it; add one as its first line*"),
        ("#!/no/such/python3\n", "its first line #!/no/such/python3 names /no/such/python3, which is not an exec*"),
        ("#!/usr/bin/env no-such-interpreter-x\n", "*runs no-such-interpreter-x, which is not on PATH; install it*"),
        ("#!/usr/bin/env python3\r\n", "its #! line ends in a carriage return (Windows line ends)*"),
    ],
    ids=["no-shebang", "missing-interpreter", "env-names-nothing", "windows-line-ends"],
)
def test_an_agent_the_system_cannot_start_is_refused_before_any_case(
    recall_suite: Any, first_line: str, says: str
) -> None:
    recall_suite.add("case_01", ["remember 12345.67", "recall"])
    recall_suite.add("case_02", ["remember 12345.67", "recall"])
    agent = executable(recall_suite.pytester.path / "agent", first_line + "print('12345.67')\n")
    result = recall_suite.run(command=str(agent), report=False)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    assert "case_01" not in result.stdout.str()
    result.stderr.fnmatch_lines([f"ERROR: --recall-cmd: '{agent}' cannot be started: {says}"])
    assert len([line for line in result.stderr.lines if line.strip()]) == 1


def test_an_agent_with_its_shebang_or_a_compiled_program_still_runs(recall_suite: Any) -> None:
    recall_suite.add("case_01", ["remember 12345.67", "recall"])
    agent = executable(recall_suite.pytester.path / "agent", "#!/usr/bin/env python3\nprint('12345.67')\n")
    recall_suite.run(command=str(agent)).assert_outcomes(passed=1)
    recall_suite.run(command="/bin/echo 12345.67").assert_outcomes(passed=1)


def mcp_file(folder: Path, server: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "memory.json"
    path.write_text(json.dumps({"mcpServers": {"memory": server}}), encoding="utf-8")
    return path


def test_relative_paths_in_an_mcp_file_are_resolved_against_its_folder(recall_suite: Any) -> None:
    # docs/mcp.md's recipe: the server installed beside the file, named by a relative path.
    conf = recall_suite.pytester.path / "conf"
    executable(conf / "mcp" / "server", "#!/bin/sh\nexit 0\n")
    (conf / "seed.json").write_text("{}", encoding="utf-8")
    config = mcp_file(
        conf,
        {
            "command": "./mcp/server",
            "args": ["seed.json", "--store", "{scope}/x"],
            "cwd": "mcp",
            "env": {"F": "seed.json"},
        },
    )
    recall_suite.add("case_01", ["one", "two"])
    recall_suite.run(f"--recall-mcp={config}", command=PRINT_CONFIG)
    step = recall_suite.report()["cases"][0]["steps"][0]["stdout"]
    server = json.loads(step)["mcpServers"]["memory"]
    # Every stdio server starts behind the MCP tap: the relay's arguments end with "--", the server's command and args.
    command, *args = server["args"][server["args"].index("--") + 1 :]
    assert command == f"{conf}/mcp/server"
    assert args[0] == f"{conf}/seed.json" and args[1] == "--store"
    assert args[2].endswith("/scope/x")  # a placeholder, filled in for the step, is no path to resolve
    assert (server["cwd"], server["env"]["F"]) == (f"{conf}/mcp", f"{conf}/seed.json")


@pytest.mark.parametrize(
    ("server", "says"),
    [
        ({"command": "./mcp/no-such-server"}, "'{conf}/mcp/no-such-server' does not exist; install the MCP server*"),
        ({"command": "no-such-mcp-server-x"}, "'no-such-mcp-server-x' was not found on PATH; install the MCP server*"),
        ({"command": "./mcp/plain"}, "'{conf}/mcp/plain' cannot be started: it is a script with no #! line*"),
        ({"command": sys.executable, "args": ["server.py"]}, "'server.py' does not exist in {conf}; sessions run*"),
    ],
    ids=["missing-relative", "not-on-path", "no-shebang", "missing-script"],
)
def test_an_mcp_server_that_cannot_start_stops_the_run_before_any_case(
    recall_suite: Any, server: dict[str, Any], says: str
) -> None:
    conf = recall_suite.pytester.path / "conf"
    executable(conf / "mcp" / "plain", "exit 0\n")
    config = mcp_file(conf, server)
    recall_suite.add("case_01", ["one", "two"])
    result = recall_suite.run(f"--recall-mcp={config}", command=PRINT_CONFIG, report=False)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    result.stderr.fnmatch_lines([f"ERROR: --recall-mcp: {config}: server 'memory': {says.format(conf=conf)}"])
    assert len([line for line in result.stderr.lines if line.strip()]) == 1


@pytest.mark.parametrize("adapter", ["recall-llm", "recall-gemini"])
def test_an_adapter_that_cannot_pass_mcp_servers_on_is_refused_at_start(recall_suite: Any, adapter: str) -> None:
    config = mcp_file(recall_suite.pytester.path, {"command": sys.executable})
    recall_suite.add("case_01", ["one", "two"])
    result = recall_suite.run(f"--recall-mcp={config}", command=str(VENV_BIN / adapter), report=False)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    line = one_error_line(result.stderr.str())
    assert line.startswith(f"ERROR: --recall-mcp cannot be used with {adapter}: ")
    assert line.endswith("drop --recall-mcp, or measure the servers through recall-claude or recall-codex")


def test_an_mcp_server_that_fails_in_a_case_is_scored_0_as_an_agent_failure_and_the_docs_say_so(
    recall_suite: Any,
) -> None:
    # The agent reports the server's failure, so it cannot excuse itself from the score by saying so;
    # what the harness can check itself (the server's program) stops the run before any case instead.
    config = mcp_file(recall_suite.pytester.path, {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]})
    recall_suite.add("case_01", ["remember 12345.67", "recall"])
    result = recall_suite.run(f"--recall-mcp={config}", command=str(VENV_BIN / "recall-mcp"))
    report = recall_suite.report()
    assert [case["outcome"] for case in report["cases"]] == ["agent_failed"]
    assert (report["score"], report["n_scored"]) == (0.0, 1)
    result.stdout.fnmatch_lines(
        [
            "  agent failures (not memory results, though each scores 0: fix the agent or its setup, then run again):",
            "  1 case: agent failed in step 1 (exit 2): recall-mcp: MCP server 'memory' ended or failed before it*",
        ]
    )
    docs = (REPO_DIR / "docs" / "mcp.md").read_text(encoding="utf-8")
    assert "never as a score of 0" not in docs
    assert "scored 0 as an agent failure" in docs
