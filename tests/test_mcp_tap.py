"""The MCP tap: a real relay process between a client and a server, byte for byte, and what it logs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_recall.sessions import mcp_tap
from pytest_recall.sessions.mcp_tap import Recorder
from pytest_recall.sessions.memory_tap import call_kind, parse_tap_log


def _tap(log: Path, *command: str) -> list[str]:
    """The relay started as the harness starts it: the file itself, no site, no package import."""
    return [sys.executable, "-I", "-S", mcp_tap.__file__, "--log", str(log), "--server", "memory", "--", *command]


# A stdio MCP server in miniature: it keeps every byte it reads, answers tools/list and tools/call, and for a
# call of "crash" dies, of "flood" prints a megabyte line, of "slow" answers late.
SERVER = r"""
import json, os, sys, time
received = open(sys.argv[1], "wb")
sent = open(sys.argv[2], "wb")
def say(data):
    sent.write(data); sent.flush()
    sys.stdout.buffer.write(data); sys.stdout.buffer.flush()
for line in sys.stdin.buffer:
    received.write(line); received.flush()
    try:
        message = json.loads(line)
    except ValueError:
        say(b"not json either\n")
        continue
    method, rid = message.get("method"), message.get("id")
    if method == "tools/list":
        tools = [{"name": "search_nodes", "annotations": {"readOnlyHint": True}}, {"name": "create_entities"}]
        say(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}}).encode() + b"\n")
    elif method == "tools/call":
        name = message["params"]["name"]
        if name == "crash":
            os._exit(3)
        if name == "slow":
            time.sleep(0.2)
        text = "x" * 1_000_000 if name == "flood" else "Kestrel lives at 12 Ash Row \u00e9"
        result = {"content": [{"type": "text", "text": text}], "isError": name == "fails"}
        say(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}, ensure_ascii=False).encode() + b"\n")
    elif rid is not None:
        say(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {}}).encode() + b"\n")
"""


def _messages(*calls: str) -> list[bytes]:
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}).encode(),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        json.dumps({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}).encode(),
        b"\xff\xfe not even utf-8",
    ]
    for index, name in enumerate(calls, start=1):
        arguments = {"query": "where does Kestrel live \u00e9"}
        lines.append(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": index,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
            ).encode()
        )
    return [line + b"\n" for line in lines]


def _run(tmp_path: Path, *calls: str) -> tuple[subprocess.CompletedProcess[bytes], list[dict[str, object]], bytes]:
    server = tmp_path / "server.py"
    server.write_text(SERVER, encoding="utf-8")
    log = tmp_path / "tap.jsonl"
    sent = b"".join(_messages(*calls))
    result = subprocess.run(
        _tap(log, sys.executable, str(server), str(tmp_path / "received"), str(tmp_path / "sent")),
        input=sent,
        capture_output=True,
        timeout=60,
        check=False,
    )
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return result, events, sent


def test_both_streams_pass_through_byte_for_byte(tmp_path: Path) -> None:
    result, _events, sent = _run(tmp_path, "search_nodes", "create_entities", "flood")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "received").read_bytes() == sent
    assert result.stdout == (tmp_path / "sent").read_bytes()
    assert len(result.stdout) > 1_000_000


def test_the_log_names_the_tools_offered_and_each_call(tmp_path: Path) -> None:
    _result, events, _sent = _run(tmp_path, "search_nodes", "fails", "slow")
    tools, *calls = events
    assert tools == {
        "event": "tools",
        "server": "memory",
        "tools": [
            {"name": "search_nodes", "annotations": {"readOnlyHint": True}},
            {"name": "create_entities", "annotations": {}},
        ],
    }
    assert [(call["tool"], call["is_error"]) for call in calls] == [
        ("search_nodes", False),
        ("fails", True),
        ("slow", False),
    ]
    first = calls[0]
    assert first["text"] == "Kestrel lives at 12 Ash Row \u00e9"
    assert first["text_bytes"] == len("Kestrel lives at 12 Ash Row \u00e9".encode())
    assert first["argument_bytes"] == len(
        json.dumps({"query": "where does Kestrel live \u00e9"}, ensure_ascii=False).encode()
    )
    assert first["result_bytes"] > first["text_bytes"]
    assert calls[2]["latency_ms"] >= 200


def test_a_flood_is_logged_cut_short_and_a_crash_passes_its_status_on(tmp_path: Path) -> None:
    result, events, _sent = _run(tmp_path, "flood", "crash", "search_nodes")
    assert result.returncode == 3
    flood = events[1]
    assert flood["text_bytes"] == 1_000_000
    assert len(flood["text"]) < 20_000
    assert [event.get("tool") for event in events[1:]] == ["flood"]


def test_a_server_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        _tap(tmp_path / "log", str(tmp_path / "no-such-server")),
        capture_output=True,
        timeout=60,
        check=False,
        text=True,
    )
    assert result.returncode == 127
    assert result.stderr.strip().startswith("recall-mcp-tap: MCP server 'memory' cannot be started: No such file")
    assert len(result.stderr.strip().splitlines()) == 1


def test_sigterm_reaches_the_server_and_no_relay_is_left(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    server = tmp_path / "sleepy.py"
    server.write_text(
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n", encoding="utf-8"
    )
    with subprocess.Popen(_tap(tmp_path / "log", sys.executable, str(server)), stdin=subprocess.PIPE) as relay:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the server never started"
            time.sleep(0.02)
        relay.send_signal(signal.SIGTERM)
        assert relay.wait(timeout=10) == 128 + signal.SIGTERM
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_an_answer_that_overtakes_the_record_of_its_request_is_still_paired(tmp_path: Path) -> None:
    """Each pump forwards before it parses, so a quick server's answer may be looked at before its request."""
    log = tmp_path / "log"
    with log.open("w", encoding="utf-8") as out:
        recorder = Recorder(out, "memory")
        answer = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "12 Ash Row"}]}}
        recorder.from_server(answer, at=10.5, size=80)
        request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "search_nodes"}}
        recorder.from_client(request, at=10.0)
    (event,) = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert (event["tool"], event["text"], event["latency_ms"]) == ("search_nodes", "12 Ash Row", 500.0)


@pytest.mark.parametrize(
    ("tool", "annotations", "kind"),
    [
        ("search_nodes", None, "read"),
        ("open_nodes", None, "read"),
        ("read_graph", None, "read"),
        ("build_context", None, "read"),
        ("create_entities", None, "write"),
        ("add_observations", None, "write"),
        ("write_note", None, "write"),
        ("deleteMemory", None, "write"),
        ("frobnicate", None, "other"),
        ("frobnicate", {"readOnlyHint": True}, "read"),
        ("search_nodes", {"readOnlyHint": False}, "write"),
        ("lookup", {"destructiveHint": True}, "write"),
    ],
)
def test_a_call_is_a_read_or_a_write_by_its_annotations_then_its_name(tool, annotations, kind) -> None:
    assert call_kind(tool, annotations) == kind


def test_the_harness_reads_the_relay_s_own_log_into_calls(tmp_path: Path) -> None:
    _run(tmp_path, "search_nodes", "create_entities")
    calls = parse_tap_log((tmp_path / "tap.jsonl").read_bytes() + b"not an event\n{}\n")
    assert calls.offered == ("memory/search_nodes", "memory/create_entities")
    assert [(call.tool, call.kind) for call in calls.calls] == [("search_nodes", "read"), ("create_entities", "write")]
    assert (calls.reads, calls.writes) == (1, 1)
    assert calls.calls[0].text == "Kestrel lives at 12 Ash Row \u00e9"
