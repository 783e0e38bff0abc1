"""The configuration file's say in what the tap records: a server's own read/write tool lists, and servers by URL.

A server entry's ``recall`` key names which tools read and which write, for
servers whose tools' annotations and names say neither (or say it wrong); the
harness keeps it and strips it from the file the CLI reads, since CLIs reject
keys they do not know. A server reached by URL is not behind the tap: its calls
are unknown, so a case with one is never reported as leaving its memory unused,
and the summary says why.
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

from pytest_recall.cases.mcp_config import McpConfigError, read_mcp_config
from pytest_recall.sessions.memory_tap import behind_tap, parse_tap_log

NOTEBOOK = str(Path(sys.executable).with_name("recall-notebook"))
# The leaky server's remember stores and its recall returns the store; named the wrong way round on purpose, so
# the calls can only be classed as the file says if the file wins over the tools' names.
SWAPPED = {"reads": ["remember"], "writes": ["recall"]}
HOSTED = {"url": "http://127.0.0.1:9/mcp", "recall": {"reads": ["search"]}}


def stdio_entry(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER), "{scope}/store.txt"], **extra}


def test_the_cli_never_sees_the_recall_key_and_the_log_keeps_it(tmp_path: Path) -> None:
    log = tmp_path / "tap.jsonl"
    servers = behind_tap({"memory": stdio_entry(recall=SWAPPED), "hosted": HOSTED}, log)

    assert "recall" not in servers["memory"] and servers["hosted"] == {"url": HOSTED["url"]}
    call = {"event": "call", "server": "memory", "tool": "remember", "text": "stored", "latency_ms": 1}
    calls = parse_tap_log(log.read_bytes() + json.dumps(call).encode() + b"\n")
    assert [(entry.tool, entry.kind) for entry in calls.calls] == [("remember", "read")]
    assert calls.untapped == ("hosted",)


def run(
    recall_suite: Any, servers: dict[str, Any], command: str, *options: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    recall_suite.add("balance", ["Remember the balance 12345.67.", "What was the balance?"])
    config = recall_suite.pytester.path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    result = recall_suite.run(f"--recall-mcp={config}", "--recall-answer-judge=contains", *options, command=command)
    return result, recall_suite.report()


@pytest.mark.slow
def test_a_server_s_own_read_and_write_lists_win_over_its_tools_names(recall_suite: Any) -> None:
    result, report = run(recall_suite, {"memory": stdio_entry(recall=SWAPPED)}, RECALL_MCP)

    (case,) = report["cases"]
    assert case["score"] == 1.0, result.stdout.str()
    use = case["memory_use"]
    # Step 1 searched (recall, a "write" here) then stored (remember, a "read"); the last step's "read" returned
    # "stored", so the evidence was not retrieved by what the file calls reads.
    assert (use["writes_before"], use["reads_last"], use["evidence_retrieved"]) == (1, 1, False), use


@pytest.mark.slow
def test_a_server_reached_by_url_leaves_memory_use_unknown_never_unused(recall_suite: Any) -> None:
    junit = recall_suite.pytester.path / "junit.xml"
    result, report = run(recall_suite, {"memory": stdio_entry(), "hosted": HOSTED}, NOTEBOOK, f"--junitxml={junit}")

    (case,) = report["cases"]
    use = case["memory_use"]
    assert (use["calls"], use["untapped"], use["unused"]) == (0, ["hosted"], False), use
    memory = report["memory"]
    assert (memory["unused"], memory["untapped_servers"], memory["untapped_cases"]) == (0, ["hosted"], 1)
    result.stdout.fnmatch_lines(
        ["*memory use UNKNOWN for server(s) 'hosted' in 1 case: reached by URL, which the tap does not see*"]
    )
    properties = {item.get("name"): item.get("value") for item in ElementTree.parse(junit).iter("property")}
    assert properties["recall_memory_untapped_cases"] == "1" and properties["recall_memory_unused_cases"] == "0"


@pytest.mark.parametrize(
    ("kinds", "says"),
    [
        ({"reads": "search"}, '"recall" must be {"reads": [TOOL, ...], "writes": [TOOL, ...]}'),
        ({"read": ["search"]}, '"recall" must be {"reads": [TOOL, ...], "writes": [TOOL, ...]}'),
        ({"reads": ["search"], "writes": ["search"]}, '"recall" names search as both a read and a write'),
    ],
)
def test_a_bad_recall_key_is_one_line_naming_the_server(tmp_path: Path, kinds: Any, says: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"memory": stdio_entry(recall=kinds)}}), encoding="utf-8")
    with pytest.raises(McpConfigError) as raised:
        read_mcp_config(config, "--recall-mcp")
    assert str(raised.value).endswith(f"server 'memory': {says}") and "\n" not in str(raised.value)
