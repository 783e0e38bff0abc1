"""--recall-mcp and case.toml's mcp: read and checked once, filled in per step, handed to the agent, passed on.

The agent here prints the file RECALL_MCP_CONFIG names, so each step's
filled-in configuration is in the report; the adapters' translations and the
fake model's use of the tools are checked as plain functions.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from pytest_recall.agents.adapters import claude, codex
from pytest_recall.sessions import mcp_tap
from pytest_recall.testing.exchange import Request, ToolCall
from pytest_recall.testing.fake_brain import decide

PRINT_CONFIG = shlex.join(
    [
        sys.executable,
        "-c",
        "import os; p = os.environ.get('RECALL_MCP_CONFIG'); print(open(p).read() if p else 'NONE'); print(p)",
    ]
)
# The server's program must exist (it is checked at start-up); the agent here never starts it.
TEMPLATED = {
    "mcpServers": {
        "memory": {
            "command": sys.executable,
            "args": ["--step", "{step}"],
            "env": {"STORE": "{scope}/store.jsonl", "CASE": "{case}", "HOME_AT": "{home}"},
        }
    }
}


def served(entry: dict) -> list[str]:
    """The server's own command line, behind the tap that every stdio server of a step is started through."""
    assert entry["command"] == sys.executable
    relay, server = entry["args"][: entry["args"].index("--")], entry["args"][entry["args"].index("--") + 1 :]
    assert relay[:3] == ["-I", "-S", str(Path(mcp_tap.__file__).resolve())]
    assert relay[3] == "--log" and relay[4].endswith("/mcp-tap.jsonl") and relay[5:] == ["--server", "memory"]
    return server


def configs(recall_suite) -> list[tuple[dict, str]]:
    """(filled-in configuration, its path) of every step, in order."""
    found = []
    for record in recall_suite.report()["cases"]:
        for step in record["steps"]:
            text, path = step["stdout"].rsplit("\n", 2)[0], step["stdout"].strip().splitlines()[-1]
            found.append((json.loads(text) if text.strip() != "NONE" else None, path))
    return found


def test_each_step_gets_the_configuration_filled_in_for_its_case_and_step(recall_suite, pytester):
    recall_suite.add("c1", ["one", "two"])
    config = pytester.path / "mcp.json"
    config.write_text(json.dumps(TEMPLATED), encoding="utf-8")

    recall_suite.run(f"--recall-mcp={config}", command=PRINT_CONFIG)

    (first, first_path), (second, second_path) = configs(recall_suite)
    server = first["mcpServers"]["memory"]
    assert served(server) == [sys.executable, "--step", "1"] and served(second["mcpServers"]["memory"])[1:] == [
        "--step",
        "2",
    ]
    assert server["env"]["CASE"] == "c1"
    scope = Path(server["env"]["STORE"]).parent
    assert scope.name == "scope" and second["mcpServers"]["memory"]["env"]["STORE"] == f"{scope}/store.jsonl"
    assert server["env"]["HOME_AT"] == str(scope.parent / "home")
    assert not Path(first_path).exists() and not Path(second_path).exists(), "each step's file is gone with it"
    assert recall_suite.report()["cases"][0]["run_mode"]["mcp_servers"] == ["memory"]


def test_a_case_toml_names_its_own_configuration_and_the_flag_wins(recall_suite, pytester):
    own = {"mcpServers": {"casewise": {"command": "x"}}}
    folder = recall_suite.add("c1", ["one", "two"], toml='mcp = "server.json"\n')
    (folder / "server.json").write_text(json.dumps(own), encoding="utf-8")
    recall_suite.add("c2", ["one", "two"])
    flag = pytester.path / "mcp.json"
    flag.write_text(json.dumps(TEMPLATED), encoding="utf-8")

    recall_suite.run(command=PRINT_CONFIG)
    by_case = [(record["id"], record["steps"][0]["stdout"]) for record in recall_suite.report()["cases"]]
    recall_suite.run(f"--recall-mcp={flag}", command=PRINT_CONFIG)

    assert sorted(by_case)[0][1].startswith('{\n  "mcpServers": {\n    "casewise"')
    assert sorted(by_case)[1][1].startswith("NONE")
    assert all(config["mcpServers"].keys() == {"memory"} for config, _ in configs(recall_suite))


@pytest.mark.parametrize(
    ("document", "says"),
    [
        (None, "*--recall-mcp: *mcp.json does not exist; give an MCP configuration file*"),
        ("{not json", "*--recall-mcp: *mcp.json is not a readable JSON file*"),
        ({"servers": {}}, '*must hold {"mcpServers": {"NAME": {"command": ...}}} with at least one server*'),
        ({"mcpServers": {"m": {"args": []}}}, """*server 'm' needs a "command" to start it or a "url" to reach it*"""),
        ({"mcpServers": {"m": {"command": "x", "env": {"A": "{scop}"}}}}, "*unknown placeholder {scop}*"),
        ({"mcpServers": {"m": {"command": "x", "timeout": 3}}}, "*unknown key(s) timeout*"),
    ],
    ids=["missing", "not-json", "no-servers", "no-command", "bad-placeholder", "unknown-key"],
)
def test_a_bad_configuration_stops_the_run_with_one_line(recall_suite, pytester, document, says):
    recall_suite.add("c1", ["one", "two"])
    config = pytester.path / "mcp.json"
    if document is not None:
        config.write_text(document if isinstance(document, str) else json.dumps(document), encoding="utf-8")

    result = recall_suite.run(f"--recall-mcp={config}", report=False)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {says}"])


def test_a_case_toml_naming_a_missing_file_is_a_collection_error(recall_suite):
    recall_suite.add("c1", ["one", "two"], toml='mcp = "nowhere.json"\n')

    result = recall_suite.run(report=False)

    result.stdout.fnmatch_lines(["*c1: mcp: *nowhere.json does not exist*"])


def test_claude_gets_only_the_step_servers_and_a_server_that_failed_fails_the_step(tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(TEMPLATED), encoding="utf-8")

    args = claude.mcp_args({"RECALL_MCP_CONFIG": str(config)})
    command = claude.command("claude", [], "hi", args)
    init = {"type": "system", "subtype": "init", "mcp_servers": [{"name": "memory", "status": "failed"}]}
    result = {"type": "result", "subtype": "success", "result": "UNKNOWN", "is_error": False}
    outcome = claude.read_result("\n".join(json.dumps(message) for message in (init, result)))

    assert args == ["--mcp-config", str(config), "--strict-mcp-config"]
    assert command[command.index("--output-format") + 1] == "stream-json" and "--verbose" in command
    assert claude.mcp_args({}) == [] and "json" in claude.command("claude", [], "hi")
    assert not outcome.ok and "memory (failed)" in outcome.failure


def test_codex_gets_each_server_as_a_required_mcp_servers_table(tmp_path):
    config = tmp_path / "mcp.json"
    entry = {"command": "srv", "args": ["a b"], "env": {"K": 'v"1'}}
    config.write_text(json.dumps({"mcpServers": {"memory": entry, "web": {"url": "http://h/mcp"}}}))

    args = codex.mcp_args({"RECALL_MCP_CONFIG": str(config), "MCP_TIMEOUT": "30000"})

    assert args == [
        "-c",
        'mcp_servers.memory={"command" = "srv", "args" = ["a b"], "env" = {"K" = "v\\"1"}, '
        '"required" = true, "startup_timeout_sec" = 30.0}',
        "-c",
        'mcp_servers.web={"url" = "http://h/mcp", "required" = true, "startup_timeout_sec" = 30.0}',
    ]


@pytest.mark.parametrize("script", ["recall-llm", "recall-aider"])
def test_an_adapter_whose_cli_has_no_mcp_refuses_the_configuration(pytester, monkeypatch, script):
    monkeypatch.setenv("RECALL_MCP_CONFIG", str(pytester.path / "mcp.json"))

    result = pytester.run(str(Path(sys.executable).with_name(script)), "hi")

    assert result.ret == 2
    result.stderr.fnmatch_lines([f"{script}: * cannot use MCP servers; run without --recall-mcp"])


@pytest.mark.parametrize("script", ["recall-gemini", "recall-opencode", "recall-kilo", "recall-qwen", "recall-copilot"])
def test_an_adapter_that_does_not_pass_mcp_servers_on_refuses_the_configuration(pytester, monkeypatch, script):
    monkeypatch.setenv("RECALL_MCP_CONFIG", str(pytester.path / "mcp.json"))

    result = pytester.run(str(Path(sys.executable).with_name(script)), "hi")

    assert result.ret == 2
    result.stderr.fnmatch_lines([f"{script}: this adapter does not pass MCP servers to its CLI yet *--recall-mcp"])


LEDGER = (Path(__file__).resolve().parent.parent / "cases/session-memory-recall/case_01/step1.txt").read_text()
QUESTION = (Path(__file__).resolve().parent.parent / "cases/session-memory-recall/case_01/step2.txt").read_text()
DEFERRED = "Use ToolSearch to load:\nmcp__memory__create_entities\nmcp__memory__search_nodes\n"


def claude_request(prompt: str, tools: set[str], calls: tuple[ToolCall, ...] = ()) -> Request:
    return Request("anthropic", DEFERRED + prompt, prompt, bool(calls), frozenset(tools), calls=calls)


def test_the_fake_model_loads_a_deferred_write_tool_then_stores_the_note_through_it():
    load = decide(claude_request(LEDGER, {"Bash", "ToolSearch"}), "memory")
    loaded = ToolCall("ToolSearch", load.tool_input, "Tool loaded.")
    write = decide(claude_request(LEDGER, {"ToolSearch", "mcp__memory__create_entities"}, (loaded,)), "memory")
    stored = ToolCall(write.tool or "", write.tool_input, '[{"name": "closing balance"}]')
    done = decide(claude_request(LEDGER, {"ToolSearch", "mcp__memory__create_entities"}, (loaded, stored)), "memory")

    assert (load.tool, json.loads(load.tool_input)) == ("ToolSearch", {"query": "select:mcp__memory__create_entities"})
    assert write.tool == "mcp__memory__create_entities" and write.kind == "learn"
    entity = json.loads(write.tool_input)["entities"][0]
    assert entity["name"] == "closing balance" and entity["observations"] == ["recall-note closing_balance = 27436.42"]
    assert done.tool is None and done.kind == "stored" and "recall-note" not in done.text


def test_the_fake_model_answers_only_from_what_the_search_returned():
    tools = {"mcp__memory__create_entities", "mcp__memory__search_nodes"}
    search = decide(claude_request(QUESTION, tools), "memory")
    found = ToolCall(search.tool or "", search.tool_input, '{"observations": ["recall-note closing_balance = 1.00"]}')
    empty = ToolCall(search.tool or "", search.tool_input, '{"entities": []}')

    answer = decide(claude_request(QUESTION, tools, (found,)), "memory")
    # A note in the context, not in a search result, is not memory the server gave back.
    unknown = decide(claude_request("recall-note closing_balance = 9.99\n" + QUESTION, tools, (empty,)), "memory")

    assert (search.tool, json.loads(search.tool_input)) == ("mcp__memory__search_nodes", {"query": "closing balance"})
    assert (answer.text, answer.kind) == ("1.00", "recall")
    assert unknown.text == "UNKNOWN"
    assert decide(claude_request(QUESTION, tools), "plain").tool is None


def test_run_mode_names_the_servers_and_the_answer_judge_only_when_set():
    from pytest_recall.plugin.config import Outputs, RunConfig
    from pytest_recall.sessions.rooms import Isolation

    plain = RunConfig().run_mode()
    given = RunConfig(
        isolation=Isolation(mcp_servers={"memory": {"command": "srv"}}), outputs=Outputs(answer_judge="contains")
    ).run_mode()

    assert "mcp_servers" not in plain and "answer_judge" not in plain
    assert given["mcp_servers"] == ["memory"]
    assert given["answer_judge"] == "contains"
