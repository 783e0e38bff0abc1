"""The agent-supermemory suite run end to end, in fresh sessions: rehearsal, feedback, transfer.

Session 1 shows the trail and asks the rehearsal question; session 2, a new
process, opens with feedback on the answer session 1 actually gave, then asks
the transfer question without the trail.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

from pytest_recall.suites.audit_v2 import generate_one

BUNDLED = Path(__file__).resolve().parents[1] / "cases" / "agent-supermemory"
WRONG = '{"value":"nonsense","evidence":[]}'


def console_script(name: str) -> str:
    """An installed agent command, by the path this interpreter's install put it at."""
    return str(Path(sys.executable).parent / name)


def bundled_suite(recall_suite, size: int | None = None) -> Path:
    """The bundled suite.toml, as shipped, or with a smaller size to stay fast."""
    text = (BUNDLED / "suite.toml").read_text(encoding="utf-8")
    if size is not None:
        text, count = re.subn(r"(?m)^size = \d+$", f"size = {size}", text)
        assert count == 1
    folder = recall_suite.root / BUNDLED.name
    folder.mkdir(parents=True)
    (folder / "suite.toml").write_text(text, encoding="utf-8")
    return folder


def test_the_notebook_scores_one_and_the_amnesiac_zero(recall_suite):
    bundled_suite(recall_suite, size=8)

    result = recall_suite.run("--recall-concurrency=8", command=console_script("recall-notebook"))

    result.assert_outcomes(passed=8)
    report = recall_suite.report()
    assert report["score"] == 1.0 and report["passed"] is True
    for record in report["cases"]:
        # A right rehearsal is told so before the transfer question, and session 2 never sees the trail.
        second = record["steps"][1]["prompt"]
        assert second.startswith("Feedback on your PART 1 answer: score 1 of 1 (correct value and minimal evidence).")
        assert "BEGIN AUDIT TRAIL" not in second

    result = recall_suite.run("--recall-concurrency=8", command=console_script("recall-amnesiac"))

    result.assert_outcomes(failed=8)
    assert recall_suite.report()["score"] == 0.0


def test_a_wrong_rehearsal_answer_is_told_so_in_the_next_fresh_session(recall_suite):
    bundled_suite(recall_suite, size=1)
    agent = recall_suite.pytester.makepyfile(wrong_agent=f"print({WRONG!r})")

    result = recall_suite.run(command=shlex.join([sys.executable, str(agent)]))

    result.assert_outcomes(failed=1)
    case = generate_one("eval", 0)
    (record,) = recall_suite.report()["cases"]
    first, second = record["steps"]
    assert first["prompt"] == case.steps[0].prompt and first["stdout"].strip() == WRONG
    rehearsal = case.steps[1].feedback
    assert rehearsal is not None
    truth = json.dumps(dict(rehearsal["answer"]), separators=(",", ":"))
    assert second["prompt"] == (
        "Feedback on your PART 1 answer: score 0 of 1 (wrong value).\n"
        f"The PART 1 ground truth was: {truth}\n"
        "Check it against your own reading of the trail; the next question asks something different.\n\n"
        + case.steps[1].prompt
    )
    assert record["score"] == 0.0 and record["reason"].startswith("wrong value")
