"""recall-mcp: real MCP memory servers measured with no model, judged by the retrieval judge.

The agent stores each step's prompt with the server's write tool and prints
what its search tool returns for the last step's question; ``contains`` scores
whether the gold answer is in there. Against the reference knowledge-graph
server, a search with the whole question finds nothing (it matches a
substring), and ``read_graph``, which returns everything, finds no more than
the earlier steps themselves give (the ceiling), at the most bytes; past
``contains``'s bound on a retrieval, it is no retrieval at all.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_servers import SERVERS, server_command, write_config

from pytest_recall.scoring.retrieval_judge import score_contains
from pytest_recall.suites.suite_file import suite_cases

SUITE = 'family = "abilities"\nseed = 6\ncount = 7\nhaystack_bytes = 4000\n'


@pytest.mark.parametrize(
    ("stdout", "answer", "kind", "score"),
    [
        ("balance: 27,436.42 USD", "27436.42", "money", 1.0),
        ("balance $27436.42.", "27436.42", "money", 1.0),
        ("27436.43", "27436.42", "money", 0.0),
        ("voucher ar-2026-7261 was largest", "AR-2026-7261", "voucher", 1.0),
        ("", "27436.42", "money", 0.0),
        ("Trade  Debtors\nMill Lane", "trade debtors mill lane", "text", 1.0),
        ('{"observations": ["Balance\\n27,436.42\\nend"]}', "27436.42", "money", 1.0),
    ],
)
def test_contains_judge_finds_the_answer_anywhere_and_counts_the_bytes(stdout, answer, kind, score):
    verdict = score_contains(stdout, {"answer": answer, "answer_kind": kind, "category": "c"})

    assert verdict["score"] == score
    assert verdict["returned_bytes"] == len(stdout.encode())
    assert f"in {len(stdout.encode())} bytes returned" in verdict["reason"]


def run_recall_mcp(
    pytester: pytest.Pytester,
    server: str,
    *extra: str,
    config: Path | None = None,
    count: int = 7,
    select: tuple[str, ...] = (),
) -> Any:
    suite = pytester.path / "abilities-small"
    suite.mkdir(exist_ok=True)
    (suite / "suite.toml").write_text(SUITE.replace("count = 7", f"count = {count}"), encoding="utf-8")
    config = config or write_config(server, pytester.path / "mcp.json")
    agent = Path(sys.executable).with_name("recall-mcp")
    report_path = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        str(suite),
        f"--recall-cmd={agent} {' '.join(extra)}",
        f"--recall-mcp={config}",
        "--recall-answer-judge=contains",
        "--recall-concurrency=4",
        "--recall-timeout=600",
        f"--recall-report={report_path}",
        *select,
        timeout=1800,
    )
    return result, json.loads(report_path.read_text(encoding="utf-8"))


def ceiling(suite: Path) -> dict[str, float]:
    """Per case, 1.0 when its answer is written in an earlier step: what returning everything finds."""
    return {
        case.case_id: score_contains("\n".join(step.prompt for step in case.steps[:-1]), case.expected)["score"]
        for case in suite_cases(suite, "abilities-small")
    }


def returned_bytes(record: dict[str, Any]) -> int:
    """What the memory's search returned to the question, as the tap counted it."""
    return int(record["memory_use"]["returned_bytes"])


@pytest.mark.mcp_server
def test_server_memory_search_with_the_question_finds_nothing_and_read_graph_finds_the_ceiling(pytester):
    server_command("server-memory")

    # Four cases, four categories: a total no note holds, an update, an as-of balance and a lookalike account.
    _, searched = run_recall_mcp(pytester, "server-memory", count=4)
    _, everything = run_recall_mcp(pytester, "server-memory", "--search-tool read_graph --search-args '{}'", count=4)

    assert searched["n_errors"] == everything["n_errors"] == 0
    assert searched["score"] == 0.0
    expected = ceiling(pytester.path / "abilities-small")
    assert {r["id"]: r["score"] for r in everything["cases"]} == expected
    # The whole graph is no retrieval where it holds more amounts than a retrieval returns (issue 65, hole 2), and
    # a computed answer is in no note: every 0 of the dump says which.
    said = ("no retrieval", "answer not found")
    assert all(any(why in r["reason"] for why in said) for r in everything["cases"] if r["score"] == 0.0)
    assert max(map(returned_bytes, searched["cases"])) < min(map(returned_bytes, everything["cases"]))


# basic-memory starts as a Python program for about 12 s of CPU in every session, so it serves the one case of two
# steps (a note, then the question); the quick server serves four cases of four and five steps, all at once.
SERVER_RUNS = {"server-memory": (4, ()), "basic-memory": (7, ("-k", "abilities_0007"))}


@pytest.mark.mcp_server
@pytest.mark.parametrize("server", SERVERS)
def test_recall_mcp_measures_each_server_with_no_agent_failure(pytester, server):
    server_command(server)
    count, select = SERVER_RUNS[server]

    result, report = run_recall_mcp(pytester, server, count=count, select=select)

    assert report["n_errors"] == 0, result.stdout.str()[-3000:]
    ran = [record["id"] for record in report["cases"]]
    assert len(ran) == (1 if select else count)
    assert all(record["score"] in (0.0, 1.0) and returned_bytes(record) >= 0 for record in report["cases"])
    most = ceiling(pytester.path / "abilities-small")
    assert report["score"] <= sum(most[case_id] for case_id in ran) / len(ran)


@pytest.mark.parametrize(
    ("entry", "extra", "says"),
    [
        ({"command": "{scope}/no-such-server"}, "", "*recall-mcp-tap: MCP server 'memory' cannot be started*"),
        (
            {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]},
            "",
            "*recall-mcp: MCP server 'memory' ended or failed before it answered*",
        ),
        pytest.param(
            "server-memory",
            "--search-tool find_everything",
            "*MCP server 'memory' has no tool 'find_everything'*",
            marks=pytest.mark.mcp_server,
        ),
    ],
    ids=["missing", "crashes-at-start", "lacks-the-tool"],
)
def test_a_server_that_cannot_serve_is_one_agent_failure_not_a_score(pytester, entry, extra, says):
    config = pytester.path / "server.json"
    if entry == "server-memory":
        write_config("server-memory", config)
    else:
        config.write_text(json.dumps({"mcpServers": {"memory": entry}}), encoding="utf-8")

    result, report = run_recall_mcp(pytester, "server-memory", extra, config=config, count=1)

    assert [record["outcome"] for record in report["cases"]] == ["agent_failed"]
    result.stdout.fnmatch_lines(["*agent failures (not memory results*"])
    result.stdout.fnmatch_lines([says])  # in the step's stderr tail, or the summary's failure line
