"""Retrieval told apart from reasoning on imported LongMemEval and LoCoMo questions, through the MCP tap.

The small data files in ``tests/data`` are in the public formats; the import
keeps each question's evidence turns as ``evidence_text``. ``recall-mcp``
stores every step through a real stdio server behind the tap (the project's
own Python server, and once ``@modelcontextprotocol/server-memory``) and
answers with what the server's recall returned, so each case's evidence is retrieved
and the answer is in it; an agent that runs the same ``recall-mcp`` and then
ignores what came back has the same evidence retrieved and answers wrong.
The two must land in different cells of the report's 2x2 table.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_servers import LEAKY_SERVER as SERVER
from mcp_servers import RECALL_MCP_REMEMBER as RECALL_MCP
from mcp_servers import write_config

from pytest_recall.cli import main

DATA = Path(__file__).resolve().parent / "data"
IGNORES_MEMORY = Path(__file__).resolve().parent / "agents" / "ignores_memory.py"
# Two LongMemEval questions (four sessions each) and one LoCoMo conversation (two ingest sessions, four questions).
IMPORTS = (
    ("longmemeval", "longmemeval_tiny.json", ("--id", "e47becba", "--id", "118b2229")),
    ("locomo", "locomo_tiny.json", ("--id", "conv-30")),
)
CATEGORIES = {"single-session-user", "single-hop", "multi-hop", "temporal", "adversarial"}


def run_imports(
    recall_suite: Any, command: str, judge: str, server: str | None = None
) -> tuple[pytest.RunResult, dict[str, Any]]:
    """The imports run through the tap, in front of the project's own Python server, or the installed ``server``."""
    folders = []
    for benchmark, data, options in IMPORTS:
        folder = recall_suite.pytester.path / benchmark
        assert main(["import", benchmark, str(DATA / data), "--out", str(folder), *options]) == 0
        folders.append(folder)
    config = recall_suite.pytester.path / "mcp.json"
    if server is not None:
        write_config(server, config)
    else:
        entry = {"command": sys.executable, "args": [str(SERVER), "{scope}/store.txt"]}
        config.write_text(json.dumps({"mcpServers": {"memory": entry}}), encoding="utf-8")
    result = recall_suite.run(
        *folders,
        f"--recall-mcp={config}",
        f"--recall-answer-judge={judge}",
        "--recall-concurrency=2",
        command=command,
        timeout=600,
    )
    return result, recall_suite.report()


# The cases the memory's own answer gets right: LoCoMo's q002 answer ("They lost their jobs") is not the text the
# conversation says, and q004's (adversarial: "Not mentioned ...") is in no store, though both had their evidence.
ANSWERED = {"e47becba", "118b2229", "conv-30-q001", "conv-30-q003"}
IGNORER = shlex.join([sys.executable, str(IGNORES_MEMORY)])


# recall-mcp in front of @modelcontextprotocol/server-memory: an entity per step through create_entities, and the
# whole graph read back (its search_nodes matches a substring, which no whole question is).
RECALL_MCP_GRAPH = shlex.join(
    [str(Path(sys.executable).with_name("recall-mcp")), "--search-tool", "read_graph", "--search-args", "{}"]
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("agent", "server", "right", "table"),
    [
        pytest.param(RECALL_MCP, None, ANSWERED, (4, 2), id="answers-from-memory"),
        pytest.param(f"{IGNORER} {RECALL_MCP}", None, set(), (0, 6), id="ignores-memory"),
        pytest.param(
            RECALL_MCP_GRAPH,
            "server-memory",
            ANSWERED,
            (4, 2),
            id="server-memory-answers",
            marks=pytest.mark.mcp_server,
        ),
    ],
)
def test_imported_evidence_puts_each_agent_in_its_cell(
    recall_suite: Any, agent: str, server: str | None, right: set[str], table: tuple[int, int]
) -> None:
    result, report = run_imports(recall_suite, agent, "contains", server)

    cases = {record["id"]: record for record in report["cases"]}
    assert set(cases) == ANSWERED | {"conv-30-q002", "conv-30-q004"}
    for record in cases.values():
        assert record["memory_use"]["reads_last"] == 1 and record["memory_use"]["evidence_retrieved"] is True, record
    assert cases["e47becba"]["memory_use"]["writes_before"] == 3  # three haystack sessions stored through the tap
    # LoCoMo's questions share one ingest (two sessions stored): each of them was taught by its writes.
    shared = {name: case["memory_use"]["writes_before"] for name, case in cases.items() if name.startswith("conv-30")}
    assert shared == dict.fromkeys(("conv-30-q001", "conv-30-q002", "conv-30-q003", "conv-30-q004"), 2)
    assert {name for name, record in cases.items() if record["score"] == 1.0} == right
    memory = report["memory"]
    assert memory["evidence_recall"] == 1.0
    assert set(memory["evidence_recall_by_category"]) == CATEGORIES
    retrieved_right, retrieved_wrong = table
    expected = {"retrieved_right": retrieved_right, "retrieved_wrong": retrieved_wrong}
    assert memory["retrieval_table"] == {**expected, "missed_right": 0, "missed_wrong": 0}
    result.stdout.fnmatch_lines(
        [
            f"*evidence recall 1.000: retrieved and right {retrieved_right}, "
            f"retrieved but wrong (reasoning) {retrieved_wrong}, *"
        ]
    )


@pytest.mark.slow
def test_the_evidence_judge_scores_a_server_alone_by_evidence_recall_per_category(recall_suite: Any) -> None:
    # The same server and questions as above, with no model: what the recall returned is the answer, and it is
    # scored by the evidence it holds, so q002 and q004, whose answers are in no store, score 1 too.
    result, report = run_imports(recall_suite, RECALL_MCP, "evidence")

    scores = {record["id"]: record["score"] for record in report["cases"]}
    assert scores == dict.fromkeys(ANSWERED | {"conv-30-q002", "conv-30-q004"}, 1.0)
    assert report["by_category"] == dict.fromkeys(CATEGORIES, 1.0)
    assert all("evidence found in" in record["reason"] for record in report["cases"])
    result.stdout.fnmatch_lines(
        [
            "*LoCoMo, scored by the evidence judge (--recall-answer-judge=evidence)*",
            "*evidence recall 1.000: retrieved and right 6,*",
            "*single-session-user*1.000*",
        ]
    )
