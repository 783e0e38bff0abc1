"""A newcomer's first hour, second pass: the Claude path, the live preset, quiet mode and small traps.

Each test here failed before its fix; each names the trap it keeps shut.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from report_docs import run_report

from pytest_recall.sessions.sandbox import check_bwrap

ANSWER = "12345.67"
VENV_BIN = Path(sys.executable).parent
REPO_DIR = Path(__file__).resolve().parent.parent


def fake_cli(folder: Path, name: str) -> Path:
    """An executable called like a real CLI that only answers; what matters is how it is named."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(f"#!{sys.executable}\nprint('{ANSWER}')\n", encoding="utf-8")
    program.chmod(0o755)
    return program


def test_a_command_beside_a_live_preset_is_refused_naming_both_fixes(recall_suite: Any) -> None:
    recall_suite.add("case_01", ["remember 12345.67", "recall"])
    refused = recall_suite.run("--recall-live-preset=claude", "--collect-only", command="recall-claude")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert len([line for line in refused.stderr.lines if line.strip()]) == 1
    refused.stderr.fnmatch_lines(
        [
            "ERROR: --recall-cmd='recall-claude' would replace the launcher --recall-live-preset=claude runs "
            "(recall-claude --live), and live turns cannot reach it: drop --recall-cmd to measure the live session, "
            "or drop --recall-live-preset to run your command a process per step*"
        ]
    )
    # The preset's own launcher, by full path and with the CLI's extra arguments, is what it runs anyway.
    launcher = shlex.join([str(VENV_BIN / "recall-llm"), "--live", "-m", "gpt-4o-mini"])
    accepted = recall_suite.run("--recall-live-preset=llm-chat", "--collect-only", command=launcher)
    assert accepted.ret == pytest.ExitCode.OK, accepted.stderr.str()


@pytest.mark.parametrize(
    ("cli", "flags", "adapter", "why"),
    [
        ("claude", "-p", "recall-claude", "claude -p asks approval for the tool calls that write its memory*"),
        ("codex", "exec", "recall-codex", "codex exec refuses a working folder that is not a trusted git*"),
        ("aider", "--yes --message", "recall-aider", "aider prints its banner and token footer on stdout*"),
    ],
)
def test_a_bare_cli_in_print_mode_is_told_the_adapter_and_why(
    recall_suite: Any, cli: str, flags: str, adapter: str, why: str
) -> None:
    recall_suite.add("case_01", ["remember 12345.67", "recall"])
    program = fake_cli(recall_suite.pytester.path / "bin", cli)
    result = recall_suite.run("--collect-only", command=f"{program} {flags}")
    assert result.ret == pytest.ExitCode.OK
    mark = flags.split()[-1]
    result.stdout.fnmatch_lines(
        [f"recall: --recall-cmd runs {cli} {mark} directly; use --recall-cmd={adapter}, the tested adapter: {why}"]
    )
    adapted = recall_suite.run("--collect-only", command=f"{program} --version")
    assert "the tested adapter" not in adapted.stdout.str()


def test_a_retry_delay_of_zero_retries_at_once_and_a_negative_one_is_refused(recall_suite: Any) -> None:
    recall_suite.add("case_a", ["exit 3", "exit 3"], ANSWER)
    result = recall_suite.run("--recall-retries=1", "--recall-retry-delay=0")
    result.assert_outcomes(failed=1)
    assert recall_suite.records()["case_a"]["attempts"] == 2
    refused = recall_suite.run("--recall-retry-delay=-1")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["ERROR: --recall-retry-delay must be 0 or a positive number of seconds, not '-1'"])


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (("step1.txt", "setp2.txt"), "s/case: only one step (found setp2.txt: rename it step2.txt); a case needs*"),
        (("Step1.txt", "step 2.txt"), "s/case: no steps (found Step1.txt: rename it step1.txt; step 2.txt: rename*"),
        (("step1.txt", "notes.txt"), "s/case: only one step; a case needs step1.txt and step2.txt at least"),
    ],
)
def test_a_case_of_one_step_names_the_text_file_that_looks_like_a_step(
    tmp_path: Path, files: tuple[str, ...], message: str
) -> None:
    from fnmatch import fnmatch

    from pytest_recall.cases.answer_forms import BUILTIN_KINDS
    from pytest_recall.cases.model import CaseError, load_case_dir

    folder = tmp_path / "case"
    folder.mkdir()
    for name in files:
        (folder / name).write_text("remember", encoding="utf-8")
    expected = {"id": "case", "category": "c", "answer": ANSWER, "answer_kind": "money"}
    (folder / "answer.json").write_text(json.dumps(expected), encoding="utf-8")
    with pytest.raises(CaseError) as caught:
        load_case_dir(folder, suite="s", source="s/case", known_kinds=BUILTIN_KINDS)
    assert fnmatch(str(caught.value), message), str(caught.value)


@pytest.mark.skipif(check_bwrap() is not None, reason=f"bwrap unusable here: {check_bwrap()}")
def test_a_bind_given_through_a_symlink_makes_the_agent_under_it_visible(recall_suite: Any) -> None:
    real = recall_suite.pytester.path / "real-tools"
    fake_cli(real, "agent")
    linked = recall_suite.pytester.path / "tools"
    linked.symlink_to(real, target_is_directory=True)
    recall_suite.add("case_01", ["remember 12345.67", "recall"])
    result = recall_suite.run("--recall-sandbox=bwrap", f"--recall-sandbox-bind={linked}", command=f"{linked}/agent")
    result.assert_outcomes(passed=1)
    # Nothing bound: still one line naming what to bind.
    unbound = recall_suite.run("--recall-sandbox=bwrap", command=f"{linked}/agent")
    assert unbound.ret == pytest.ExitCode.USAGE_ERROR
    unbound.stderr.fnmatch_lines([f"ERROR: --recall-cmd: {linked}/agent is not visible inside the bwrap sandbox*"])


def without_this_environment_on_path() -> dict[str, str]:
    """The environment of `.venv/bin/python -m pytest` in a shell that never activated the venv, no CLI, no CI.

    Any folder holding pytest-recall's scripts leaves PATH (a pyenv shim would find them as well).
    """
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "RECALL_LLM_BIN") and not k.startswith("PYTEST_")}
    kept = [p for p in env.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "recall-notebook").exists()]
    env["PATH"] = os.pathsep.join(kept)
    return env


def pytest_in_a_subprocess(args: list[str], env: dict[str, str], cwd: Path | None = None) -> Any:
    """A whole pytest process of its own, for what pytester cannot set up: PATH and sys.path as a user has them."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_the_preset_test_passes_from_a_fresh_clone_that_never_activated_its_venv() -> None:
    test = Path(__file__).parent / "test_turn_protocol.py"
    done = pytest_in_a_subprocess(
        ["-q", "-n", "0", "-W", "ignore", str(test), "-k", "test_a_preset_runs_live_with_its_launcher_unless_a"],
        env=without_this_environment_on_path(),
    )
    assert done.returncode == 0, done.stdout[-3000:]


def test_a_script_of_this_environment_off_path_says_to_activate_it(
    recall_suite: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", without_this_environment_on_path()["PATH"])
    recall_suite.add("case_01", ["remember 12345.67", "recall"])
    result = recall_suite.run(command="recall-notebook")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --recall-cmd: 'recall-notebook' was not found on PATH; it is in {VENV_BIN}, which is not on PATH: "
            f"activate that environment (. {VENV_BIN}/activate)"
        ]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--recall-comd=x",), "ERROR: unknown option --recall-comd; did you mean --recall-cmd?"),
        (("--recall-epoch", "2"), "ERROR: unknown option --recall-epoch; did you mean --recall-epochs?"),
        (
            ("--recall-cmd=python", "my_agent.py"),
            "ERROR: --recall-cmd=python my_agent.py: the shell split the command in two, so pytest would import "
            "my_agent.py as a test file; quote the whole command: --recall-cmd='python my_agent.py'",
        ),
    ],
)
def test_a_misspelt_flag_or_a_split_command_is_one_line_with_the_fix(
    recall_suite: Any, args: tuple[str, ...], message: str
) -> None:
    recall_suite.add("case_01", ["remember 12345.67", "recall"])
    recall_suite.pytester.makepyfile(my_agent="import json\nprint(json.loads('not json'))\n")
    result = recall_suite.run(*args, with_command=False, report=False)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line.strip()] == [message]


def test_a_collection_error_says_to_fix_it_not_to_resume(recall_suite: Any) -> None:
    recall_suite.add("case_01", ["remember 12345.67", "recall"])
    recall_suite.pytester.makepyfile(test_broken="import json\nprint(json.loads('not json'))\n")
    result = recall_suite.run()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["  no case ran: pytest stops at collection errors; fix them (ERRORS above) and run again"]
    )
    assert "--recall-log" not in result.stdout.str() and "--recall-resume" not in result.stdout.str()


def test_quiet_keeps_the_shared_home_warning_and_the_agent_failures_and_one_stderr_shows_once(
    recall_suite: Any,
) -> None:
    for number in range(1, 4):
        recall_suite.add(f"case_0{number}", ["err usage: agent PROMPT\nexit 2", "recall"])
    result = recall_suite.run("-q", "--recall-home=user", f"--junitxml={recall_suite.pytester.path / 'j.xml'}")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "recall: FAILED  score 0.000 *",
            "  WARNING --recall-home=user: memory an agent keeps in HOME is shared between cases*",
            "  agent failures (not memory results, though each scores 0: fix the agent or its setup, then run again):",
            "  3 cases: agent failed in step 1 (exit 2)*",
        ]
    )
    sections = result.stdout.str().split("= FAILURES =", 1)[1].split("= pytest-recall =", 1)[0]
    assert sections.count("    stderr (last ") == 1
    assert sections.count("    stderr: the same as cases/suite/case_0") == 2
    # The JUnit file keeps every case's whole text.
    assert (recall_suite.pytester.path / "j.xml").read_text(encoding="utf-8").count("stderr (last ") == 3


@pytest.mark.parametrize(
    ("stdout", "reason"),
    [
        ("12345.67 or 99999.99", "final line offers 2 candidate values (12345.67, 99999.99): a shotgun earns nothing"),
        (
            "1111.00\n2222.00\n12345.67\n3333.00\n4444.00\n5555.00\nI am not sure.",
            "output offers 6 candidate values (1111.00, 12345.67, 2222.00, 3333.00 and 2 more): "
            "a shotgun earns nothing",
        ),
    ],
)
def test_a_shotgun_names_the_values_it_offered(stdout: str, reason: str) -> None:
    from pytest_recall.scoring.judge import judge_answer

    verdict = judge_answer(stdout, {"answer": ANSWER, "answer_kind": "money", "category": "c"})
    assert (verdict["score"], verdict["reason"]) == (0.0, reason)


def test_the_html_page_explains_its_unscored_tile_and_keeps_answers_whole() -> None:
    from pytest_recall.reporting.html import render_html
    from pytest_recall.reporting.html_cases import CASE_COLUMNS
    from pytest_recall.reporting.html_script import SCRIPT

    report = {"passed": False, "score": 0.0, "threshold": 0.5, "n_total": 1, "n_passed": 0, "n_scored": 0}
    page = render_html(run_report({**report, "n_skipped_no_gold": 1, "n_errors": 1, "cases": []}))
    assert "no gold" not in page
    tile = re.search(r'<div title="([^"]*)"><dt>unscored</dt><dd>1</dd></div>', page)
    assert tile is not None and "no expected answer to judge against" in tile[1]
    # Voucher ids such as AR-2026-0042 would otherwise break at their hyphens: each word of an answer is
    # kept whole (test_html_browser checks it in a browser, with long answers that still wrap).
    assert CASE_COLUMNS[4:6] == ("expected", "reported")
    assert ".cases .word{white-space:nowrap}" in page
    assert "answer(row[7]), answer(row[8])" in SCRIPT


@pytest.mark.slow
def test_a_suite_run_from_an_installed_wheel_is_named_from_the_suite_not_from_site_packages(tmp_path: Path) -> None:
    # As a clone's `pip install .` lays it out: the package, with the suites copied in, in a venv inside the clone.
    clone = tmp_path / "clone"
    site = clone / ".venv" / "lib" / "python3" / "site-packages"
    package = site / "pytest_recall"
    shutil.copytree(REPO_DIR / "pytest_recall", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO_DIR / "cases" / "session-memory-recall", package / "bundled_cases" / "session-memory-recall")
    (clone / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(site)
    done = pytest_in_a_subprocess(
        [
            str(package / "bundled_cases" / "session-memory-recall"),
            f"--recall-cmd={VENV_BIN / 'recall-notebook'}",
            "--recall-report=r.json",
            "--junitxml=j.xml",
        ],
        env=env,
        cwd=project,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    report = json.loads((project / "r.json").read_text(encoding="utf-8"))
    assert sorted(case["nodeid"] for case in report["cases"])[0] == "session-memory-recall/case_01::recall"
    classnames = re.findall(r'classname="([^"]*)"', (project / "j.xml").read_text(encoding="utf-8"))
    assert len(classnames) == 8 and sorted(classnames)[0] == "session-memory-recall.case_01"


def test_the_docs_preset_table_ends_each_session_as_the_preset_does() -> None:
    from pytest_recall.agents.adapters.presets import PRESETS

    section = (REPO_DIR / "docs" / "cases.md").read_text(encoding="utf-8").split("### Presets for real CLIs", 1)[1]
    table = next(block for block in section.split("\n\n") if block.startswith("| preset |"))
    keys = {"quit\r": "`quit`", "/exit\r": "`/exit`", "\x04": "Ctrl-D"}
    rows = {m[1]: m[2] for m in re.finditer(r"^\| `([\w-]+)` \|.*\| ([^|]+) \|$", table, re.MULTILINE)}
    assert rows == {name: keys[preset.protocol.quit or "\x04"] for name, preset in PRESETS.items()}
    for name, preset in PRESETS.items():
        # --help says it too, from the preset's own description.
        assert f"{rows[name].strip('`')} ends the session" in preset.about.replace("'", "")


def test_every_readme_claude_login_copy_is_the_tested_adapters() -> None:
    from pytest_recall.agents.adapters.claude import ADAPTER

    readme = (REPO_DIR / "README.md").read_text(encoding="utf-8")
    commands = re.sub(r"\\\n\s*", " ", readme)
    copies = [m[1] for m in re.finditer(r"--recall-home-copy=(\S+)", commands) if ".claude" in m[1]]
    assert copies and set(copies) == {ADAPTER.home_copy}, copies


def test_the_readme_says_why_a_free_fake_model_run_shows_a_cost() -> None:
    readme = (REPO_DIR / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Evaluate Claude Code in five minutes", 1)[1].split("\n## ", 1)[0]
    assert "Claude Code's own estimate for the fake model's tokens" in section and "nothing was charged" in section


def test_the_node_ci_installs_is_the_one_the_pinned_claude_code_declares(tmp_path: Path) -> None:
    install_node = (REPO_DIR / ".ci" / "install-node").read_text(encoding="utf-8")
    install_clis = (REPO_DIR / ".ci" / "install-clis").read_text(encoding="utf-8")
    major = re.search(r"^NODE_MAJOR=(\d+)$", install_node, re.MULTILINE)
    pinned = re.search(r"^CLAUDE_CODE_VERSION=(\S+)$", install_clis, re.MULTILINE)
    assert major is not None and pinned is not None
    assert f"Claude Code {pinned[1]} declares `engines: node >={major[1]}`" in install_node
    assert f"Claude Code {pinned[1]} needs Node {major[1]} or newer" in (REPO_DIR / "README.md").read_text("utf-8")
    ci_run = (REPO_DIR / ".ci" / "run").read_text(encoding="utf-8")
    assert 'eval "$node_env"' in ci_run and ci_run.index(".ci/install-node") < ci_run.index(".ci/install-clis;")
    # A node new enough is left alone: nothing to eval.
    fake = fake_node(tmp_path, f"v{major[1]}.1.0")
    done = subprocess.run(
        [str(REPO_DIR / ".ci" / "install-node")],
        env={"PATH": f"{fake}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert done.stdout == ""


def fake_node(folder: Path, version: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "node").write_text(f"#!/bin/sh\necho {version}\n", encoding="utf-8")
    (folder / "node").chmod(0o755)
    return folder


@pytest.mark.real_cli
def test_the_installed_claude_code_declares_the_node_ci_installs() -> None:
    from cli_wiring import real_cli

    from pytest_recall.agents.adapters.claude import ADAPTER

    claude = Path(real_cli(ADAPTER))
    manifest = claude.parent.parent / "@anthropic-ai" / "claude-code" / "package.json"
    engines = json.loads(manifest.read_text(encoding="utf-8"))["engines"]["node"]
    major = re.search(r"^NODE_MAJOR=(\d+)$", (REPO_DIR / ".ci" / "install-node").read_text("utf-8"), re.MULTILINE)
    assert major is not None and engines == f">={major[1]}.0.0"
