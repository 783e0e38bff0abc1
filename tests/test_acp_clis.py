"""recall-acp driving real agent CLIs over ACP, each against the fake model server on 127.0.0.1.

The same wiring as the print adapters (tests/cli_wiring.py) points each CLI at
the fake model; only the way it is driven differs: JSON-RPC on its stdio
instead of its print mode. Two seed cases a run, as for the other mechanism
checks: memory 1.000 (the CLI's own memory, written by its own tool, allowed
by recall-acp's permission policy) and plain 0.000, each verdict held
against what the model said, and each tool call in the step's record.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import pytest
from mcp_servers import write_config
from test_adapters import TWO_CASES, AdapterRun, adapter_run, assert_verdicts_are_what_the_model_said

from pytest_recall.testing import Mode

pytestmark = pytest.mark.slow
__all__ = ["adapter_run"]  # the fixture, shared with the print adapters' tests

# The CLI (as tests/cli_wiring.py wires it) and the arguments that make it speak ACP on stdio.
ACP_AGENTS: dict[str, tuple[str, ...]] = {
    "gemini": ("--acp", "--skip-trust"),
    "qwen": ("--acp",),
    "opencode": ("acp",),
}


@dataclass
class AcpRun(AdapterRun):
    """An adapter run whose command is recall-acp in front of the CLI's ACP mode."""

    agent_args: tuple[str, ...] = ()
    live: bool = False

    @property
    def command(self) -> str:
        adapter = Path(sys.executable).with_name("recall-acp")
        return shlex.join([str(adapter), *(["--live"] if self.live else []), "--", self.cli_path, *self.agent_args])


def acp_run(adapter_run: Callable[[str, Mode], AdapterRun], cli: str, mode: Mode, live: bool = False) -> AcpRun:
    run = adapter_run(cli, mode)
    fields_now = {field.name: getattr(run, field.name) for field in fields(run)}
    return AcpRun(**fields_now, agent_args=ACP_AGENTS[cli], live=live)


def assert_each_turn_reached_the_model_once(run: AcpRun) -> None:
    """Two cases of two turns: each first turn one "learn" request, each last one "recall" request.

    A memory write adds one follow-up carrying the tool's result ("stored"); that is the same turn.
    """
    kinds = Counter(entry["kind"] for entry in run.requests())
    assert (kinds["learn"], kinds["recall"]) == (2, 2), dict(kinds)


@pytest.mark.parametrize(("mode", "score"), [("memory", 1.0), ("plain", 0.0)])
@pytest.mark.parametrize("cli", ACP_AGENTS)
def test_each_step_over_acp_scores_as_the_model_remembers(adapter_run, cli, mode, score):
    run = acp_run(adapter_run, cli, mode)

    result, report = run.run(*TWO_CASES)

    assert report["score"] == score and report["n_total"] == 2, result.stdout.str()[-3000:]
    assert report["n_errors"] == 0
    assert_verdicts_are_what_the_model_said(report, run.requests())
    assert_each_turn_reached_the_model_once(run)
    if mode == "plain":
        assert not any(entry["tool"] for entry in run.requests()), "a plain model asked to write memory"
    else:
        for record in report["cases"]:
            assert "recall-acp: tool call " in record["steps"][0]["stderr"], "the memory write is not in the record"


LIVE = ("--recall-session=continue", "--recall-ready-pattern=recall-acp> $")


@pytest.mark.parametrize(("mode", "score"), [("memory", 1.0), ("plain", 0.0)])
@pytest.mark.parametrize("cli", ACP_AGENTS)
def test_live_session_over_acp_each_turn_one_prompt(adapter_run, cli, mode, score):
    run = acp_run(adapter_run, cli, mode, live=True)

    result, report = run.run(*TWO_CASES, *LIVE)

    assert report["score"] == score and report["n_total"] == 2, result.stdout.str()[-3000:]
    assert report["n_errors"] == 0
    assert_verdicts_are_what_the_model_said(report, run.requests())
    assert_each_turn_reached_the_model_once(run)


def test_an_mcp_server_reaches_gemini_cli_through_session_new(adapter_run):
    """--recall-mcp over ACP: the step's server is handed to the agent in session/new, and its tools reach the model.

    The fake model drives MCP tools only under the names Claude Code and Codex give them (``mcp__server__tool``),
    so Gemini CLI keeps its note in GEMINI.md as before; what is shown is that the server reached the agent.
    """
    run = acp_run(adapter_run, "gemini", "memory")
    config = write_config("server-memory", run.pytester.path / "mcp.json")

    result, report = run.run(*TWO_CASES, f"--recall-mcp={config}")

    assert report["score"] == 1.0 and report["n_total"] == 2, result.stdout.str()[-3000:]
    assert_verdicts_are_what_the_model_said(report, run.requests())
    asked = [entry for entry in run.requests() if entry["kind"] in ("learn", "recall")]
    assert len(asked) == 4
    for entry in asked:
        offered = json.dumps(entry["body"])
        assert "create_entities" in offered and "search_nodes" in offered, "the server's tools never reached the model"
