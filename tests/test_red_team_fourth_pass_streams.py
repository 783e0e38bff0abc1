"""Issue 65, holes 6 and 7: a hostile stream is one line and exit 1 (or passed over), never a traceback.

The adapters read their CLI's JSON, ``recall-acp`` its agent's, and the MCP
tap its server's. Each is fed what no real CLI, agent or server writes (a line
nested 3,000 deep, NaN, ``1e999``, a 400-digit integer, a string or a list
where a number or an object goes) as a real process where it matters.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.agents.adapters import claude, cline, codex, copilot, gemini, llm, opencode, pi, result_message
from pytest_recall.sessions.mcp_tap import Recorder, _Lines

BIN = Path(sys.executable).parent
ACP_AGENT = Path(__file__).resolve().parent / "agents" / "acp_notebook.py"
DEEP = "[" * 3000 + "]" * 3000
HOSTILE = [float("nan"), float("inf"), int("1" + "0" * 400), "many", [1], {"a": 1}]
READERS = {
    "pi": pi.read_events,
    "cline": cline.read_events,
    "opencode": opencode.read_events,
    "codex": codex.read_events,
    "gemini": gemini.read_json,
    "llm": llm.read_json,
    "claude": claude.read_result,
    "qwen": lambda stdout: result_message.read_result(stdout, "qwen"),
    "copilot": lambda stdout: copilot.read_events(stdout)[0],
}


def hostile_lines() -> list[str]:
    """Each CLI's own events with a hostile value in every figure and object it reads."""
    lines = [DEEP]
    for bad in HOSTILE:
        lines += [
            json.dumps({"type": "message_end", "message": {"role": "assistant", "usage": {"input": bad}}}),
            json.dumps({"type": "message_end", "message": {"role": "assistant", "usage": {"cost": {"total": bad}}}}),
            json.dumps({"type": "run_result", "text": "42", "usage": {"inputTokens": bad, "totalCost": bad}}),
            json.dumps({"type": "step_finish", "part": {"tokens": {"input": bad, "output": bad}, "cost": bad}}),
            json.dumps({"type": "step_finish", "part": bad}),
            json.dumps({"type": "turn.completed", "usage": {"input_tokens": bad, "output_tokens": bad}}),
            json.dumps({"type": "turn.completed", "usage": bad}),
            json.dumps({"type": "result", "subtype": "success", "result": bad, "total_cost_usd": bad, "usage": bad}),
            json.dumps({"response": bad, "stats": {"models": {"m": {"tokens": {"prompt": bad, "candidates": bad}}}}}),
            json.dumps({"response": "x", "stats": {"models": bad}}),
            json.dumps({"type": "assistant.message", "data": bad}),
        ]
    return lines


@pytest.mark.parametrize("name", list(READERS))
def test_no_reader_raises_on_a_hostile_line(name: str) -> None:
    for line in hostile_lines():
        with redirect_stderr(io.StringIO()):
            outcome = READERS[name](line)
        assert "\n" not in outcome.failure, (name, line[:80])
        if line is DEEP:
            assert not outcome.ok and outcome.failure, (name, outcome)


@pytest.mark.parametrize("adapter", ["pi", "kilo", "cline", "opencode", "codex", "claude"])
def test_an_adapter_given_a_deep_line_says_so_in_one_line_and_exits_1(tmp_path: Path, adapter: str) -> None:
    fake = tmp_path / "fake-cli"
    out = tmp_path / "out.txt"
    out.write_text(DEEP + "\n", encoding="utf-8")
    fake.write_text(f"#!/bin/sh\ncat {out}\n", encoding="utf-8")
    fake.chmod(0o755)
    env = {**os.environ, f"RECALL_{adapter.upper()}_BIN": str(fake), "HOME": str(tmp_path)}
    env.pop("RECALL_COST_FILE", None)
    done = subprocess.run(
        [str(BIN / f"recall-{adapter}"), "What was the balance?"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"recall-{adapter}: the CLI's output cannot be read (a line of JSON nested too deep to read)"


@pytest.mark.parametrize(
    ("planted", "said"),
    [
        ("--usage=NaN", "usage inputTokens as nan"),
        ("--usage=1e999", "usage inputTokens as inf"),
        ("--usage=1" + "0" * 400, "usage inputTokens as a 401-digit integer"),
        ('--usage="abc"', "usage inputTokens as str"),
        ("--cost=[1]", "usage_update cost amount as list"),
        ("--cost=NaN", "usage_update cost amount as nan"),
        ('--cost="abc"', "usage_update cost amount as str"),
        ("--options=5", "the agent asked for permission with options that are no list (int)"),
    ],
)
def test_recall_acp_on_a_malformed_figure_says_so_in_one_line_and_exits_1(
    tmp_path: Path, planted: str, said: str
) -> None:
    env = {**os.environ, "RECALL_SCOPE_DIR": str(tmp_path)}
    env.pop("RECALL_COST_FILE", None)
    done = subprocess.run(
        [str(BIN / "recall-acp"), "--", sys.executable, str(ACP_AGENT), planted, "remember 12345.67"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("recall-acp: ") and said in last, last


# -- hole 6: the tap relay and a deep line ---------------------------------------------------------


def test_the_relay_records_the_lines_after_a_deep_one(tmp_path: Path) -> None:
    log = tmp_path / "tap.jsonl"
    with log.open("w", encoding="utf-8") as handle:
        recorder = Recorder(handle, "memory")
        client, server = _Lines(lambda m, at, _size: recorder.from_client(m, at)), _Lines(recorder.from_server)
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {}}}
        answer = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "12345.67"}]}}
        for side in (client, server):
            side.feed(("[" * 1000 + "]" * 1000 + "\n").encode(), 0.0)
            side.feed(("{" + '"a":{' * 1000 + "}" * 1001 + "\n").encode(), 0.0)
        client.feed((json.dumps(request) + "\n").encode(), 1.0)
        server.feed((json.dumps(answer) + "\n").encode(), 1.5)
    events: list[Any] = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(event["event"], event["tool"], event["text"]) for event in events] == [("call", "search", "12345.67")]
