"""The agent-supermemory suite as a ``verifiers`` environment.

The rows, the turn between the answers and the reward are plain functions,
tested here without the package. The rollouts are real ``verifiers``
rollouts, driven by a scripted model: an ``AsyncOpenAI`` client whose HTTP
transport answers from a script instead of the network. They run only where
the ``verifiers`` extra is installed (CI gives them a virtualenv of their own).
"""

from __future__ import annotations

import importlib.util
import json
import signal
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_recall.agents import audit_solver
from pytest_recall.scoring.judge import judge_answer
from pytest_recall.sessions.case_flow import feedback_prompt
from pytest_recall.suites.audit import generate_one
from pytest_recall.verifiers_env import (
    episode_rows,
    load_environment,
    reply_after_last_user_turn,
    transfer_reward,
    transfer_turn,
)

WRONG = '{"value":"nonsense","evidence":[]}'

# ---------------------------------------------------------------- without the package


def test_rows_hold_the_trail_prompt_the_transfer_answer_and_the_episode_info() -> None:
    rows = episode_rows("eval", 3)
    assert len(rows) == 3
    for index, row in enumerate(rows):
        case = generate_one("eval", index)
        assert row["prompt"] == [{"role": "user", "content": case.steps[0].prompt}]
        assert json.loads(row["answer"]) == dict(case.expected["answer"])
        info = row["info"]
        assert info["transfer_prompt"] == case.steps[1].prompt and "BEGIN AUDIT TRAIL" not in info["transfer_prompt"]
        assert json.loads(info["rehearsal"])["answer"] == dict(case.steps[1].feedback["answer"])
        assert (info["id"], info["category"], info["split"]) == (case.case_id, case.category, "eval")


def test_the_turn_between_the_answers_is_the_feedback_a_fresh_pytest_recall_run_gives() -> None:
    case = generate_one("train", 5)
    (row,) = [r for r in episode_rows("train", 6) if r["info"]["id"] == case.case_id]
    right = _solve(case.steps[0].prompt, case.steps[0].prompt)
    for rehearsal_answer, score in ((right, 1.0), (WRONG, 0.0), ("", 0.0)):
        text, verdict = transfer_turn(row["info"], rehearsal_answer)
        assert text == feedback_prompt(case.steps[1], rehearsal_answer, judge_answer)
        assert verdict["score"] == score


def _chat(*turns: tuple[str, str]) -> list[dict[str, str]]:
    return [{"role": role, "content": content} for role, content in turns]


@pytest.mark.parametrize(
    ("completion", "score"),
    [
        (_chat(("assistant", WRONG), ("user", "feedback + transfer"), ("assistant", "{right}")), 1.0),
        (_chat(("assistant", "{right}"), ("user", "feedback + transfer"), ("assistant", WRONG)), 0.0),
        # Stopped before the transfer question: the rehearsal answer is never taken for the transfer one.
        (_chat(("assistant", "{right}")), 0.0),
        (_chat(("assistant", "{right}"), ("user", "feedback + transfer")), 0.0),
    ],
)
def test_the_reward_judges_only_the_reply_to_the_transfer_question(completion: list[dict[str, str]], score: float):
    (row,) = episode_rows("train", 1)
    for message in completion:
        message["content"] = message["content"].replace("{right}", row["answer"])
    assert transfer_reward(completion, row["answer"], row["info"]) == score


def test_message_text_reads_dicts_objects_and_content_parts() -> None:
    parts = [{"type": "text", "text": "line one\n"}, {"type": "text", "text": "line two"}]
    message = SimpleNamespace(role="assistant", content=parts)

    assert reply_after_last_user_turn([{"role": "user", "content": "q"}, message]) == "line one\nline two"
    assert reply_after_last_user_turn([message]) == ""


@pytest.mark.skipif(importlib.util.find_spec("verifiers") is not None, reason="verifiers is installed here")
def test_without_the_package_load_environment_says_what_to_install() -> None:
    with pytest.raises(ImportError, match=r"pip install 'pytest-recall\[verifiers\]'"):
        load_environment("train", 2)


# ---------------------------------------------------------------- real rollouts


def _solve(prompt_with_trail: str, asked_in: str) -> str:
    trail = audit_solver.parse_trail(prompt_with_trail)
    question = audit_solver.question_of(asked_in)
    assert trail is not None and question is not None
    return audit_solver.format_answer(audit_solver.answer(trail, question))


Policy = Callable[[int, list[dict[str, Any]]], str]


def auditor(turn: int, messages: list[dict[str, Any]]) -> str:
    """A scripted model that reads the trail in its context and answers every question right."""
    return _solve(messages[0]["content"], messages[-1]["content"])


def wrong_rehearsal(turn: int, messages: list[dict[str, Any]]) -> str:
    return WRONG if turn == 1 else auditor(turn, messages)


def wrong_transfer(turn: int, messages: list[dict[str, Any]]) -> str:
    return auditor(turn, messages) if turn == 1 else WRONG


class ScriptedModel:
    """What an OpenAI-compatible server would answer, decided by a policy; every request is kept."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.requests: list[dict[str, Any]] = []

    def client(self) -> Any:
        import httpx
        from openai import AsyncOpenAI
        from verifiers.clients import OpenAIChatCompletionsClient

        transport = httpx.MockTransport(self._answer)
        http = httpx.AsyncClient(transport=transport)
        openai = AsyncOpenAI(base_url="http://scripted.invalid/v1", api_key="scripted", http_client=http)
        return OpenAIChatCompletionsClient(openai)

    def _answer(self, request: Any) -> Any:
        import httpx

        body = json.loads(request.content)
        self.requests.append(body)
        turn = sum(1 for message in body["messages"] if message["role"] == "user")
        message = {"role": "assistant", "content": self.policy(turn, body["messages"])}
        completion = {
            "id": f"scripted-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        }
        return httpx.Response(200, json=completion)


@pytest.fixture
def verifiers_env() -> Iterator[Callable[..., Any]]:
    """``load_environment``, with the signal handlers a verifiers environment installs put back afterwards."""
    pytest.importorskip("verifiers")
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield load_environment
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def rollouts(env: Any, model: ScriptedModel, n: int) -> list[dict[str, Any]]:
    inputs = (env.get_dataset if env.dataset is not None else env.get_eval_dataset)(n=n)
    outputs = env.generate_sync(inputs, client=model.client(), model="scripted", on_progress=lambda *_, **__: None)
    return list(outputs["outputs"])


def test_load_environment_builds_the_requested_split_and_size(verifiers_env) -> None:
    train = verifiers_env(split="train", size=64)
    assert len(train.get_dataset()) == 64 and train.eval_dataset is None
    assert {"prompt", "answer", "info"} <= set(train.get_dataset().column_names)
    evaluation = verifiers_env(split="eval", size=32)
    assert len(evaluation.get_eval_dataset()) == 32 and evaluation.dataset is None
    assert evaluation.get_eval_dataset()[0]["info"]["id"] == "eval-000"


def test_rollouts_by_a_scripted_auditor_earn_full_reward_after_feedback_on_a_right_rehearsal(verifiers_env) -> None:
    model = ScriptedModel(auditor)

    outputs = rollouts(verifiers_env(split="train", size=2), model, 2)

    assert [o["reward"] for o in outputs] == [1.0, 1.0]
    assert [o["metrics"]["rehearsal_score"] for o in outputs] == [1.0, 1.0]
    assert len(model.requests) == 4
    second_turns = [r["messages"] for r in model.requests if len(r["messages"]) == 3]
    assert len(second_turns) == 2
    for messages in second_turns:
        feedback = messages[-1]["content"]
        assert feedback.startswith("Feedback on your PART 1 answer: score 1 of 1 (correct value and minimal evidence).")
        assert "This is PART 2 of 2" in feedback and "BEGIN AUDIT TRAIL" not in feedback


def test_a_wrong_rehearsal_is_told_so_and_does_not_touch_the_reward(verifiers_env) -> None:
    model = ScriptedModel(wrong_rehearsal)

    (output,) = rollouts(verifiers_env(split="eval", size=1), model, 1)

    assert output["reward"] == 1.0 and output["metrics"]["rehearsal_score"] == 0.0
    feedback = model.requests[1]["messages"][-1]["content"]
    assert feedback.startswith("Feedback on your PART 1 answer: score 0 of 1 (wrong value).")


def test_a_wrong_transfer_answer_earns_nothing_after_a_right_rehearsal(verifiers_env) -> None:
    (output,) = rollouts(verifiers_env(split="eval", size=1), ScriptedModel(wrong_transfer), 1)

    assert output["reward"] == 0.0 and output["metrics"]["rehearsal_score"] == 1.0
