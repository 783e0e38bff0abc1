"""recall-acp driving real agent CLIs over ACP, each against the fake model server on 127.0.0.1.

The same wiring as the print adapters (tests/cli_wiring.py) points each CLI at
the fake model; only the way it is driven differs: JSON-RPC on its stdio
instead of its print mode. Claude Code and Codex speak ACP through bridge
packages, which need a setting or two more in HOME (their wirings say why).
Two seed cases a run, as for the other mechanism checks: memory 1.000 (the
CLI's own memory, written by its own tool, allowed by recall-acp's permission
policy) with its control arm 0.000, each verdict held against what the model
said, and each tool call in the step's record.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import shutil
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest
from cli_wiring import Wiring, claude_acp_wiring, codex_acp_wiring, installed
from mcp_servers import write_config
from test_adapters import TWO_CASES, AdapterRun, adapter_run, assert_verdicts_are_what_the_model_said

from pytest_recall.testing import Mode

pytestmark = pytest.mark.real_cli
__all__ = ["adapter_run"]  # the fixture, shared with the print adapters' tests


@dataclass(frozen=True)
class AcpAgent:
    """How a CLI speaks ACP on stdio: its own binary with these arguments, or a bridge package in front of it."""

    cli: str  # as tests/cli_wiring.py wires it to the fake model
    args: tuple[str, ...] = ()
    bridge_variable: str = ""  # the variable naming the bridge's binary, for a CLI that speaks ACP only through one
    bridge_wiring: Callable[[str], Wiring] | None = None  # the files in HOME the bridge needs instead of the CLI's
    recall_env: tuple[str, ...] = ()  # --recall-env settings the agent needs


ACP_AGENTS: dict[str, AcpAgent] = {
    "gemini": AcpAgent("gemini", ("--acp", "--skip-trust")),
    "qwen": AcpAgent("qwen", ("--acp",)),
    "opencode": AcpAgent("opencode", ("acp",)),
    # Cline's ACP mode asks for an account sign-in (authenticate) unless an API key is in its environment; the
    # provider and model then come from the variables, the endpoint from its providers.json, as in print mode.
    "cline": AcpAgent(
        "cline",
        ("--acp",),
        recall_env=("CLINE_API_KEY=sk-fake", "CLINE_PROVIDER=openai-compatible", "CLINE_MODEL=fake"),
    ),
    "claude-agent-acp": AcpAgent(
        "claude",
        bridge_variable="RECALL_CLAUDE_ACP_BIN",
        bridge_wiring=claude_acp_wiring,
        # As root the bridge offers bypass mode when IS_SANDBOX is set at all, and Claude Code then exits
        # unless it is exactly 1.
        recall_env=("IS_SANDBOX=1",),
    ),
    # Codex's own sandbox would keep it from writing its memory (~/.codex/AGENTS.md, outside the working
    # folder), as recall-codex's --dangerously-bypass-approvals-and-sandbox does not.
    "codex-acp": AcpAgent(
        "codex",
        ("-c", 'sandbox_mode="danger-full-access"'),
        bridge_variable="RECALL_CODEX_ACP_BIN",
        bridge_wiring=codex_acp_wiring,
    ),
}


@dataclass
class AcpRun(AdapterRun):
    """An adapter run whose command is recall-acp in front of the CLI's ACP mode."""

    agent_args: tuple[str, ...] = ()
    live: bool = False
    recall_env: tuple[str, ...] = ()
    permission: str | None = None  # recall-acp's --permission; None leaves its default

    @property
    def command(self) -> str:
        adapter = Path(sys.executable).with_name("recall-acp")
        options = [
            *(["--live"] if self.live else []),
            *([f"--permission={self.permission}"] if self.permission else []),
        ]
        return shlex.join([str(adapter), *options, "--", self.cli_path, *self.agent_args])

    def run(self, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
        return super().run(*(f"--recall-env={setting}" for setting in self.recall_env), *args)


def acp_run(adapter_run: Callable[[str, Mode], AdapterRun], name: str, mode: Mode, live: bool = False) -> AcpRun:
    agent = ACP_AGENTS[name]
    run = adapter_run(agent.cli, mode)
    fields_now = {attribute.name: getattr(run, attribute.name) for attribute in fields(run)}
    if agent.bridge_variable:
        reason = f'the ACP bridge for {agent.cli} is not installed: run `eval "$(.ci/install-clis)"`'
        fields_now["cli_path"] = installed(shutil.which(os.environ.get(agent.bridge_variable) or ""), reason)
    if agent.bridge_wiring is not None:
        wiring = agent.bridge_wiring(run.server.base_url)
        assert wiring.env == run.wiring.env, "a bridge runs with its CLI's variables, set by adapter_run"
        for path, text in wiring.home_files.items():
            (run.pytester.path / path).parent.mkdir(parents=True, exist_ok=True)
            (run.pytester.path / path).write_text(text, encoding="utf-8")
        fields_now["wiring"] = wiring
    return AcpRun(**fields_now, agent_args=agent.args, live=live, recall_env=agent.recall_env)


def assert_each_turn_reached_the_model_once(run: AcpRun, *, questions: int = 2) -> None:
    """Two cases of two turns: each first turn one "learn" request, each last one "recall" request.

    A memory write adds one follow-up carrying the tool's result ("stored"); that is the same turn. A control arm
    asks each question once more.
    """
    kinds = Counter(entry["kind"] for entry in run.requests())
    assert (kinds["learn"], kinds["recall"]) == (2, questions), dict(kinds)


# The memory run of each agent has a control arm, the last step alone, which gives the zero a plain run would;
# a model that never writes scores 0 whatever the agent (the fake model answers from notes alone), so the plain
# run is kept for one agent in each form (Codex here, Claude Code live).
PLAIN_RUN = ("codex-acp", "plain", 0.0)
PRINT_RUNS = [*((name, "memory", 1.0) for name in ACP_AGENTS), PLAIN_RUN]


@pytest.mark.parametrize(("cli", "mode", "score"), PRINT_RUNS)
def test_each_step_over_acp_scores_as_the_model_remembers(adapter_run, cli, mode, score):
    run = acp_run(adapter_run, cli, mode)

    result, report = run.run(*TWO_CASES, *(("--recall-control",) if mode == "memory" else ()))

    assert report["score"] == score and report["n_total"] == 2, result.stdout.str()[-3000:]
    assert report["n_errors"] == 0
    assert_verdicts_are_what_the_model_said(report, run.requests())
    assert_each_turn_reached_the_model_once(run, questions=2 if mode == "plain" else 4)
    if mode == "plain":
        assert not any(entry["tool"] for entry in run.requests()), "a plain model asked to write memory"
        return
    control = report["control"]
    assert control["score"] == 0.0 and control["lift"] == 1.0
    for record in report["cases"]:
        if record["control"]:
            assert record["reported"] in (None, "UNKNOWN") and not record.get("error"), record
        else:
            assert "recall-acp: tool call " in record["steps"][0]["stderr"], "the memory write is not in the record"


LIVE = ("--recall-session=continue", "--recall-ready-pattern=recall-acp> $")


# The live form on four of the five: OpenCode's ACP sessions are the slowest (about 59 s of CI for its two live
# runs), and its print form above already drives it over ACP; four agents in both forms is what issue 59 asks.
LIVE_AGENTS = [name for name in ACP_AGENTS if name != "opencode"]


LIVE_RUNS = [*((name, "memory", 1.0) for name in LIVE_AGENTS), ("claude-agent-acp", "plain", 0.0)]


@pytest.mark.parametrize(("cli", "mode", "score"), LIVE_RUNS)
def test_live_session_over_acp_each_turn_one_prompt(adapter_run, cli, mode, score):
    run = acp_run(adapter_run, cli, mode, live=True)

    result, report = run.run(*TWO_CASES, *LIVE)

    assert report["score"] == score and report["n_total"] == 2, result.stdout.str()[-3000:]
    assert report["n_errors"] == 0
    assert_verdicts_are_what_the_model_said(report, run.requests())
    assert_each_turn_reached_the_model_once(run)


@pytest.mark.mcp_server
@pytest.mark.parametrize(("cli", "reaches"), [("gemini", True), ("cline", False)])
def test_an_mcp_server_reaches_the_agent_through_session_new(adapter_run, cli, reaches):
    """--recall-mcp over ACP: the step's server is handed to the agent in session/new, and its tools reach the model.

    What is shown is that the server reached the agent: its tools in every request. Cline 3.0.65 takes
    session/new's servers and never starts them: its notes stay in its rules, and recall-cline is its MCP form.
    """
    run = acp_run(adapter_run, cli, "memory")
    config = write_config("server-memory", run.pytester.path / "mcp.json")

    result, report = run.run(*TWO_CASES, f"--recall-mcp={config}")

    assert report["score"] == 1.0 and report["n_total"] == 2, result.stdout.str()[-3000:]
    assert_verdicts_are_what_the_model_said(report, run.requests())
    asked = [entry for entry in run.requests() if entry["kind"] in ("learn", "recall")]
    assert len(asked) == 4
    for entry in asked:
        offered = json.dumps(entry["body"])
        assert ("create_entities" in offered and "search_nodes" in offered) is reaches, "what reached the model"


@pytest.mark.real_cli
@pytest.mark.parametrize(
    ("policy", "score", "answered"), [("allow-once", 1.0, "allow_once"), ("reject", 0.0, "reject_once")]
)
def test_codex_over_acp_asks_before_its_memory_write_and_the_policy_answers(adapter_run, policy, score, answered):
    """Full access, but approval_policy="untrusted": Codex asks the client before the shell command that writes its
    memory, so recall-acp's permission path runs. Allowed, the note is written and read back (1.000); refused, there
    is nothing for the second session to read (0.000). Each step that wrote says which option answered."""
    run = acp_run(adapter_run, "codex-acp", "memory")
    run = dataclasses.replace(run, agent_args=(*run.agent_args, "-c", 'approval_policy="untrusted"'), permission=policy)

    result, report = run.run(*TWO_CASES)

    assert report["score"] == score and report["n_total"] == 2, result.stdout.str()[-3000:]
    assert report["n_errors"] == 0
    for record in report["cases"]:
        said = record["steps"][0]["stderr"]
        assert f": {answered} (--permission={policy})" in said, said[-2000:]
