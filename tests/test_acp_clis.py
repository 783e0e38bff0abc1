"""recall-acp driving real agent CLIs over ACP, each against the fake model server on 127.0.0.1.

The same wiring as the print adapters (tests/cli_wiring.py) points each CLI at
the fake model; only the way it is driven differs: JSON-RPC on its stdio
instead of its print mode. Two seed cases a run, as for the other mechanism
checks: memory 1.000 (the CLI's own memory, written by its own tool, allowed
by recall-acp's permission policy) and plain 0.000, each verdict held
against what the model said, and each tool call in the step's record.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import pytest
from test_adapters import TWO_CASES, AdapterRun, adapter_run, assert_verdicts_are_what_the_model_said

from pytest_recall.testing import Mode

pytestmark = pytest.mark.slow
__all__ = ["adapter_run"]  # the fixture, shared with the print adapters' tests

# The CLI (as tests/cli_wiring.py wires it) and the arguments that make it speak ACP on stdio.
ACP_AGENTS: dict[str, tuple[str, ...]] = {
    "gemini": ("--acp",),
    "qwen": ("--acp",),
    "opencode": ("acp",),
}


@dataclass
class AcpRun(AdapterRun):
    """An adapter run whose command is recall-acp in front of the CLI's ACP mode."""

    agent_args: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        adapter = Path(sys.executable).with_name("recall-acp")
        return shlex.join([str(adapter), "--", self.cli_path, *self.agent_args])


def acp_run(adapter_run: Callable[[str, Mode], AdapterRun], cli: str, mode: Mode) -> AcpRun:
    run = adapter_run(cli, mode)
    return AcpRun(**{field.name: getattr(run, field.name) for field in fields(run)}, agent_args=ACP_AGENTS[cli])


@pytest.mark.parametrize("cli", ACP_AGENTS)
def test_memory_scores_one_over_acp_with_the_tool_calls_recorded(adapter_run, cli):
    run = acp_run(adapter_run, cli, "memory")

    result, report = run.run(*TWO_CASES)

    assert report["score"] == 1.0 and report["n_total"] == 2, result.stdout.str()[-3000:]
    assert report["n_errors"] == 0
    assert_verdicts_are_what_the_model_said(report, run.requests())
    for record in report["cases"]:
        assert "recall-acp: tool call " in record["steps"][0]["stderr"], "the memory write is not in the record"


@pytest.mark.parametrize("cli", ACP_AGENTS)
def test_plain_model_scores_zero_over_acp(adapter_run, cli):
    run = acp_run(adapter_run, cli, "plain")

    result, report = run.run(*TWO_CASES)

    assert report["score"] == 0.0 and report["n_total"] == 2, result.stdout.str()[-3000:]
    assert report["n_errors"] == 0
    assert_verdicts_are_what_the_model_said(report, run.requests())
    assert not any(entry["tool"] for entry in run.requests()), "a plain model asked to write memory"
