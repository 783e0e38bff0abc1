"""How the adapters of Gemini CLI, OpenCode, Copilot CLI, pi, Cline, Hermes Agent, OpenClaw and Letta Code read
their CLI's output, as plain functions.

The real CLIs run in ``tests/test_adapters.py``; these hold the parsers to the
failure shapes a fake model rarely produces: an error after retries, a turn
that spoke before its tool call, output with no result at all.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from pytest_recall.agents.adapters import cline, copilot, gemini, hermes, letta, openclaw, opencode, pi
from pytest_recall.agents.adapters.common import Outcome


def lines(*events: dict[str, object]) -> str:
    return "".join(json.dumps(event) + "\n" for event in events)


def test_gemini_reads_the_json_result_after_chatter_that_holds_braces():
    models = {"a": {"tokens": {"prompt": 5, "candidates": 2}}, "b": {"tokens": {"prompt": 3, "candidates": 1}}}
    result = json.dumps({"response": "27436.42", "stats": {"models": models}}, indent=2)
    stdout = f"Error: {{not json}}\n{result}\n"

    outcome = gemini.read_json(stdout)

    assert (outcome.ok, outcome.answer, outcome.tokens_in, outcome.tokens_out) == (True, "27436.42", 8, 3)


def test_gemini_error_result_is_a_failure_that_says_why():
    outcome = gemini.read_json('{\n  "session_id": "s",\n  "error": {"type": "Error", "message": "fetch failed"}\n}\n')

    assert not outcome.ok and outcome.failure == "gemini reported an error: fetch failed"
    assert not gemini.read_json("Usage: gemini [options]\n").ok


def test_opencode_answer_is_the_last_step_text_and_figures_add_up():
    def finish(tokens_in: int, cost: float) -> dict[str, object]:
        return {"type": "step_finish", "part": {"tokens": {"input": tokens_in, "output": 1}, "cost": cost}}

    stdout = lines(
        {"type": "step_start", "part": {}},
        {"type": "text", "part": {"text": "Let me save that."}},
        {"type": "tool_use", "part": {"tool": "bash"}},
        finish(10, 0.5),
        {"type": "step_start", "part": {}},
        {"type": "text", "part": {"text": "27436.42"}},
        finish(20, 0.25),
    )

    outcome = opencode.read_events(stdout)

    assert (outcome.ok, outcome.answer, outcome.tokens_in, outcome.tokens_out) == (True, "27436.42", 30, 2)
    assert outcome.cost_usd == 0.75


def test_opencode_error_event_or_no_finished_step_is_a_failure():
    error = {"type": "error", "error": {"name": "APIError", "data": {"message": "Cannot connect to API"}}}

    failed = opencode.read_events(lines({"type": "step_start", "part": {}}, error))

    assert not failed.ok and failed.failure == "opencode: Cannot connect to API"
    assert not opencode.read_events("").ok
    assert opencode.read_events(lines({"type": "step_finish", "part": {"cost": 0}})).cost_usd is None


def test_copilot_answer_is_the_last_message_without_tool_requests():
    stdout = lines(
        {"type": "assistant.message", "data": {"content": "", "toolRequests": [{"name": "bash"}]}},
        {"type": "assistant.message", "data": {"content": "27436.42", "toolRequests": []}},
        {"type": "result", "sessionId": "abc", "exitCode": 0},
    )

    outcome, session = copilot.read_events(stdout)

    assert (outcome.ok, outcome.answer, session) == (True, "27436.42", "abc")


def test_copilot_session_error_non_zero_exit_code_or_no_result_is_a_failure():
    errored, _ = copilot.read_events(
        lines({"type": "session.error", "data": {"message": "model unreachable"}}, {"type": "result", "exitCode": 0})
    )
    exited, _ = copilot.read_events(lines({"type": "result", "exitCode": 1}))
    silent, session = copilot.read_events("")

    assert not errored.ok and errored.failure == "copilot: model unreachable"
    assert not exited.ok and exited.failure == "copilot: exit code 1"
    assert not silent.ok and session is None


def test_copilot_tokens_come_from_the_shutdown_event_of_the_session_log(tmp_path: Path):
    log = tmp_path / "session-state" / "abc" / "events.jsonl"
    log.parent.mkdir(parents=True)
    metrics = {"m1": {"usage": {"inputTokens": 5402, "outputTokens": 1}}, "m2": {"usage": {"inputTokens": 8}}}
    log.write_text(lines({"type": "session.start"}, {"type": "session.shutdown", "data": {"modelMetrics": metrics}}))

    assert copilot.session_tokens("abc", {"COPILOT_HOME": str(tmp_path)}) == (5410, 1)
    assert copilot.session_tokens("missing", {"COPILOT_HOME": str(tmp_path)}) is None


def pi_message(content: object, stop: str = "stop", **usage: object) -> dict[str, object]:
    message = {"role": "assistant", "content": content, "stopReason": stop, "usage": usage}
    return {"type": "message_end", "message": message}


def test_pi_answer_is_the_last_assistant_message_and_figures_add_up():
    stdout = lines(
        {"type": "session", "version": 3},
        {"type": "message_end", "message": {"role": "user", "content": [{"type": "text", "text": "Remember 7."}]}},
        pi_message([{"type": "toolCall", "name": "bash"}], "toolUse", input=10, output=1, cost={"total": 0.5}),
        {"type": "message_end", "message": {"role": "toolResult", "content": [{"type": "text", "text": "ok"}]}},
        pi_message([{"type": "text", "text": "27436"}, {"type": "text", "text": ".42"}], input=20, output=2),
    )

    outcome = pi.read_events(stdout)

    assert (outcome.ok, outcome.answer, outcome.tokens_in, outcome.tokens_out) == (True, "27436.42", 30, 3)
    assert outcome.cost_usd == 0.5
    assert pi.read_events(lines(pi_message([{"type": "text", "text": "x"}], cost={"total": 0}))).cost_usd is None


def test_pi_error_stop_or_no_assistant_message_is_a_failure():
    message = {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "429 Too Many Requests"}
    refused = {"type": "message_end", "message": message}

    failed = pi.read_events(lines(refused))

    assert not failed.ok and failed.failure == "pi: 429 Too Many Requests"
    assert pi.read_events(lines(pi_message([], "aborted"))).failure == "pi: stopped: aborted"
    assert pi.read_events("Error: no model\n").failure == "pi: no assistant message"


def test_pi_broken_events_are_skipped_not_a_traceback():
    stdout = lines(
        {"type": "message_end", "message": "not an object"},
        pi_message("not a list", input="many", output=float("inf"), cost=[1]),
    )

    outcome = pi.read_events(stdout)

    assert (outcome.ok, outcome.answer, outcome.cost_usd) == (True, "", None)
    assert (outcome.tokens_in, outcome.tokens_out) == (0, 0)


def test_opencode_broken_events_are_read_as_nothing_not_a_traceback():
    stdout = lines(
        {"type": "text", "part": "not an object"},
        {"type": "error", "error": ["not an object"]},
        {"type": "step_finish", "part": {"tokens": [1], "cost": "a lot"}},
        {"type": "step_finish", "part": {"tokens": {"input": "many", "output": float("inf")}, "cost": None}},
    )

    outcome = opencode.read_events(stdout)

    assert (outcome.ok, outcome.answer, outcome.cost_usd, outcome.failure) == (
        False,
        "",
        None,
        "opencode: ['not an object']",
    )
    assert (outcome.tokens_in, outcome.tokens_out) == (0, 0)


def test_cline_usage_that_is_no_number_is_read_as_none_not_a_traceback():
    usage = {"inputTokens": "many", "outputTokens": float("inf"), "totalCost": [1]}
    stdout = lines({"type": "run_result", "text": "42", "finishReason": "completed", "usage": usage})

    outcome = cline.read_events(stdout)

    assert (outcome.ok, outcome.answer, outcome.cost_usd) == (True, "42", None)
    assert (outcome.tokens_in, outcome.tokens_out) == (0, 0)


FAKE_CLINE = """\
import json, sys
warning = "DeprecationWarning: AI SDK Warning (openai-compatible.chat / fake): Deprecated: 'openai-compatible'"
for _ in range(3):
    trace = ("      at iX (/$bunfs/root/chunk.js:26:46952)", "      at transform (/$bunfs/root/chunk.js:44:1)")
    print(warning, *trace, "", sep="\\n", file=sys.stderr)
print("Error: the model said something went wrong", file=sys.stderr)
print(json.dumps({"type": "run_result", "text": "42", "finishReason": "completed", "usage": {}}))
"""


def test_cline_sdk_warnings_reach_the_transcript_once_without_their_stack_traces(tmp_path, monkeypatch):
    """Cline's AI SDK prints a deprecation warning with its stack at every request: the transcript keeps each
    warning once, with its count, and every other line of stderr."""
    cli = tmp_path / "cline"
    cli.write_text(f"#!{sys.executable}\n{FAKE_CLINE}", encoding="utf-8")
    cli.chmod(0o755)
    monkeypatch.setenv("RECALL_CLINE_BIN", str(cli))
    monkeypatch.setenv("HOME", str(tmp_path))
    script = Path(sys.executable).with_name(cline.ADAPTER.script)

    done = subprocess.run([str(script), "what is it?"], capture_output=True, text=True, timeout=60, check=False)

    assert (done.returncode, done.stdout) == (0, "42\n"), done.stderr
    lines = done.stderr.splitlines()
    assert " at " not in done.stderr
    assert lines[:2] == [
        "DeprecationWarning: AI SDK Warning (openai-compatible.chat / fake): Deprecated: 'openai-compatible'"
        " (x3, stack traces left out)",
        "Error: the model said something went wrong",
    ]


FAKE_CLINE_WITH_MCP = """\
import json, os, sys
settings = json.load(open(os.environ["CLINE_MCP_SETTINGS_PATH"]))
print(json.dumps({"type": "run_result", "text": json.dumps(settings), "finishReason": "completed", "usage": {}}))
"""


def test_cline_gets_the_runs_mcp_servers_in_its_own_shape_and_fails_a_step_whose_server_listed_no_tools(
    tmp_path, monkeypatch
):
    """Cline reads MCP servers from the file CLINE_MCP_SETTINGS_PATH names and says nothing of one it cannot start:
    the adapter writes the step's servers there, each a ``transport``, and reads the harness's tap log after the
    run; a tapped server that never answered ``tools/list`` fails the step, naming it."""
    cli = tmp_path / "cline"
    cli.write_text(f"#!{sys.executable}\n{FAKE_CLINE_WITH_MCP}", encoding="utf-8")
    cli.chmod(0o755)
    tap_log = tmp_path / "mcp-tap.jsonl"
    tap = ["-I", "recall-mcp-tap", "--log", str(tap_log), "--server"]
    servers = {
        "notes": {"command": sys.executable, "args": [*tap, "notes", "--", "notes-server"], "env": {"A": "1"}},
        "graph": {"command": sys.executable, "args": [*tap, "graph", "--", "graph-server"]},
        "remote": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"X": "y"}},
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    monkeypatch.setenv("RECALL_CLINE_BIN", str(cli))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("RECALL_MCP_CONFIG", str(config))
    script = Path(sys.executable).with_name(cline.ADAPTER.script)
    tap_log.write_text(json.dumps({"event": "tools", "server": "notes", "tools": []}) + "\nnot json\n")

    done = subprocess.run([str(script), "what is it?"], capture_output=True, text=True, timeout=60, check=False)

    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == (
        "cline: MCP server 'graph' listed no tools (it did not start or answer, and Cline goes on without it); "
        "check the --recall-mcp configuration"
    )

    with tap_log.open("a", encoding="utf-8") as log:
        log.write(json.dumps({"event": "tools", "server": "graph", "tools": []}) + "\n")
    done = subprocess.run([str(script), "what is it?"], capture_output=True, text=True, timeout=60, check=False)

    assert done.returncode == 0, done.stderr
    shaped = json.loads(done.stdout)["mcpServers"]
    assert shaped["notes"] == {"transport": {"type": "stdio", **servers["notes"]}}
    assert shaped["remote"] == {"transport": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"X": "y"}}}


def test_hermes_answer_counts_only_when_its_usage_report_says_the_run_completed(tmp_path: Path):
    """Hermes prints its model's failure where the answer goes and exits 0; only the usage report tells them apart."""
    usage = tmp_path / "usage.json"
    usage.write_text(json.dumps({"completed": True, "failed": False, "input_tokens": 40, "output_tokens": 2}))
    assert hermes.read_usage("27436.42\n", usage) == Outcome("27436.42", ok=True, tokens_in=40, tokens_out=2)

    usage.write_text(json.dumps({"completed": False, "failed": True, "input_tokens": None}))
    failed = hermes.read_usage("API call failed after 3 retries: Connection error.\n", usage)
    assert not failed.ok
    assert failed.failure == "hermes: the run failed: API call failed after 3 retries: Connection error."
    assert not hermes.read_usage("27436.42\n", tmp_path / "never-written.json").ok


FAKE_HERMES = """\
import json, os, sqlite3, sys
usage = sys.argv[sys.argv.index("--usage-file") + 1]
home = os.environ["HERMES_HOME"]
db = sqlite3.connect(os.path.join(home, "state.db"))
db.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, tool_calls TEXT, "
           "tool_call_id TEXT, tool_name TEXT, timestamp REAL)")
asked = [
    {"id": "c1", "function": {"name": "memory", "arguments": '{"action": "add"}'}},
    {"id": "c2", "function": {"name": "terminal", "arguments": "{}"}},
]
rows = [
    ("s1", "assistant", None, json.dumps(asked), None, None, 100.0),
    ("s1", "tool", '{"success": true}', None, "c1", "memory", 100.25),
    ("s1", "tool", "ok", None, "c2", "terminal", 100.5),
    ("s1", "tool", '{"success": false, "error": "full"}', None, "c3", "memory", "not a time"),
    ("s0", "tool", "an older session's", None, "c9", "session_search", 1.0),
]
db.executemany("INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, tool_name, timestamp) "
               "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
db.commit()
open(usage, "w").write(json.dumps({"completed": True, "failed": False, "session_id": "s1"}))
print("noted")
"""


def test_hermes_memory_tool_calls_of_the_step_go_to_the_memory_log_from_its_state_db(tmp_path: Path, monkeypatch):
    """Hermes Agent's memory is a tool of its own, which no tap sees: the adapter reads the step's session from
    Hermes's state.db afterwards and logs each memory tool call, with its arguments, result and latency, in the
    tap's shape; another session's calls and other tools are left out, and a time that is no number is no crash."""
    cli = tmp_path / "hermes"
    cli.write_text(f"#!{sys.executable}\n{FAKE_HERMES}", encoding="utf-8")
    cli.chmod(0o755)
    home = tmp_path / "hermes-home"
    home.mkdir()
    log = tmp_path / "memory-calls.jsonl"
    monkeypatch.setenv("RECALL_HERMES_BIN", str(cli))
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv("RECALL_MEMORY_LOG", str(log))
    script = Path(sys.executable).with_name(hermes.ADAPTER.script)

    done = subprocess.run([str(script), "remember this"], capture_output=True, text=True, timeout=60, check=False)

    assert (done.returncode, done.stdout) == (0, "noted\n"), done.stderr
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert events[0] == {"event": "kinds", "reads": ["session_search"], "writes": ["memory"], "server": "hermes"}
    calls = [(e["tool"], e["argument_bytes"], e["text"], e["is_error"], e["latency_ms"]) for e in events[1:]]
    assert calls == [
        ("memory", len('{"action": "add"}'), '{"success": true}', False, 250.0),
        ("memory", 0, '{"success": false, "error": "full"}', True, 0.0),
    ]
    assert all(e["event"] == "call" and e["server"] == "hermes" for e in events[1:])


def test_hermes_model_url_is_read_from_the_model_block_of_config_yaml_only(tmp_path: Path):
    config = tmp_path / ".hermes" / "config.yaml"
    config.parent.mkdir()
    config.write_text(
        "auxiliary:\n  base_url: http://elsewhere/v1\nmodel:\n  provider: custom\n  base_url: 'http://127.0.0.1:9/v1'\n"
    )
    assert hermes.model_base_url({"HOME": str(tmp_path)}) == "http://127.0.0.1:9/v1"
    assert hermes.model_base_url({"HERMES_HOME": str(tmp_path / "none")}) is None


def test_openclaw_answer_is_the_payload_text_and_an_error_or_aborted_run_fails():
    usage = {"input": 12116, "output": 3}
    envelope = {"payloads": [{"text": "27436.42", "mediaUrl": None}], "meta": {"agentMeta": {"usage": usage}}}
    assert openclaw.read_envelope(json.dumps(envelope)) == Outcome("27436.42", ok=True, tokens_in=12116, tokens_out=3)

    failed = {"ok": False, "error": {"type": "provider", "message": "Connection error."}}
    assert openclaw.read_envelope(json.dumps(failed)).failure == "openclaw: the run failed: Connection error."
    assert not openclaw.read_envelope(json.dumps({**envelope, "meta": {"aborted": True}})).ok
    assert not openclaw.read_envelope("[openclaw] Config invalid\n").ok


def test_openclaw_model_url_is_the_primary_models_provider_in_openclaw_json(tmp_path: Path):
    config = tmp_path / ".openclaw" / "openclaw.json"
    config.parent.mkdir()
    providers = {"other": {"baseUrl": "http://elsewhere/v1"}, "fake": {"baseUrl": "http://127.0.0.1:9/v1"}}
    config.write_text(json.dumps({"agents": {"defaults": {"model": "fake/m"}}, "models": {"providers": providers}}))
    assert openclaw.model_base_url({"HOME": str(tmp_path)}) == "http://127.0.0.1:9/v1"
    config.write_text("{ agents: {} } // JSON5")
    assert openclaw.model_base_url({"HOME": str(tmp_path)}) is None


def test_letta_result_spans_lines_and_its_usage_is_openais():
    result = {"type": "result", "subtype": "success", "is_error": False, "result": "27436.42"}
    usage = {"prompt_tokens": 8236, "completion_tokens": 2}
    stdout = json.dumps({**result, "usage": usage}, indent=2)
    assert letta.read_json(stdout) == Outcome("27436.42", ok=True, tokens_in=8236, tokens_out=2)

    failed = letta.read_json(json.dumps({**result, "subtype": "error", "is_error": True, "result": "boom"}))
    assert not failed.ok and failed.failure == "letta reported an error (error): boom"
    assert not letta.read_json("Error: no provider connected\n").ok


def test_letta_agent_gets_the_model_named_among_the_extra_arguments():
    assert letta.model_args(["-m", "openai-compatible/fake"]) == ["--model", "openai-compatible/fake"]
    assert letta.model_args(["--model=x/y", "--yolo"]) == ["--model", "x/y"]
    assert letta.model_args(["--yolo"]) == []


def test_openclaw_lock_files_of_the_steps_databases_go_and_the_folder_with_the_last_step_out(tmp_path: Path):
    """OpenClaw leaves three lock files a database in /tmp/openclaw-state-locks-<uid>, named by a hash of the
    database's path; the adapter removes its own step's, and the folder once no step runs and it is empty."""
    state = tmp_path / "home" / ".openclaw"
    (state / "state").mkdir(parents=True)
    (state / "state" / "openclaw.sqlite").write_bytes(b"")
    own = hashlib.sha256(str((state / "state" / "openclaw.sqlite").resolve()).encode()).hexdigest()[:8]
    folder = tmp_path / "openclaw-state-locks-1000"

    log_folder = tmp_path / "openclaw"
    with openclaw.state_locks_removed_after(folder, state, log_folder):
        with openclaw.state_locks_removed_after(folder, tmp_path / "another-home", log_folder):
            log_folder.mkdir()
            for family in ("gateway-lifecycle", "state-handles", "state-lifecycle"):
                (folder / f"{family}.{own}.lock.sqlite").write_bytes(b"")
        assert folder.is_dir() and log_folder.is_dir(), "removed while another step still ran"
    assert not folder.exists() and not log_folder.exists()

    folder.mkdir()
    users = folder / "state-lifecycle.0123abcd.lock.sqlite"
    users.write_bytes(b"")
    with openclaw.state_locks_removed_after(folder, state, log_folder):
        (folder / f"state-handles.{own}.lock.sqlite").write_bytes(b"")
    assert sorted(folder.iterdir()) == [users], "an OpenClaw of the user's lost its lock, or ours stayed"

    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with openclaw.state_locks_removed_after(blocked, state, log_folder):
        ran = True
    assert ran and blocked.read_text() == "not a folder"
