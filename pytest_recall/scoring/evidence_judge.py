"""The judge for ``answer_kind = "evidence_json"``, and the rehearsal feedback.

An answer is one line of JSON, ``{"value": <string or null>, "evidence":
[<event ids>]}``, and only the final turn counts. The line judged is the last
non-empty line of stdout, skipping Markdown fence lines (```` ``` ```` or
```` ```json ````) so an answer wrapped in a code block still counts. Nothing
else is forgiven: prose on that line, a missing or extra key, a duplicate key,
a value that is neither a string nor null, or evidence that is not a list of
strings make the answer malformed. Values compare exactly (``null`` is not
``"null"``); evidence compares as a set, after duplicates are refused.

Rewards: 1.0 for the right value with exactly the minimal evidence, 0.25 for
the right value with any other evidence, 0.0 for a wrong value, a malformed
answer or a duplicate citation. Pure functions: no pytest, no I/O.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

ANSWER_KIND = "evidence_json"
REPORTED_LIMIT = 200
# Every reason starts with one of these, so the feedback can name the outcome without echoing the agent.
CORRECT = "correct value and minimal evidence"
NOT_MINIMAL = "correct value, but not the minimal evidence"
WRONG_VALUE = "wrong value"
DUPLICATE = "duplicate citations"
MALFORMED = "malformed answer"
OUTCOMES = (CORRECT, NOT_MINIMAL, WRONG_VALUE, DUPLICATE, MALFORMED)
ANSWER_KEYS = frozenset({"value", "evidence"})
_FENCE = re.compile(r"^```[A-Za-z0-9_+-]*$")


class _Malformed(Exception):
    """Why an answer line is not a well-formed answer."""


def answer_line(stdout: str) -> str:
    """The line an answer is judged on: the last non-empty one, fence lines skipped."""
    for line in reversed(stdout.splitlines()):
        stripped = line.strip()
        if stripped and not _FENCE.match(stripped):
            return stripped
    return ""


def parse_answer(line: str) -> tuple[str | None, list[str]]:
    """Value and evidence of an answer line; :class:`_Malformed` says what is wrong."""
    if not line:
        raise _Malformed("no output")
    try:
        parsed = json.loads(line, object_pairs_hook=_refuse_duplicate_keys)
    except ValueError as exc:
        raise _Malformed(f"the last line is not JSON ({exc})") from None
    except RecursionError:
        # The agent's line, nested past the parser's depth: its malformed answer, not the judge's error.
        raise _Malformed("the last line is JSON nested too deep to read") from None
    if not isinstance(parsed, dict):
        raise _Malformed("the last line is not a JSON object")
    if set(parsed) != ANSWER_KEYS:
        raise _Malformed(f"keys must be exactly value and evidence, not {_few(sorted(parsed)) or 'none'}")
    value, evidence = parsed["value"], parsed["evidence"]
    if value is not None and not isinstance(value, str):
        raise _Malformed("value must be a string or null")
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise _Malformed("evidence must be a list of event-id strings")
    return value, evidence


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Counted once over the keys: an agent's line of a million keys must not take a million passes.
    repeated = sorted(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
    if repeated:
        # ValueError, so parse_answer reports it like any other JSON error.
        raise ValueError(f"duplicate key {_few(repeated)}")
    return dict(pairs)


def expected_answer(expected: Mapping[str, Any]) -> tuple[str | None, list[str]]:
    """The expected value and minimal evidence; a bad expectation is a bug in the case, so it raises."""
    __tracebackhide__ = True
    answer = expected.get("answer")
    if isinstance(answer, Mapping):
        value, evidence = answer.get("value"), answer.get("evidence")
        if (
            (value is None or isinstance(value, str))
            and isinstance(evidence, Sequence)
            and not isinstance(evidence, str)
            and all(isinstance(e, str) for e in evidence)
        ):
            return value, list(evidence)
    raise ValueError(f"{expected.get('id', '?')}: an evidence_json answer must be {{value, evidence}}, not {answer!r}")


def score_evidence_json(stdout: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """Score the final turn's stdout against an ``answer.json``-like mapping."""
    want_value, want_evidence = expected_answer(expected)
    line = answer_line(stdout)
    category = expected.get("category")

    def verdict(score: float, reason: str) -> dict[str, Any]:
        return {
            "score": score,
            "reason": reason,
            "category": None if category is None else str(category),
            "reported": line[:REPORTED_LIMIT],
        }

    try:
        value, evidence = parse_answer(line)
    except _Malformed as exc:
        return verdict(0.0, f"{MALFORMED}: {exc}")
    repeated = sorted(cited for cited, count in Counter(evidence).items() if count > 1)
    if repeated:
        return verdict(0.0, f"{DUPLICATE}: {_few(repeated)} cited more than once")
    if value != want_value:
        return verdict(0.0, f"{WRONG_VALUE}: expected {_show(want_value)}, reported {_show(value)}")
    if set(evidence) == set(want_evidence):
        return verdict(1.0, CORRECT)
    return verdict(0.25, f"{NOT_MINIMAL}: cited {_show(sorted(evidence))}, minimal is {_show(sorted(want_evidence))}")


def _few(names: Sequence[str], shown: int = 10) -> str:
    """Names for a reason, the first few of an agent's million and how many there were."""
    listed = ", ".join(names[:shown])
    return listed if len(names) <= shown else f"{listed}, ... ({len(names):,} in all)"


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def render_feedback(verdict: Mapping[str, Any], rehearsal_expected: Mapping[str, Any]) -> str:
    """What the agent is told about its rehearsal before the transfer question.

    It holds the score, the outcome and the rehearsal's ground truth, and
    nothing the agent wrote: the text depends only on the verdict's outcome and
    the rehearsal, so it cannot carry the transfer answer. It ends with a blank
    line, ready to sit in front of the next prompt.
    """
    reason = str(verdict.get("reason", ""))
    outcome = next((o for o in OUTCOMES if reason.startswith(o)), "not judged")
    score = float(verdict.get("score", 0.0))
    value, evidence = expected_answer(rehearsal_expected)
    truth = json.dumps({"value": value, "evidence": evidence}, separators=(",", ":"), ensure_ascii=False)
    return (
        f"Feedback on your PART 1 answer: score {score:g} of 1 ({outcome}).\n"
        f"The PART 1 ground truth was: {truth}\n"
        "Check it against your own reading of the trail; the next question asks something different.\n\n"
    )
