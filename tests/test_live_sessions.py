"""Live (continue) sessions: every step goes, turn by turn, to one REPL process on its terminal.

The agent is ``tests/agents/repl_notebook.py``: the notebook's answers with a
memory in RAM only, so a case it solves was solved inside one live process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_recall.cases.live_protocol import LiveProtocol
from pytest_recall.sessions.driver import run_session
from pytest_recall.sessions.session import SessionSpec
from pytest_recall.suites.audit_v2 import generate_one

LIVE = ("--recall-session=continue", "--recall-ready-pattern=notebook> $")
WRONG = '{"value":"nonsense","evidence":[]}'


def write_suite(recall_suite, name: str, **keys: object) -> Path:
    folder = recall_suite.root / name
    folder.mkdir(parents=True)
    lines = [f"{key} = {json.dumps(value)}\n" for key, value in keys.items()]
    (folder / "suite.toml").write_text("".join(lines), encoding="utf-8")
    return folder


def audit_suite(recall_suite, size: int = 1, **keys: object) -> Path:
    return write_suite(recall_suite, "audit", family="audit", split="eval", size=size, **keys)


def probed_turns(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_turn_two_carries_feedback_on_the_turn_one_answer_and_only_the_last_answer_is_judged(recall_suite):
    audit_suite(recall_suite)
    probe = recall_suite.pytester.path / "turns.jsonl"
    agent = recall_suite.agent("repl_notebook", "--wrong-first", "--probe", str(probe))

    result = recall_suite.run(*LIVE, command=agent)

    result.assert_outcomes(passed=1)
    case = generate_one("eval", 0)
    record = recall_suite.records()["eval-000"]
    first, second = probed_turns(probe)
    # The agent received each turn whole, as sent, and its terminal did not echo it back.
    assert first == {"turn": case.steps[0].prompt, "echo": False}
    assert second["echo"] is False
    assert second["turn"] == record["steps"][1]["prompt"]
    assert str(second["turn"]).startswith("Feedback on your PART 1 answer: score 0 of 1 (wrong value).\n")
    assert str(second["turn"]).endswith(case.steps[1].prompt)
    assert "BEGIN AUDIT TRAIL" not in str(second["turn"])
    # Each step holds its own answer; the prompt shown between turns and the farewell after EOF are not answers.
    assert record["steps"][0]["stdout"] == WRONG
    expected = json.dumps(dict(case.expected["answer"]), separators=(",", ":"))
    assert record["steps"][1]["stdout"] == expected
    assert record["score"] == 1.0 and record["reported"] == expected
    assert [step["exit_code"] for step in record["steps"]] == [None, 0]


def test_an_idle_period_tells_when_an_agent_without_a_prompt_is_ready(recall_suite):
    audit_suite(recall_suite)
    # It thinks longer than the idle period before each answer: quiet before an answer is not readiness.
    agent = recall_suite.agent("repl_notebook", "--prompt", "", "--think", "0.6")

    result = recall_suite.run("--recall-session=continue", "--recall-ready-idle=0.3", command=agent)

    result.assert_outcomes(passed=1)
    record = recall_suite.records()["eval-000"]
    assert record["steps"][1]["prompt"].startswith("Feedback on your PART 1 answer: score 1 of 1 (correct value")
    # One line: the answer, read from the screen, without the echo of the turn or the next prompt.
    assert len(record["steps"][1]["stdout"].strip().splitlines()) == 1


@pytest.mark.parametrize(("flag", "passes"), [(None, True), ("--recall-ready-pattern=never matches$", False)])
def test_a_case_toml_sets_continue_mode_and_a_readiness_the_command_line_overrides(recall_suite, flag, passes):
    seed = recall_suite.copy_seed_suite()
    case_dir = seed / "case_01"
    (case_dir / "case.toml").write_text('session = "continue"\nready_pattern = "ready> $"\n', encoding="utf-8")
    agent = recall_suite.agent("repl_notebook", "--prompt", "ready> ")

    result = recall_suite.run(case_dir, *([flag] if flag else []), "--recall-timeout=5", command=agent)

    # One order of precedence: the command line, then the ini, then suite.toml, then case.toml.
    result.assert_outcomes(passed=1) if passes else result.assert_outcomes(failed=1)
    (record,) = recall_suite.report()["cases"]
    assert record["score"] == (1.0 if passes else 0.0) and record["run_mode"]["session"] is None


def test_session_flag_fresh_forces_fresh_sessions_on_a_continue_case(recall_suite):
    folder = recall_suite.add("case_01", ["remember 12345.67\nsay noted", "recall"], toml='session = "continue"\n')

    result = recall_suite.run(folder, "--recall-session=fresh")

    result.assert_outcomes(passed=1)
    steps = recall_suite.records()["case_01"]["steps"]
    assert [step["exit_code"] for step in steps] == [0, 0]


def test_ledger_cases_run_live_from_a_suite_toml_that_asks_for_it(recall_suite):
    write_suite(
        recall_suite, "ledger", family="ledger", seed=256, count=4, session="continue", ready_pattern="notebook> $"
    )

    result = recall_suite.run("--recall-concurrency=4", command=recall_suite.agent("repl_notebook"))

    result.assert_outcomes(passed=4)
    assert recall_suite.report()["score"] == 1.0


def test_the_reference_notebook_runs_live_with_its_repl_flag(recall_suite):
    audit_suite(recall_suite, size=2)

    result = recall_suite.run(*LIVE, command=recall_suite.module("pytest_recall.agents.notebook") + " --repl")

    result.assert_outcomes(passed=2)


def test_an_agent_that_leaves_after_turn_one_never_gets_turn_two_and_scores_zero(recall_suite):
    audit_suite(recall_suite)

    result = recall_suite.run(*LIVE, command=recall_suite.agent("repl_notebook", "--exit-after", "1"))

    result.assert_outcomes(failed=1)
    record = recall_suite.records()["eval-000"]
    assert record["score"] == 0.0 and record["reason"] == "empty stdout"
    first, second = record["steps"]
    assert first["stdout"].startswith('{"value":') and first["exit_code"] == 0
    # The turn never sent is recorded as written, without feedback, and with no answer.
    assert second["prompt"] == generate_one("eval", 0).steps[1].prompt and second["stdout"] == ""


def test_the_timeout_covers_a_live_session(recall_suite):
    audit_suite(recall_suite)

    result = recall_suite.run(
        *LIVE,
        "--recall-timeout=0.5",
        "--recall-grace=0.2",
        command=recall_suite.agent("repl_notebook", "--think", "30"),
    )

    result.assert_outcomes(failed=1)
    record = recall_suite.records()["eval-000"]
    assert record["reason"] == "timeout in step 1"
    # As a fresh case stops at its failed step, a live one stops at the turn it failed in.
    assert record["steps"][0]["timed_out"] is True and len(record["steps"]) == 1


def test_the_amnesiac_scores_zero_live_with_the_mode_set_in_the_ini_file(recall_suite):
    audit_suite(recall_suite, size=2)
    recall_suite.pytester.makeini("[pytest]\nrecall_session = continue\nrecall_ready_idle = 0.2\n")

    result = recall_suite.run(command=str(Path(sys.executable).parent / "recall-amnesiac"))

    result.assert_outcomes(failed=2)
    assert recall_suite.report()["score"] == 0.0
    # Started with no prompt in argv, it says UNKNOWN and leaves, before or just after the first turn
    # (how soon it prints depends on the machine's load): either way no turn gets a remembered answer.
    for record in recall_suite.report()["cases"]:
        assert record["score"] == 0.0
        assert record["steps"][-1]["stdout"].strip() in ("", "UNKNOWN")


def test_a_line_too_long_for_the_terminal_is_a_case_error_not_a_silent_cut(recall_suite):
    folder = recall_suite.add("case_01", ["say " + "x" * 5000, "recall"], toml='session = "continue"\n')

    result = recall_suite.run(folder, command=recall_suite.agent("repl_notebook"))

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*step1 has a line of 5004 bytes*keeps at most 4095 bytes*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--recall-session=live",), "*--recall-session must be one of fresh, continue, not 'live'*"),
        (("--recall-ready-pattern=(",), "*--recall-ready-pattern: ready_pattern is not a valid regular expression*"),
        (("--recall-ready-idle=0",), "*--recall-ready-idle: ready_idle must be a positive number of seconds*"),
    ],
)
def test_bad_live_session_options_are_one_line_usage_errors(recall_suite, args, message):
    recall_suite.add("case_01", ["say hi", "say 12345.67"])

    result = recall_suite.run(*args)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('paste = "clipboard"\n', "*paste must be one of typed, bracketed, not 'clipboard'*"),
        ('turn_template = "!multi"\n', "*turn_template must hold {prompt}*"),
        ("ok_exit_codes = [0, 300]\n", "*ok_exit_codes holds 300, which is not an exit code from 0 to 255*"),
    ],
)
def test_a_case_toml_with_a_broken_turn_protocol_is_malformed(recall_suite, toml, message):
    recall_suite.add("case_01", ["say hi", "say 12345.67"], toml='session = "continue"\n' + toml)

    result = recall_suite.run()

    result.stdout.fnmatch_lines([message])


def test_run_session_sends_each_turn_when_ready_and_then_end_of_input(tmp_path):
    agent = Path(__file__).parent / "agents" / "repl_notebook.py"
    probe = tmp_path / "turns.jsonl"
    # Many lines, more than a terminal buffers at once: the agent must still get the turn whole.
    long_turn = "\n".join(f"line {n}" for n in range(2000)) + "\n"
    spec = SessionSpec(
        argv=(sys.executable, str(agent), "--prompt", "> ", "--probe", str(probe)),
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[1])},
        timeout_s=20,
        grace_s=1,
        max_output_bytes=1 << 20,
        turns=("first", "second"),
        compose_turn=lambda index, previous: long_turn if index == 0 else f"after {previous.strip()!r}",
        protocol=LiveProtocol(ready_pattern=r"> $"),
    )

    result = run_session(spec)

    assert (result.exit_code, result.timed_out) == (0, False)
    assert [turn.prompt for turn in result.turns] == [long_turn, "after 'UNKNOWN'"]
    assert [turn["turn"] for turn in probed_turns(probe)] == [long_turn, "after 'UNKNOWN'\n"]
    # Read from the screen: the answer alone, without the echoed turn or the prompt after it.
    assert [turn.answer for turn in result.turns] == [b"UNKNOWN", b"UNKNOWN"]
    assert all(turn.finished for turn in result.turns)
    # The farewell after end of input is in the transcript, but in no turn's answer.
    assert result.stdout.endswith(b"bye\r\n")
