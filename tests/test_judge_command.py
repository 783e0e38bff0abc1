"""Running a judge command: timeouts, bad output and retries are judge errors, and ``judge-audit`` (issue 30)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_wiring import llm_wiring, real_cli

from pytest_recall.agents.adapters.llm import ADAPTER
from pytest_recall.scoring.judge_audit import GAMING
from pytest_recall.sessions.judge_command import run_judge_command
from pytest_recall.suites.bundled import suite_path
from pytest_recall.testing import FakeModelServer

STUB = """
import json, os, sys, time
request = json.load(sys.stdin)
behaviour, counter = sys.argv[1], sys.argv[2]
calls = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
open(counter, "w").write(str(calls))
if behaviour == "sleep":
    time.sleep(30)
elif behaviour == "crash":
    print("model overloaded", file=sys.stderr); sys.exit(3)
elif behaviour == "babble":
    print("I think so, probably")
elif behaviour == "flaky" and calls < 3:
    sys.exit(1)
elif behaviour == "env":
    leaked = {"RECALL_SCOPE_DIR", "RECALL_STEP", "RECALL_SESSION_TOKEN"} & set(os.environ)
    print(json.dumps({"score": 0 if leaked else 1}))
    sys.exit(0)
else:
    json.dump({"tokens_in": 7, "tokens_out": 1}, open(os.environ["RECALL_COST_FILE"], "w"))
    print("yes" if request["answer"] == request["gold"] else "no")
"""
AUDIT = (sys.executable, "-m", "pytest_recall.cli", "judge-audit")
REQUEST = {"case_id": "s/c", "kind": "money", "question": "q?", "gold": "12.00", "answer": "12.00"}


def stub(tmp_path: Path, behaviour: str) -> list[str]:
    script = tmp_path / "judge.py"
    script.write_text(STUB, encoding="utf-8")
    return [sys.executable, str(script), behaviour, str(tmp_path / "calls")]


def calls(tmp_path: Path) -> int:
    return int((tmp_path / "calls").read_text())


def test_a_judge_that_answers_gives_its_verdict_and_cost(tmp_path: Path) -> None:
    call = run_judge_command(stub(tmp_path, "ok"), REQUEST)
    assert call.reply.score == 1.0 and call.attempts == 1 and call.tokens_in == 7 and call.tokens_out == 1
    assert run_judge_command(stub(tmp_path, "ok"), {**REQUEST, "answer": "13.00"}).reply.score == 0.0


@pytest.mark.parametrize(
    ("behaviour", "says"),
    [("sleep", "timed out after 1s"), ("crash", "exited 3: model overloaded"), ("babble", "neither yes nor no")],
)
def test_a_broken_judge_is_a_judge_error_retried_then_given_up(tmp_path: Path, behaviour: str, says: str) -> None:
    call = run_judge_command(stub(tmp_path, behaviour), REQUEST, timeout_s=1.0, retries=1)
    assert call.reply.score is None and says in str(call.reply.error)
    assert call.attempts == 2 and calls(tmp_path) == 2


def test_a_flaky_judge_is_retried_until_it_answers(tmp_path: Path) -> None:
    call = run_judge_command(stub(tmp_path, "flaky"), REQUEST, retries=2)
    assert call.reply.score == 1.0 and call.attempts == 3


def test_a_missing_judge_is_one_line(tmp_path: Path) -> None:
    call = run_judge_command([str(tmp_path / "no-such-judge")], REQUEST)
    assert call.reply.score is None and "could not start" in str(call.reply.error)


def test_the_judge_sees_no_agent_session_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECALL_SCOPE_DIR", str(tmp_path))
    assert run_judge_command(stub(tmp_path, "env"), REQUEST).reply.score == 1.0


def audit_table(tmp_path: Path, mode: str) -> dict[str, dict[str, object]]:
    """The audit of the fake model in ``mode`` as a judge, through the real llm and recall-judge; exit 1: flagged."""
    home = tmp_path / mode
    with FakeModelServer(mode) as server:
        wiring = llm_wiring(server.base_url)
        for name, text in wiring.home_files.items():
            (home / name).parent.mkdir(parents=True, exist_ok=True)
            (home / name).write_text(text, encoding="utf-8")
        env = {**os.environ, "HOME": str(home), "LLM_USER_PATH": str(home / ".config/io.datasette.llm")}
        env["OPENAI_API_KEY"] = "sk-fake"
        judge = f"{Path(sys.executable).with_name('recall-judge')} {' '.join(wiring.extra_args)}"
        out = tmp_path / f"{mode}.json"
        done = subprocess.run(
            # Three questions (two sums, a voucher), 27 answers: each a real llm process; the note's table has all 8.
            [*AUDIT, str(suite_path("session-memory-recall")), "--limit=3", f"--judge-cmd={judge}", "--json", str(out)],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
            check=False,
        )
    print(done.stdout)
    audit = json.loads(out.read_text(encoding="utf-8"))
    assert done.returncode == (1 if audit["flagged"] else 0), done.stderr
    table: dict[str, dict[str, object]] = audit["table"]
    return table


@pytest.mark.real_cli
def test_judge_audit_flags_the_gullible_judge_and_says_which_gaming_answers_the_strict_one_takes(
    tmp_path: Path,
) -> None:
    real_cli(ADAPTER)
    # Rates in the table's order: gold, vague, partial, wrong, shotgun, negated, claims_correct, hedge, reformatted.
    gullible = audit_table(tmp_path, "gullible")
    assert [row["rate"] for row in gullible.values()] == [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert [variant for variant, row in gullible.items() if row["flagged"]] == list(GAMING)
    # The strict judge (the default) matches the gold's words: it reads no negation, so it takes the gold negated,
    # and it refuses other values beside a gold that is one number only, so the voucher's shotgun and hedge pass.
    strict = audit_table(tmp_path, "memory")
    assert [row["rate"] for row in strict.values()] == [1.0, 0.0, 0.0, 0.0, 0.3333, 1.0, 0.0, 0.3333, 1.0]
    assert [variant for variant, row in strict.items() if row["flagged"]] == ["shotgun", "negated", "hedge"]
