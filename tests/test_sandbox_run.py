"""``--recall-sandbox=bwrap`` through the plugin: what a session sees, and the one-line errors at configure time.

The sandbox itself is tested in ``test_sandbox_unit.py``; these tests run
pytest-recall end to end with real bwrap, and check the wiring: the rooms a
session gets, HOME in each ``--recall-home`` mode, and that the run's own
files stay hidden even when a bind reaches over them.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from needs import needs_bwrap

ANSWER = "12345.67"

# Step 1 keeps the prompt's last word in $HOME; later steps print what they find there, and what they can see.
AGENT = """
import json, os, sys
home_file = os.path.join(os.environ["HOME"], ".remembered")
if os.environ["RECALL_STEP"] == "1":
    with open(home_file, "w") as handle:
        handle.write(sys.argv[-1].split()[-1])
    print("noted")
    raise SystemExit(0)
looks = {path: os.path.exists(path) for path in sys.argv[1:-1]}
listing = {path: sorted(os.listdir(path)) for path, there in looks.items() if there and os.path.isdir(path)}
print(json.dumps({"exists": looks, "listing": listing}))
print(open(home_file).read() if os.path.exists(home_file) else "UNKNOWN")
"""


def install_agent(folder: Path, *probes: Path) -> str:
    folder.mkdir(parents=True)
    script = folder / "agent.py"
    script.write_text(f"#!{sys.executable}{AGENT}")
    script.chmod(0o755)
    return shlex.join([str(script), *map(str, probes)])


def seen(record: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(record["steps"][-1]["stdout"].splitlines()[0])
    return loaded


@needs_bwrap
@pytest.mark.parametrize(("home", "outcome"), [("user", "failed"), ("case", "passed")])
def test_home_is_fresh_per_session_unless_the_case_owns_it(recall_suite: Any, home: str, outcome: str) -> None:
    agent_dir = recall_suite.pytester.path / "agent"
    command = install_agent(agent_dir)
    recall_suite.add("home", [f"remember {ANSWER}", "what was it?"], ANSWER)
    result = recall_suite.run(
        "--recall-sandbox=bwrap", f"--recall-sandbox-bind={agent_dir}", f"--recall-home={home}", command=command
    )
    result.assert_outcomes(**{outcome: 1})


@needs_bwrap
def test_case_folders_reports_and_logs_stay_hidden_even_inside_a_bind(recall_suite: Any) -> None:
    project = recall_suite.pytester.path / "project"
    out = project / "out"
    out.mkdir(parents=True)
    cases = recall_suite.root / "suite"
    first, second = cases / "a_first", cases / "b_second"
    command = install_agent(project / "agent", out, first, project / "agent")
    recall_suite.add("a_first", [f"remember {ANSWER}", "what was it?"], ANSWER)
    recall_suite.add("b_second", [f"remember {ANSWER}", "what was it?"], ANSWER)
    # The whole project is bound, and the run writes into it: the log holds a_first's record when b_second runs.
    result = recall_suite.run(
        "--recall-sandbox=bwrap",
        f"--recall-sandbox-bind={project},{cases}",
        "--recall-home=case",
        f"--recall-log={out / 'run.jsonl'}",
        f"--recall-report={out / 'report.json'}",
        command=command,
        report=False,
    )
    result.assert_outcomes(passed=2)
    assert (out / "run.jsonl").is_file()
    report = json.loads((out / "report.json").read_text())
    view = seen(next(record for record in report["cases"] if record["id"] == "b_second"))
    assert view["exists"] == {str(out): True, str(first): True, str(project / "agent"): True}
    # Covered by empty folders: the names show, the contents do not.
    assert view["listing"][str(out)] == [] and view["listing"][str(first)] == []
    assert view["listing"][str(project / "agent")] == ["agent.py"]
    assert second.exists()


@needs_bwrap
def test_an_agent_outside_every_bind_is_one_usage_line_naming_the_bind_to_add(recall_suite: Any) -> None:
    agent_dir = recall_suite.pytester.path / "agent"
    command = install_agent(agent_dir)
    recall_suite.add("case", [f"remember {ANSWER}", "what was it?"], ANSWER)
    result = recall_suite.run("--recall-sandbox=bwrap", command=command)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    message = f"ERROR: --recall-cmd: {agent_dir / 'agent.py'} is not visible inside the bwrap sandbox; "
    assert result.stderr.lines[0] == message + f"add it with --recall-sandbox-bind={agent_dir}"


@needs_bwrap
def test_a_bind_that_is_the_report_folder_is_one_usage_line(recall_suite: Any) -> None:
    agent_dir = recall_suite.pytester.path / "agent"
    command = install_agent(agent_dir)
    recall_suite.add("case", [f"remember {ANSWER}", "what was it?"], ANSWER)
    report = agent_dir / "report.json"
    result = recall_suite.run(
        "--recall-sandbox=bwrap", f"--recall-sandbox-bind={agent_dir}", f"--recall-report={report}", command=command
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0].startswith(f"ERROR: --recall-sandbox-bind: {agent_dir} is also a path agents must")


@needs_bwrap
def test_a_bind_inside_a_case_folder_is_one_usage_line(recall_suite: Any) -> None:
    agent_dir = recall_suite.pytester.path / "agent"
    command = install_agent(agent_dir)
    folder = recall_suite.add("case", [f"remember {ANSWER}", "what was it?"], ANSWER)
    (folder / "notes").mkdir()
    result = recall_suite.run(
        "--recall-sandbox=bwrap", f"--recall-sandbox-bind={agent_dir},{folder / 'notes'}", command=command
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --recall-sandbox-bind: {folder / 'notes'} lies in the case folder {folder}*"])


def test_without_bwrap_the_sandbox_is_one_usage_line_saying_how_to_install_it(
    recall_suite: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    recall_suite.add("case", [f"remember {ANSWER}", "what was it?"], ANSWER)
    result = recall_suite.run("--recall-sandbox=bwrap")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0].startswith(
        "ERROR: --recall-sandbox=bwrap: bwrap not found on PATH: install bubblewrap"
    )
    assert len([line for line in result.stderr.lines if line.strip()]) == 1
