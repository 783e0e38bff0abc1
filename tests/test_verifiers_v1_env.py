"""Real rollouts of the ``pytest_recall_agent_supermemory`` environment, on the installed verifiers.

The model is a scripted server on 127.0.0.1 (``scripted_chat``), reached the
way verifiers reaches any model: through an endpoint config. Everything else is
the environment's own defaults, the subprocess runtime and the in-process chat
harness, so a rollout reaches nothing but loopback. The whole file skips where
verifiers is not installed; CI runs it in one virtualenv per verifiers release.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scripted_chat import API_KEY_VAR, MODEL, Policy, ScriptedChatServer, scripted_chat

from pytest_recall.agents import audit_solver
from pytest_recall.verifiers_env import ENV_ID

vf = pytest.importorskip("verifiers.v1", reason="verifiers is not installed here")
environment = pytest.importorskip(ENV_ID.replace("-", "_"), reason="the environment package is not installed here")

WRONG = '{"value":"nonsense","evidence":[]}'


def _installed_verifiers() -> tuple[int, ...]:
    from importlib.metadata import version

    return tuple(int(part) for part in version("verifiers").split(".")[:2])


def _answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """What a perfect auditor answers to the last question, reading the trail from the first message."""
    trail = audit_solver.parse_trail(messages[0]["content"])
    question = audit_solver.question_of(messages[-1]["content"])
    assert trail is not None and question is not None
    return audit_solver.answer(trail, question)


def auditor(turn: int, messages: list[dict[str, Any]]) -> str:
    return audit_solver.format_answer(_answer(messages))


def wrong_rehearsal(turn: int, messages: list[dict[str, Any]]) -> str:
    return WRONG if turn == 1 else auditor(turn, messages)


def wrong_transfer(turn: int, messages: list[dict[str, Any]]) -> str:
    return auditor(turn, messages) if turn == 1 else WRONG


def extra_evidence_on_transfer(turn: int, messages: list[dict[str, Any]]) -> str:
    """The right value, citing one more event of the trail than the minimal evidence."""
    if turn == 1:
        return auditor(turn, messages)
    right = _answer(messages)
    trail = audit_solver.parse_trail(messages[0]["content"])
    assert trail is not None
    extra = next(e.event_id for e in audit_solver.parse_events(trail) if e.event_id not in right["evidence"])
    return audit_solver.format_answer({"value": right["value"], "evidence": [*right["evidence"], extra]})


@pytest.fixture(autouse=True)
def _scripted_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(API_KEY_VAR, "scripted")


def rollouts(policy: Policy, split: str = "eval", size: int = 1) -> tuple[list[Any], ScriptedChatServer]:
    """One episode per task of the env built as vf-eval builds it, the model answering by ``policy``."""

    async def run(server: ScriptedChatServer) -> list[Any]:
        env = environment.load_environment(split, size)
        client = vf.EvalClientConfig(base_url=server.base_url, api_key_var=API_KEY_VAR)
        context = vf.ModelContext(model=MODEL, client=client)
        async with env.serving():
            return [await env.run_slot(slot, context) for task in env.taskset for slot in env.slots(task)]

    with scripted_chat(policy) as server:
        episodes = asyncio.run(run(server))
    for episode in episodes:
        assert episode.ok, episode.errors
    return episodes, server


def test_the_taskset_holds_the_requested_split_and_size_numbered_from_zero() -> None:
    env = environment.load_environment("eval", 3)
    tasks = list(env.taskset)
    assert [task.data.idx for task in tasks] == [0, 1, 2]
    assert [task.data.name for task in tasks] == ["eval-000", "eval-001", "eval-002"]
    first = tasks[0].data
    assert "BEGIN AUDIT TRAIL" in first.prompt and "BEGIN AUDIT TRAIL" not in first.info["transfer_prompt"]
    assert len(list(environment.load_environment("train", 64).taskset)) == 64
    with pytest.raises(ValueError, match="split must be one of train, eval"):
        environment.load_environment("test", 2)


def test_the_taskset_serves_the_latest_suite_version_and_older_ones_by_number() -> None:
    (latest_task,) = environment.load_environment("eval", 1).taskset
    latest = latest_task.data
    assert latest.info["version"] == 3
    (older_task,) = environment.load_environment("eval", 1, version=1).taskset
    older = older_task.data
    assert older.info["version"] == 1 and older.prompt != latest.prompt
    with pytest.raises(ValueError, match="version must be one of 1, 2, 3, not 7"):
        environment.load_environment("eval", 1, version=7)


def test_both_answers_right_earn_reward_one_offline_on_loopback() -> None:
    episodes, server = rollouts(auditor, size=2)

    traces = [trace for episode in episodes for trace in episode.traces]
    assert [trace.reward for trace in traces] == [1.0, 1.0]
    assert [trace.metrics["rehearsal_score"] for trace in traces] == [1.0, 1.0]
    for trace in traces:
        assert trace.agent.runtime.type == "subprocess" and trace.agent.config.harness.id == ENV_ID
    assert len(server.requests) == 4
    feedback = server.requests[1]["messages"][-1]["content"]
    assert feedback.startswith("Feedback on your PART 1 answer: score 1 of 1 (correct value and minimal evidence).")
    assert "This is PART 2 of 2" in feedback and "BEGIN AUDIT TRAIL" not in feedback


def test_a_wrong_rehearsal_is_told_so_and_does_not_touch_the_reward() -> None:
    (episode,), server = rollouts(wrong_rehearsal)

    (trace,) = episode.traces
    assert trace.reward == 1.0 and trace.metrics["rehearsal_score"] == 0.0
    feedback = server.requests[1]["messages"][-1]["content"]
    assert feedback.startswith("Feedback on your PART 1 answer: score 0 of 1 (wrong value).")


def test_a_wrong_transfer_answer_earns_nothing_after_a_right_rehearsal() -> None:
    (episode,), _ = rollouts(wrong_transfer)

    (trace,) = episode.traces
    assert trace.reward == 0.0 and trace.metrics["rehearsal_score"] == 1.0


def test_the_right_value_with_an_extra_evidence_id_earns_a_quarter() -> None:
    (episode,), _ = rollouts(extra_evidence_on_transfer)

    (trace,) = episode.traces
    assert trace.reward == 0.25 and trace.metrics["rehearsal_score"] == 1.0


# vf-eval imports verifiers' whole tree in a process of its own: 12 s on a quiet machine, 28 s under CI's load.
@pytest.mark.slow
def test_vf_eval_runs_the_environment_against_the_loopback_server(tmp_path: Path) -> None:
    # verifiers 0.3.1 names its v1 command `eval` (its `vf-eval` is the classic one); 0.4 names it `vf-eval`.
    command = "vf-eval" if _installed_verifiers() >= (0, 4) else "eval"
    program = shutil.which(command, path=str(Path(sys.executable).parent))
    assert program is not None, f"{command} is not installed beside {sys.executable}"
    taskset = ["--env.taskset.split", "eval", "--env.taskset.size", "2"]
    with scripted_chat(auditor) as server:
        endpoint = ["-m", MODEL, "--client.base-url", server.base_url, "--client.api-key-var", API_KEY_VAR]
        finished = subprocess.run(
            [program, ENV_ID, "--no-push", *endpoint, "-n", "2", "-o", str(tmp_path), *taskset],
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    (traces_file,) = tmp_path.glob("*/traces.jsonl")
    episodes = [json.loads(line) for line in traces_file.read_text().splitlines()]
    rewards = sorted(trace["rewards"]["transfer_score"]["score"] for e in episodes for trace in e["traces"])
    assert rewards == [1.0, 1.0]
    assert len(server.requests) == 4
