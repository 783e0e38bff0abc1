"""The agent-supermemory suite's episode for the ``verifiers`` package, as plain functions.

An episode is two turns in one conversation: the first user turn shows the
audit trail and asks the rehearsal question; after the model answers, the
environment judges that answer with the suite's own judge and replies with the
feedback and the transfer question; the reward is that same judge on the
answer to the transfer question. The rehearsal's score is a metric, so only
the transfer answer moves the reward.

Unlike a pytest-recall run, the whole episode is one conversation: the trail
stays in the model's context, so this measures reasoning over a remembered
trail, not memory across processes.

The environment itself (the ``verifiers.v1`` taskset, env and harness) is the
separate package in ``environments/pytest_recall_agent_supermemory``, so the
Environments Hub sees its unconditional ``verifiers`` requirement. It calls
only the functions here, which need no ``verifiers`` and are tested without it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_recall.cases import plain_data
from pytest_recall.scoring import ANSWER_KIND, feedback_text, score_evidence_json
from pytest_recall.suites import AUDIT_MAX_SIZE, AUDIT_SPLITS, AUDIT_VERSIONS, audit_cases

ENV_ID = "pytest-recall-agent-supermemory"
SPLITS = AUDIT_SPLITS
MAX_SIZE = AUDIT_MAX_SIZE
# The suite's versions: the latest by default, as a new suite.toml gets; an older one by number.
VERSIONS = AUDIT_VERSIONS
VERSION = AUDIT_VERSIONS[-1]


def suite_cases(split: str, size: int, version: int = VERSION) -> list[Any]:
    """The first ``size`` cases of ``split`` in suite ``version``."""
    if version not in VERSIONS:
        raise ValueError(f"version must be one of {', '.join(map(str, VERSIONS))}, not {version!r}")
    return audit_cases(split, size, version)


def episode_rows(split: str = "train", size: int = 64, version: int = VERSION) -> list[dict[str, Any]]:
    """One dataset row per case of suite ``version``: ``prompt``, the transfer ``answer`` and the episode's ``info``.

    ``answer`` is the exact JSON line a perfect transfer answer prints.
    ``info`` carries what the environment needs between the turns and never
    shows the model before its time: the transfer prompt, and the rehearsal's
    expectation as a JSON string (so every row has the same flat shape).
    """
    rows = []
    for case in suite_cases(split, size, version):
        rehearsal, transfer = case.steps
        assert transfer.feedback is not None  # every audit case judges its rehearsal before the transfer
        rows.append(
            {
                "prompt": [{"role": "user", "content": rehearsal.prompt}],
                "answer": _compact(case.expected["answer"]),
                "info": {
                    "id": case.case_id,
                    "category": str(case.category),
                    "split": split,
                    "version": version,
                    "transfer_prompt": transfer.prompt,
                    "rehearsal": _compact(transfer.feedback),
                },
            }
        )
    return rows


def _compact(value: Any) -> str:
    return json.dumps(plain_data(value), separators=(",", ":"), ensure_ascii=False)


def transfer_turn(info: Mapping[str, Any], rehearsal_answer: str) -> tuple[str, dict[str, Any]]:
    """The environment's reply to the rehearsal answer: feedback on it, then the transfer question.

    Returns the text and the rehearsal verdict. The feedback is the same as a
    fresh pytest-recall run gives between its sessions.
    """
    rehearsal = json.loads(str(info["rehearsal"]))
    verdict = score_evidence_json(rehearsal_answer, rehearsal)
    return feedback_text(verdict, rehearsal) + str(info["transfer_prompt"]), verdict


def transfer_reward(completion: Sequence[Any], answer: str, info: Mapping[str, Any]) -> float:
    """The suite's judge on the reply to the transfer question, and on nothing before it.

    The transfer question is the one user turn in the completion; a rollout
    that never got past the rehearsal has no reply after it, so it scores 0.
    """
    expected = {
        "id": info.get("id"),
        "category": info.get("category"),
        "answer": json.loads(answer),
        "answer_kind": ANSWER_KIND,
    }
    return float(score_evidence_json(reply_after_last_user_turn(completion), expected)["score"])


def rehearsal_score(messages: Sequence[Any], info: Mapping[str, Any]) -> float:
    """The suite's judge on the reply to the rehearsal question: the same verdict the feedback reported."""
    rehearsal = json.loads(str(info["rehearsal"]))
    return float(score_evidence_json(reply_to_first_user_turn(messages), rehearsal)["score"])


def reply_to_first_user_turn(messages: Sequence[Any]) -> str:
    """The text of every assistant message between the first user message and the next one."""
    replies: list[str] = []
    users = 0
    for message in messages:
        role = _field(message, "role")
        if role == "user":
            users += 1
            if users > 1:
                break
        elif role == "assistant" and users == 1:
            replies.append(message_text(message))
    return "\n".join(replies)


def reply_after_last_user_turn(messages: Sequence[Any]) -> str:
    """The text of every assistant message after the last user message; empty when no user spoke."""
    replies: list[str] | None = None
    for message in messages:
        role = _field(message, "role")
        if role == "user":
            replies = []
        elif role == "assistant" and replies is not None:
            replies.append(message_text(message))
    return "\n".join(replies or ())


def message_text(message: Any) -> str:
    """A chat message's text, whether it is a dict or a message object, its content a string or parts."""
    content = _field(message, "content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(_field(part, "text") or "") for part in content)


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
