"""What a judge command said, read strictly: ``yes``/``no``, or a JSON object with a score and a reason.

A judge command is someone else's program (``--recall-judge-cmd``). What it
prints is taken at its word only when it is unambiguous; anything else is a
judge error, counted apart from the agent's failures, never a score of 0
that would read as forgetting.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

YES_WORDS = frozenset({"yes", "correct", "true", "pass"})
NO_WORDS = frozenset({"no", "incorrect", "false", "fail"})
# A judge that prints more than this is not answering the question it was asked.
MAX_REPLY_CHARS = 65_536


@dataclass(frozen=True, slots=True)
class JudgeReply:
    """A readable verdict (``score`` in [0, 1]) or why the reply could not be read (``error``)."""

    score: float | None
    reason: str | None = None
    error: str | None = None


def read_judge_reply(text: str) -> JudgeReply:
    """The verdict in a judge command's stdout: its last non-empty line, a word or a JSON object."""
    if len(text) > MAX_REPLY_CHARS:
        return JudgeReply(None, error=f"the judge printed {len(text)} characters; a verdict is one line")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return JudgeReply(None, error="the judge printed nothing; print yes, no, or a JSON object with a score")
    stripped = text.strip()
    if stripped.startswith("{"):
        return _json_reply(stripped)
    word = lines[-1].strip(" .!*`'\"").lower()
    if word in YES_WORDS:
        return JudgeReply(1.0, reason=" ".join(lines[:-1]) or None)
    if word in NO_WORDS:
        return JudgeReply(0.0, reason=" ".join(lines[:-1]) or None)
    shown = lines[-1][:80]
    return JudgeReply(None, error=f"the judge's last line {shown!r} is neither yes nor no nor a JSON verdict")


def _json_reply(text: str) -> JudgeReply:
    try:
        document: Any = json.loads(text)
    except RecursionError:
        return JudgeReply(None, error="the judge printed JSON nested too deep to read")
    except json.JSONDecodeError as exc:
        return JudgeReply(None, error=f"the judge printed JSON that does not parse: {exc.msg} at line {exc.lineno}")
    except ValueError as exc:  # an integer past Python's digit limit, say
        return JudgeReply(None, error=f"the judge printed JSON that does not parse: {exc}")
    if not isinstance(document, dict):
        return JudgeReply(None, error="the judge printed JSON that is not an object with a score")
    reason = document.get("reason")
    reason = str(reason) if reason is not None else None
    score = document.get("score")
    if score is None and isinstance(document.get("verdict"), str):
        verdict = document["verdict"].strip().lower()
        score = 1.0 if verdict in YES_WORDS else 0.0 if verdict in NO_WORDS else None
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return JudgeReply(None, error='the judge\'s JSON has no numeric "score" (or "verdict": "yes"/"no")')
    if not 0.0 <= score <= 1.0:
        return JudgeReply(None, error=f"the judge's score {score} is outside 0 to 1")
    return JudgeReply(float(score), reason=reason)
