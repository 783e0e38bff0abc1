"""The MCP tap in a real run: a real relay between a real agent process and a real stdio MCP server, per step.

``recall-mcp`` stores each teaching step through the server's ``remember``
tool and answers the question from its ``recall`` tool, so the memory arm
writes before the last step and reads in it; the reference notebook never
starts the server, so its memory arm is unused whatever it scores.
The no-memory control still searches (``recall-mcp`` always does), and the
report says so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from mcp_servers import LEAKY_SERVER as SERVER
from mcp_servers import RECALL_MCP_REMEMBER as RECALL_MCP

from pytest_recall.plugin.junit import parse_figures_block

NOTEBOOK = str(Path(sys.executable).with_name("recall-notebook"))


def run_tapped(recall_suite: Any, command: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    config = recall_suite.pytester.path / "mcp.json"
    entry = {"command": sys.executable, "args": [str(SERVER), "{scope}/store.txt"]}
    config.write_text(json.dumps({"mcpServers": {"memory": entry}}), encoding="utf-8")
    junit = recall_suite.pytester.path / "junit.xml"
    result = recall_suite.run(
        f"--recall-mcp={config}",
        "--recall-answer-judge=contains",
        "--recall-control",
        f"--junitxml={junit}",
        f"--recall-html={recall_suite.pytester.path / 'report.html'}",
        command=command,
        timeout=600,
    )
    return result, recall_suite.report()


@pytest.mark.slow
def test_the_memory_arm_writes_then_reads_and_the_report_says_so(recall_suite: Any) -> None:
    recall_suite.add("balance", ["Remember the balance 12345.67.", "What was the balance?"])
    result, report = run_tapped(recall_suite, RECALL_MCP)

    (case,) = [record for record in report["cases"] if not record["control"]]
    (control,) = [record for record in report["cases"] if record["control"]]
    use = case["memory_use"]
    assert (use["writes_before"], use["reads_last"], use["unused"]) == (1, 1, False), use
    assert use["evidence_retrieved"] is True and use["returned_bytes"] > 0
    assert list(use["latency_ms"]) == ["memory"] and len(use["latency_ms"]["memory"]) == use["calls"]
    control_calls = control["memory_use"]["calls"]
    assert control["memory_use"]["writes_before"] == 0 and control_calls >= 1
    memory = report["memory"]
    assert (memory["cases"], memory["unused"], memory["control_calls"]) == (1, 0, control_calls)
    assert memory["retrieval_table"]["retrieved_right"] == 1
    result.stdout.fnmatch_lines(
        [
            "*memory (MCP tap): 1 of 1 case used it*",
            f"*the no-memory control made {control_calls} memory calls*",
            "*evidence recall 1.000: retrieved and right 1*",
        ]
    )
    page = (recall_suite.pytester.path / "report.html").read_text(encoding="utf-8")
    assert '<ul id="memory-use"><li>memory (MCP tap): 1 of 1 case used it' in page
    tree = ElementTree.parse(recall_suite.pytester.path / "junit.xml")
    properties = {item.get("name"): item.get("value") for item in tree.iter("property")}
    assert properties["recall_memory_unused_cases"] == "0" and properties["recall_memory_evidence_recall"] == "1.0"
    figures = parse_figures_block(next(tree.iter("system-out")).text or "")
    assert figures["recall_memory_reads_last"] == "1" and figures["recall_memory_unused"] == "false"


@pytest.mark.slow
def test_an_agent_that_never_calls_its_memory_is_reported_unused(recall_suite: Any) -> None:
    recall_suite.add("balance", ["Remember the balance 12345.67.", "What was the balance?"])
    result, report = run_tapped(recall_suite, NOTEBOOK)

    (case,) = [record for record in report["cases"] if not record["control"]]
    assert case["memory_use"]["unused"] is True and case["memory_use"]["calls"] == 0
    assert (report["memory"]["cases"], report["memory"]["unused"]) == (1, 1)
    result.stdout.fnmatch_lines(["*memory (MCP tap): 0 of 1 case used it*"])


def test_a_live_sessions_turns_each_carry_the_memory_calls_made_in_them(recall_suite: Any) -> None:
    """One process holds every turn: the tap's calls go to the turn sent before each, so the teaching turns wrote
    and the question read, as print steps show it."""
    recall_suite.add("balance", ["Remember the balance 12345.67.", "Remember the payee Kestrel.", "What balance?"])
    config = recall_suite.pytester.path / "mcp.json"
    entry = {"command": sys.executable, "args": [str(SERVER), "{scope}/store.txt"]}
    config.write_text(json.dumps({"mcpServers": {"memory": entry}}), encoding="utf-8")
    agent = Path(__file__).resolve().parent / "agents" / "live_mcp.py"

    result = recall_suite.run(
        f"--recall-mcp={config}",
        "--recall-session=continue",
        "--recall-ready-pattern=notebook> $",
        "--recall-answer-judge=contains",
        command=f"{sys.executable} {agent}",
    )

    result.assert_outcomes(passed=1)
    (case,) = recall_suite.report()["cases"]
    use = case["memory_use"]
    # Both writes in the turns before the last, the one read in it: all three in one step would say (0, 1).
    assert (use["writes_before"], use["reads_last"], use["calls"]) == (2, 1, 3)
    assert use["unused"] is False and use["evidence_retrieved"] is True
