"""The agent-supermemory suite's episode, as the plain functions the ``verifiers`` environment calls.

Tested here without the package: the rows, the turn between the answers, the
reward and the rehearsal metric, the packaging the Environments Hub reads, and
the error a user gets without verifiers. The real rollouts are in
``test_verifiers_v1_env.py``, which runs only where verifiers is installed.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from pytest_recall.agents import audit_solver
from pytest_recall.scoring.judge import judge_answer
from pytest_recall.sessions.case_flow import feedback_prompt
from pytest_recall.suites.audit_v2 import generate_one
from pytest_recall.verifiers_env import (
    ENV_ID,
    episode_rows,
    rehearsal_score,
    reply_after_last_user_turn,
    transfer_reward,
    transfer_turn,
)

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ENV_PACKAGE = Path(__file__).resolve().parent.parent / "environments" / ENV_ID.replace("-", "_")

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
        assert info["version"] == 3 == case.extra["version"]


def test_the_environment_serves_the_latest_suite_and_older_ones_by_number() -> None:
    from pytest_recall.suites import audit

    assert (
        episode_rows("eval", 1, version=1)[0]["prompt"][0]["content"] == audit.generate_one("eval", 0).steps[0].prompt
    )
    v2 = generate_one("eval", 0, version=2)
    assert episode_rows("eval", 1, version=2)[0]["prompt"][0]["content"] == v2.steps[0].prompt
    with pytest.raises(ValueError, match="version must be one of 1, 2, 3, not 4"):
        episode_rows("eval", 1, version=4)


def test_the_turn_between_the_answers_is_the_feedback_a_fresh_pytest_recall_run_gives() -> None:
    case = generate_one("train", 5)
    (row,) = [r for r in episode_rows("train", 6) if r["info"]["id"] == case.case_id]
    trail = audit_solver.parse_trail(case.steps[0].prompt)
    question = audit_solver.question_of(case.steps[0].prompt)
    assert trail is not None and question is not None
    right = audit_solver.format_answer(audit_solver.answer(trail, question))
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


@pytest.mark.parametrize(
    ("conversation", "score"),
    [
        (_chat(("user", "trail"), ("assistant", "{rehearsal}"), ("user", "feedback"), ("assistant", WRONG)), 1.0),
        (_chat(("user", "trail"), ("assistant", WRONG), ("user", "feedback"), ("assistant", "{rehearsal}")), 0.0),
        # The transfer answer is never taken for the rehearsal one, nor a reply before the trail.
        (_chat(("assistant", "{rehearsal}"), ("user", "trail")), 0.0),
        (_chat(("user", "trail")), 0.0),
    ],
)
def test_the_rehearsal_metric_judges_only_the_reply_to_the_first_question(
    conversation: list[dict[str, str]], score: float
) -> None:
    (row,) = episode_rows("eval", 1)
    expected = json.loads(row["info"]["rehearsal"])["answer"]
    rehearsal = json.dumps({"value": expected["value"], "evidence": expected["evidence"]})
    for message in conversation:
        message["content"] = message["content"].replace("{rehearsal}", rehearsal)
    assert rehearsal_score(conversation, row["info"]) == score


def test_the_environment_package_declares_verifiers_as_the_hub_reads_a_v1_environment() -> None:
    """``prime env push`` calls a package v1 when an unconditional verifiers requirement has a floor of 0.2 or more."""
    project = tomllib.loads((ENV_PACKAGE / "pyproject.toml").read_text())["project"]
    (verifiers,) = [r for r in map(Requirement, project["dependencies"]) if r.name == "verifiers"]
    floors = [Version(spec.version) for spec in verifiers.specifier if spec.operator in (">=", "==", "~=")]
    assert verifiers.marker is None and max(floors) >= Version("0.2")
    assert "pytest-recall" in project["dependencies"]
    # The id vf-eval and the Hub use is the module's name, top level, with `-` for `_`.
    assert (ENV_PACKAGE / ENV_ID.replace("-", "_") / "__init__.py").is_file()


@pytest.mark.skipif(importlib.util.find_spec("verifiers") is not None, reason="verifiers is installed here")
def test_without_verifiers_the_environment_says_what_to_install_in_one_line() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", f"import {ENV_ID.replace('-', '_')}"],
        cwd=ENV_PACKAGE,
        capture_output=True,
        text=True,
        check=False,
    )
    assert loaded.returncode == 1
    last_line = loaded.stderr.strip().splitlines()[-1]
    assert last_line.startswith(f"ImportError: {ENV_ID} needs the verifiers.v1 API of verifiers 0.3.1 or 0.4.x")
    assert "verifiers is not installed" in last_line and last_line.endswith("pip install 'verifiers>=0.3.1,<0.5'")
