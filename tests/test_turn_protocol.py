"""The turn protocol of live sessions, against a TUI that draws the way Claude Code and Codex do.

The agent is ``tests/agents/fake_tui.py``: raw terminal, bracketed paste, an
input box and a footer redrawn many times a second while it thinks, each
exchange written above as ``❯ turn`` and ``● answer``. The real CLIs are
driven in ``tests/test_live_clis.py``; these tests pin the harness's side
with a TUI whose every behaviour is known.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest

from pytest_recall.cases.live_protocol import (
    PASTE_END,
    PASTE_START,
    LiveProtocol,
    ProtocolError,
    decode_escapes,
    parse_exit_codes,
)
from pytest_recall.sessions.render import LiveScreen

# The fake TUI's idle frame, from its top rule: what comes before it is the turn's output.
IDLE = r"^─+\n❯\s*\n─+\n\s*\? for shortcuts$"
MESSAGE = r"^● (.*(?:\n  .*)*)"
TUI_PROTOCOL = (
    "--recall-session=continue",
    "--recall-paste=bracketed",
    "--recall-quit=/exit\\r",
    f"--recall-ready-pattern={IDLE}",
    f"--recall-answer-pattern={MESSAGE}",
)


def logged_turns(path) -> list[str]:
    return [json.loads(line)["turn"] for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_tui_scores_every_seed_case_live_with_each_turn_one_paste_and_the_answer_read_from_the_screen(
    recall_suite, tmp_path
):
    seed = recall_suite.copy_seed_suite()
    log = tmp_path / "turns.jsonl"
    agent = recall_suite.agent("fake_tui", "--think", "0.4", "--log", str(log))

    result = recall_suite.run(seed, *TUI_PROTOCOL, "--recall-concurrency=4", command=agent)

    result.assert_outcomes(passed=8)
    records = recall_suite.records()
    # Every step reached the agent as one whole submission: the multi-line prompt intact.
    steps = [step.read_text(encoding="utf-8").removesuffix("\n") for step in seed.glob("*/step*.txt")]
    assert Counter(logged_turns(log)) == Counter(steps) and len(steps) == 16
    for record in records.values():
        answer = record["steps"][-1]["stdout"]
        # The screen's answer is the message alone: no echo, no spinner, no frame.
        assert answer == record["reported"] == str(record["expected"])
        assert record["steps"][0]["stdout"].startswith("Noted: the answer is ")
        # The raw bytes are kept, spinner frames and all.
        terminal = record["steps"][-1]["terminal"]
        assert "esc to interrupt" in terminal and "\x1b[J" in terminal


def one_seed_case(recall_suite) -> Path:
    """The seed suite's first case alone, as cases/session-memory-recall/case_01."""
    seed = recall_suite.copy_seed_suite()
    for case in seed.iterdir():
        if case.is_dir() and case.name != "case_01":
            shutil.rmtree(case)
    return seed / "case_01"


def test_a_tui_given_its_turn_typed_never_gets_it_submitted_and_the_timeout_says_so(recall_suite, tmp_path):
    seed = one_seed_case(recall_suite).parent
    log = tmp_path / "turns.jsonl"
    agent = recall_suite.agent("fake_tui", "--think", "0.2", "--log", str(log))
    typed = [arg for arg in TUI_PROTOCOL if not arg.startswith("--recall-paste")]

    result = recall_suite.run(seed, *typed, "--recall-timeout=2", "--recall-grace=0.5", command=agent)

    # A raw terminal reads the typed newlines as newlines in its input box, and only Enter (CR)
    # submits: the bracketed paste and the Enter after it are what make a step one turn.
    result.assert_outcomes(failed=1)
    assert not log.exists()
    record = recall_suite.records()["case_01"]
    assert record["outcome"] == "timed_out" and len(record["steps"]) == 1


def test_a_session_that_exits_before_its_first_turn_is_reported_with_what_it_printed(recall_suite):
    recall_suite.add("case_01", ["remember 12345.67", "recall"])
    agent = recall_suite.agent("fake_tui", "--crash-at-start")

    result = recall_suite.run(*TUI_PROTOCOL, command=agent)

    result.assert_outcomes(failed=1)
    record = recall_suite.records()["case_01"]
    first = record["steps"][0]
    assert first["exit_code"] == 1 and record["outcome"] == "agent_failed"
    assert "Unable to connect to the model service" in first["stdout"]
    assert first["duration_s"] > 0.1
    result.stdout.fnmatch_lines(["*Unable to connect to the model service*"])


@pytest.mark.parametrize(("ok_codes", "passes"), [(None, False), ("0,3", True)])
def test_an_exit_status_counts_as_ending_well_only_when_ok_exit_codes_says_so(recall_suite, ok_codes, passes):
    seed = one_seed_case(recall_suite).parent
    agent = recall_suite.agent("fake_tui", "--think", "0.2", "--exit-code", "3")
    codes = () if ok_codes is None else (f"--recall-ok-exit-codes={ok_codes}",)

    result = recall_suite.run(seed, *TUI_PROTOCOL, *codes, command=agent)

    result.assert_outcomes(**({"passed": 1} if passes else {"failed": 1}))
    record = next(iter(recall_suite.records().values()))
    assert record["steps"][-1]["exit_code"] == 3
    assert record["run_mode"]["ok_exit_codes"] == ([0, 3] if passes else None)
    if not passes:
        assert record["reason"] == "agent exited 3"


def test_a_case_toml_carries_the_whole_protocol(recall_suite):
    toml = (
        'session = "continue"\npaste = "bracketed"\nquit = "/bye\\r"\nok_exit_codes = [0, 5]\n'
        f"ready_pattern = {json.dumps(IDLE)}\nanswer_pattern = {json.dumps(MESSAGE)}\n"
    )
    case = one_seed_case(recall_suite)
    (case / "case.toml").write_text(toml, encoding="utf-8")
    agent = recall_suite.agent("fake_tui", "--think", "0.2", "--quit", "/bye", "--exit-code", "5")

    result = recall_suite.run(case.parent, command=agent)

    result.assert_outcomes(passed=1)
    record = recall_suite.records()["case_01"]
    assert record["steps"][-1]["stdout"] == str(record["expected"]) and record["steps"][-1]["exit_code"] == 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--recall-live-preset=vim",), "*--recall-live-preset must be one of llm-chat, claude, codex, not 'vim'*"),
        (("--recall-paste=slow",), "*--recall-paste: paste must be one of typed, bracketed, not 'slow'*"),
        (("--recall-turn-template=hi",), "*--recall-turn-template: turn_template must hold {prompt}*"),
        (("--recall-ok-exit-codes=0,x",), "*--recall-ok-exit-codes: ok_exit_codes holds 'x'*"),
        (("--recall-answer-pattern=(",), "*--recall-answer-pattern: answer_pattern is not a valid regular*"),
    ],
)
def test_bad_protocol_flags_are_one_line_usage_errors(recall_suite, args, message):
    recall_suite.add("case_01", ["say hi", "say 12345.67"])

    result = recall_suite.run(*args)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_preset_runs_live_with_its_launcher_unless_a_command_is_given(recall_suite, monkeypatch):
    recall_suite.add("case_01", ["say hi", "say 12345.67"])
    # The launcher is found on PATH, as in an activated environment; whether llm works does not matter, but a
    # CLI must be there, or the run is refused at start-up (issue 66): `false` stands in for it.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("RECALL_LLM_BIN", "false")

    result = recall_suite.run("--recall-live-preset=llm-chat", "--recall-timeout=5", with_command=False)

    record = recall_suite.records()["case_01"]
    assert record["command"].startswith("recall-llm --live")
    assert record["run_mode"]["session"] == "continue" and record["run_mode"]["live_preset"] == "llm-chat"
    assert record["run_mode"]["turn_protocol"]["turn_template"] == "!multi\n{prompt}\n!end\n"
    assert result.ret != pytest.ExitCode.USAGE_ERROR


def test_turn_keys_frame_a_paste_and_send_enter_apart():
    protocol = LiveProtocol(paste="bracketed")
    assert protocol.turn_keys("line one\nline two\n") == (PASTE_START + b"line one\nline two" + PASTE_END, b"\r")
    framed = LiveProtocol(turn_template="!multi\n{prompt}\n!end\n")
    assert framed.turn_keys("a\nb\n") == (b"!multi\na\nb\n!end\n",)
    assert LiveProtocol().quit_keys(b"\x04") == b"\x04"
    assert LiveProtocol(quit="/exit\r").quit_keys(b"\x04") == b"/exit\r"


def test_flag_values_understand_key_escapes():
    assert decode_escapes(r"/exit\r") == "/exit\r"
    assert decode_escapes(r"\x03\x03\e[A\\n") == "\x03\x03\x1b[A\\n"
    assert decode_escapes("naïve {prompt}") == "naïve {prompt}"
    assert parse_exit_codes("0, 130", "x") == (0, 130)
    with pytest.raises(ProtocolError, match="not an exit code"):
        parse_exit_codes([256], "x")


def test_the_screen_says_what_changed_since_a_mark_and_keeps_its_rows_numbered_as_it_scrolls():
    screen = LiveScreen(size=(5, 40), scrollback_rows=3)
    screen.feed(b"banner\r\n> ")
    mark = screen.mark()
    # What stands before the cursor on its row (the prompt) is no part of the change.
    screen.feed(b"first answer\r\n")
    assert screen.changed_since(mark) == "first answer"
    # Scrolling far past the bounded scrollback keeps the newest rows of the change.
    screen.feed("".join(f"row {n}\r\n" for n in range(20)).encode() + b"> ")
    changed = screen.changed_since(mark).splitlines()
    assert changed[-1] == "> " and changed[-2] == "row 19" and len(changed) <= 3 + 5
    # A redraw of the same frame changes nothing.
    again = screen.mark()
    screen.feed(b"\r\x1b[K> ")
    assert screen.changed_since(again) == ""


def test_the_screen_drops_keyboard_protocol_queries_even_cut_across_reads():
    screen = LiveScreen(size=(5, 40))
    mark = screen.mark()
    for part in (b"ready \x1b[", b"?u now\x1b[>1", b"u\x1b[<u\r\n"):
        screen.feed(part)
    assert re.sub(r"\s+", " ", screen.changed_since(mark)) == "ready now"
