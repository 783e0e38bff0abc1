"""recall-acp against a scripted ACP agent (tests/agents/acp_notebook.py): real processes, the real harness.

The agent is the notebook behind ACP, so the seed suite scores 1.000 when its
notes survive in the memory scope and 0.000 when they do not; every other
test makes one thing go wrong and checks that the step fails with the reason
in one line, scored, never an error or an empty answer taken for a reply.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from processes import processes_with

from pytest_recall.agents.adapters.acp import acp_servers, parse_args

AGENT = Path(__file__).resolve().parent / "agents" / "acp_notebook.py"
TWO_CASES = ("-k", "case_01 or case_02")


def acp_command(*agent_args: str, options: tuple[str, ...] = ()) -> str:
    adapter = Path(sys.executable).with_name("recall-acp")
    return shlex.join([str(adapter), *options, "--", sys.executable, str(AGENT), *agent_args])


def step_stderr(record: dict[str, Any]) -> str:
    return "".join(str(step["stderr"]) for step in record["steps"])


def test_memory_scores_one_with_tool_calls_permissions_and_costs_recorded(recall_suite):
    recall_suite.copy_seed_suite()

    result = recall_suite.run("--recall-timeout=60", "--recall-concurrency=2", command=acp_command())

    report = recall_suite.report()
    assert report["score"] == 1.0 and report["n_total"] == 8, result.stdout.str()[-3000:]
    for record in report["cases"]:
        stderr = step_stderr(record)
        assert "recall-acp: tool call write-1: write the notebook [edit] (in_progress)" in stderr
        assert "permission for write the notebook [edit]: allow_once (--permission=allow-once)" in stderr
        costs = [json.loads(line.split(": ", 1)[1]) for line in stderr.splitlines() if line.startswith("recall-cost:")]
        assert costs == [{"cost_usd": 0.0012, "tokens_in": 100, "tokens_out": 30}] * len(record["steps"])
    assert report["cost_usd_total"] > 0


def test_plain_agent_scores_zero(recall_suite):
    recall_suite.copy_seed_suite()

    recall_suite.run("--recall-timeout=60", *TWO_CASES, command=acp_command("--plain"))

    report = recall_suite.report()
    assert (report["score"], report["n_total"], report["n_errors"]) == (0.0, 2, 0)
    assert {record["reported"] for record in report["cases"]} == {"UNKNOWN"}


def test_reject_policy_refuses_the_write_so_nothing_is_remembered(recall_suite):
    recall_suite.copy_seed_suite()

    recall_suite.run("--recall-timeout=60", *TWO_CASES, command=acp_command(options=("--permission=reject",)))

    report = recall_suite.report()
    assert (report["score"], report["n_errors"]) == (0.0, 0)
    assert all(
        "permission for write the notebook [edit]: reject_once (--permission=reject)" in step_stderr(record)
        for record in report["cases"]
    )


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("exit", "recall-acp: the agent exited with status 3 before it answered session/prompt"),
        ("garbage", "recall-acp: the agent wrote something that is not JSON-RPC during session/prompt: "),
        ("error", "recall-acp: the agent answered session/prompt with an error (-32603: model unreachable)"),
        ("silent", "recall-acp: the agent ended its turn without a message"),
        ("refusal", "recall-acp: the agent stopped its turn with 'refusal', not 'end_turn'"),
    ],
)
def test_a_broken_agent_is_a_scored_failure_with_its_reason(recall_suite, how, reason):
    recall_suite.add("case_a", ["Remember 12345.67 as the answer.", "What is the answer?"])

    recall_suite.run("--recall-timeout=30", command=acp_command(f"--fail={how}"))

    (record,) = recall_suite.report()["cases"]
    assert record["score"] == 0.0 and not record.get("error"), record
    assert record["steps"][0]["exit_code"] == 1
    assert reason in record["steps"][0]["stderr"]
    assert not record["reported"], "a failed step must not leave an answer"


def test_a_hanging_agent_is_a_timeout(recall_suite):
    recall_suite.add("case_a", ["Remember 12345.67 as the answer.", "What is the answer?"])

    recall_suite.run("--recall-timeout=3", command=acp_command("--fail=hang"))

    (record,) = recall_suite.report()["cases"]
    assert record["score"] == 0.0 and not record.get("error"), record
    assert record["steps"][0]["timed_out"] is True


def test_mcp_servers_reach_the_agent_in_session_new(recall_suite):
    recall_suite.copy_seed_suite()
    config = recall_suite.pytester.path / "mcp.json"
    server = {"command": "python3", "args": ["-m", "memory_server"], "env": {"STORE": "{scope}/store.jsonl"}}
    config.write_text(json.dumps({"mcpServers": {"notes": server}}), encoding="utf-8")

    recall_suite.run("--recall-timeout=60", "-k", "case_01", f"--recall-mcp={config}", command=acp_command())

    (record,) = recall_suite.report()["cases"]
    line = next(
        line for line in record["steps"][0]["stderr"].splitlines() if line.startswith("acp-notebook: session/new ")
    )
    sent = json.loads(line.split(" ", 2)[2])
    (given,) = sent["mcpServers"]
    assert given["name"] == "notes" and Path(given["command"]).is_absolute()
    # The harness puts its recording tap (sessions/mcp_tap.py) in front of every stdio server.
    assert given["args"][-3:] == ["python3", "-m", "memory_server"]
    (variable,) = given["env"]
    assert variable["name"] == "STORE" and variable["value"].endswith("/store.jsonl")
    assert "{scope}" not in variable["value"]
    assert Path(sent["cwd"]).name.startswith("recall-step-"), "the session is the step's own working folder"


def test_arguments_and_server_shapes():
    assert parse_args(["--", "gemini", "--acp", "hi"]) == ("allow-once", False, ["gemini", "--acp"], "hi")
    assert parse_args(["--live", "--", "gemini", "--acp"]) == ("allow-once", True, ["gemini", "--acp"], None)
    assert parse_args(["--permission=reject", "--", "agent", "hi"])[0] == "reject"
    with pytest.raises(SystemExit, match="unknown option"):
        parse_args(["--permission=maybe", "--", "agent", "hi"])
    with pytest.raises(SystemExit, match="usage"):
        parse_args(["agent", "hi"])
    remote = acp_servers({"web": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"X-Key": "k"}}})
    assert remote == [
        {"type": "sse", "name": "web", "url": "http://127.0.0.1:9/sse", "headers": [{"name": "X-Key", "value": "k"}]}
    ]


def test_a_stopped_adapter_ends_the_agent_and_what_it_started(tmp_path):
    """The harness's timeout stops recall-acp with SIGTERM: the agent's whole process group goes with it."""
    marker = f"ACP_STOP_TEST={uuid.uuid4().hex}"
    adapter = subprocess.Popen(
        [*shlex.split(acp_command("--fail=hang")), "What is the answer?"],
        cwd=tmp_path,
        env={**os.environ, marker.split("=")[0]: marker.split("=")[1]},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert adapter.stderr is not None
    while "hanging, pids" not in (line := adapter.stderr.readline()):
        assert line, "the agent never got to its prompt"
    # The helper is running when the line is printed, but a loaded host may show its /proc entry late.
    deadline = time.monotonic() + 10
    while len(processes_with(marker, parts=("environ",))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(processes_with(marker, parts=("environ",))) == 3, "recall-acp, the agent and its helper"

    adapter.send_signal(signal.SIGTERM)
    stdout, stderr = adapter.communicate(timeout=30)

    assert adapter.returncode == 1 and stdout == ""
    assert "recall-acp: stopped by SIGTERM" in stderr
    deadline = time.monotonic() + 5
    while processes_with(marker, parts=("environ",)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker, parts=("environ",)) == []


@pytest.mark.parametrize(("session", "score"), [("fresh", 0.0), ("continue", 1.0)])
def test_live_turns_go_to_one_acp_session(recall_suite, session, score):
    """The agent forgets at exit: only a live run, every step a turn of one session, scores."""
    recall_suite.copy_seed_suite()
    live = session == "continue"
    command = acp_command("--plain", options=("--live",) if live else ())
    args = ("--recall-session=continue", "--recall-ready-pattern=recall-acp> $") if live else ()

    result = recall_suite.run("--recall-timeout=60", *TWO_CASES, *args, command=command)

    report = recall_suite.report()
    assert (report["score"], report["n_total"], report["n_errors"]) == (score, 2, 0), result.stdout.str()[-3000:]
