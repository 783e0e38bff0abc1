"""Real MCP memory servers, plugged by --recall-mcp into real Claude Code and Codex, scored on the seed suite.

The fake model in ``memory`` mode stores each note through the server's write
tool and answers a later question only from what the server's search tool
returned, so 1.000 means the server kept and found every note, case by case;
a ``plain`` model never calls them and scores 0. Each run has four cases at a
time with a HOME per case, and the seed suite holds two cases that store
under the same name ("closing balance") with different values: both pass only
if each case's server has a store of its own.

The servers come from ``.ci/install-mcp-servers``, the CLIs from
``.ci/install-clis``; a missing one skips here and fails under CI.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_wiring import WIRINGS, model_requests, real_cli
from mcp_servers import store_prefix, write_config
from processes import processes_with

from pytest_recall.agents.adapters import all_adapters
from pytest_recall.testing import FakeModelServer, Mode
from pytest_recall.testing.mcp_tools import SEARCH_TOOLS, TOOL_SEARCH, short_name
from pytest_recall.testing.wire import READERS

pytestmark = [pytest.mark.real_cli, pytest.mark.mcp_server]
ADAPTERS = {adapter.cli: adapter for adapter in all_adapters() if adapter.drives_one_cli}
CLIS = ("claude", "codex", "cline")
SEED_CASES = 8
# Each run checks a mechanism (memory through the server, a plain model never calling it), which two cases show:
# case_01 and case_02 store under one name with different values, at once. One pairing keeps the seed suite's
# eight cases, the fewest whose lift over the control can be significant.
TWO_CASES = ("-k", "case_01 or case_02")
SIGNIFICANT_LIFT_RUN = ("claude", "server-memory")
# Each CLI through one server and each server through one CLI: the wiring of a server into a CLI is the CLI's
# (tests/cli_wiring.py), the server's tools are the server's, and recall-mcp drives each server alone
# (tests/test_mcp_agent.py). basic-memory starts for about 12 s of CPU in every session, so it has one run here.
MEMORY_RUNS = [SIGNIFICANT_LIFT_RUN, ("codex", "basic-memory"), ("cline", "server-memory")]
# A model that never calls a tool leaves either server unused: the plain runs use the quick one.
PLAIN_RUNS = [("claude", "server-memory"), ("codex", "server-memory")]
INNER_RUN_TIMEOUT_S = 1200.0


@dataclass
class McpRun:
    pytester: pytest.Pytester
    server: str
    log_path: Path
    command: str
    marker: str
    home_files: tuple[str, ...]  # what each case HOME gets a copy of: the CLI's wiring

    def run(self, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
        report_path = self.pytester.path / "report.json"
        report_path.unlink(missing_ok=True)
        config = write_config(self.server, self.pytester.path / "mcp.json")
        result = self.pytester.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            str(self.pytester.path / "cases"),
            f"--recall-cmd={self.command}",
            f"--recall-mcp={config}",
            "--recall-concurrency=4",
            "--recall-home=case",
            f"--recall-home-copy={','.join(self.home_files)}",
            "--recall-timeout=600",
            f"--recall-report={report_path}",
            *args,
            timeout=INNER_RUN_TIMEOUT_S,
        )
        return result, json.loads(report_path.read_text(encoding="utf-8"))

    def requests(self) -> list[dict[str, Any]]:
        return model_requests(self.log_path)


@pytest.fixture
def mcp_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str, Mode], McpRun]]:
    """``mcp_run(cli, server, mode)``: the CLI and the server found, a fake model of that mode, HOME set up."""
    models: list[FakeModelServer] = []

    def start(cli: str, server: str, mode: Mode) -> McpRun:
        adapter = ADAPTERS[cli]
        monkeypatch.setenv(adapter.bin_variable, real_cli(adapter))
        log_path = pytester.path / f"model-{mode}.jsonl"
        model = FakeModelServer(mode, log_path=log_path).__enter__()
        models.append(model)
        wiring = WIRINGS[cli](model.base_url)
        # Codex reads its model provider from config.toml; the copy into each case HOME is harmless for Claude.
        files = {".codex/config.toml": "", **wiring.home_files}
        for name, text in files.items():
            (pytester.path / name).parent.mkdir(parents=True, exist_ok=True)
            (pytester.path / name).write_text(text, encoding="utf-8")
        monkeypatch.setenv("HOME", str(pytester.path))
        for name, value in wiring.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
        # basic-memory imports for a minute on a busy machine; both adapters read this (milliseconds).
        monkeypatch.setenv("MCP_TIMEOUT", "600000")
        # Every process of the run inherits it, the servers too: found by it, none may be left afterwards.
        marker = f"RECALL_MCP_TEST={uuid.uuid4().hex}"
        monkeypatch.setenv(*marker.split("="))
        cases = pytester.path / "cases"
        if not cases.exists():
            shutil.copytree(Path(__file__).resolve().parent.parent / "cases" / "session-memory-recall", cases)
        command = shlex.join([str(Path(sys.executable).with_name(adapter.script))])
        return McpRun(pytester, server, log_path, command, marker, tuple(files))

    yield start
    for model in models:
        model.close()


def search_results(entry: dict[str, Any]) -> list[str]:
    """What the MCP search tools returned in the turn a logged request belongs to."""
    request = READERS[entry["path"]](entry["body"])
    return [call.result for call in request.calls if short_name(call.name) in SEARCH_TOOLS and call.result]


def assert_every_answer_came_from_the_server(report: dict[str, Any], requests: list[dict[str, Any]]) -> None:
    recalls = [entry for entry in requests if entry["kind"] == "recall"]
    passed = [record for record in report["cases"] if record["score"] == 1.0 and not record["control"]]
    assert len(recalls) >= len(passed)
    for entry in recalls:
        if entry["reply"] != "UNKNOWN":
            found = search_results(entry)
            assert any(entry["reply"] in text for text in found), f"{entry['reply']!r} is in no search result {found}"
    judged = sorted(record["reported"] for record in passed)
    answered = sorted(entry["reply"] for entry in recalls if entry["reply"] != "UNKNOWN")
    assert judged == answered, "every passing answer is one the model gave from a search result"


@pytest.mark.parametrize(("cli", "server"), MEMORY_RUNS)
def test_memory_model_scores_one_through_the_mcp_server_and_lifts_over_the_control(mcp_run, cli, server):
    run = mcp_run(cli, server, "memory")
    whole_suite = (cli, server) == SIGNIFICANT_LIFT_RUN
    cases = SEED_CASES if whole_suite else 2

    result, report = run.run("--recall-control", *(() if whole_suite else TWO_CASES))

    assert report["score"] == 1.0, result.stdout.str()[-4000:]
    assert report["n_total"] == cases and report["n_errors"] == 0
    control = report["control"]
    assert control["score"] == 0.0 and control["lift"] == 1.0 and control["lift_significant"] is whole_suite
    requests = run.requests()
    assert_every_answer_came_from_the_server(report, requests)
    tools = {short_name(entry["tool"]) for entry in requests if entry["tool"]}
    assert tools <= {TOOL_SEARCH, "create_entities", "write_note", *SEARCH_TOOLS}, "memory only through the server"
    # The store lies in each case's own scope: step 1 leaves it there, and nothing of it outside.
    for record in report["cases"]:
        if not record["control"]:
            listed = [file["path"] for file in record["steps"][0]["memory"]]
            assert any(path.startswith(store_prefix(server)) for path in listed), listed
    assert sum(entry["kind"] == "learn" for entry in requests) == cases
    # The tap between the CLI and the server saw the memory at work: a write in step 1, a read in the last step.
    for record in report["cases"]:
        use = record["memory_use"]
        if record["control"]:
            assert use["writes_before"] == 0, use
        else:
            assert use["writes_before"] >= 1 and use["reads_last"] >= 1 and not use["unused"], (record["id"], use)
    assert report["memory"]["unused"] == 0 and report["memory"]["cases"] == cases
    # case_01 and case_02 store under one name, "closing balance", with different values, four cases at a time.
    same_name = {
        record["id"]: record["reported"] for record in report["cases"] if record["id"] in ("case_01", "case_02")
    }
    assert len(set(same_name.values())) == 2, same_name
    assert not processes_with(run.marker, parts=("environ",)), "a server outlived its session"


@pytest.mark.parametrize(("cli", "server"), PLAIN_RUNS)
def test_plain_model_scores_zero_and_never_calls_the_server(mcp_run, cli, server):
    run = mcp_run(cli, server, "plain")

    result, report = run.run(*TWO_CASES)

    assert report["score"] == 0.0 and report["n_total"] == 2, result.stdout.str()[-4000:]
    assert report["n_errors"] == 0
    assert not any(entry["tool"] for entry in run.requests()), "a plain model called a tool"
    # The tap saw no call either: every case of the memory arm left its memory unused.
    assert all(record["memory_use"]["unused"] for record in report["cases"])
    assert report["memory"]["unused"] == report["memory"]["cases"] == 2
    result.stdout.fnmatch_lines(["*memory (MCP tap): 0 of 2 cases used it*"])
    assert not processes_with(run.marker, parts=("environ",))


@pytest.mark.parametrize("cli", CLIS)
def test_a_server_that_cannot_start_fails_the_step_saying_so(mcp_run, pytester, cli):
    run = mcp_run(cli, "server-memory", "memory")
    broken = pytester.path / "broken-mcp.json"
    # It starts and dies at once: only the CLI can tell. A missing program stops the run at start-up instead.
    dies = {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}
    broken.write_text(json.dumps({"mcpServers": {"memory": dies}}), encoding="utf-8")

    result, report = run.run(f"--recall-mcp={broken}", "-k", "case_01")

    record = report["cases"][0]
    assert record["outcome"] == "agent_failed", result.stdout.str()[-3000:]
    last_line = record["steps"][0]["stderr"].strip().splitlines()[-1]
    assert "MCP server" in last_line and "memory" in last_line, last_line
    result.stdout.fnmatch_lines(["*agent failures (not memory results*", "*agent failed in step 1*MCP server*memory*"])
