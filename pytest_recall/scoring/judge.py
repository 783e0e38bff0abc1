"""The deterministic judge: did the remembered value come back?

Pure functions, no pytest and no I/O, so user tests, the CLI and the plugin
all judge the same way. The rules follow the session-memory-recall task:

1. The final non-empty line is the contract. ``UNKNOWN`` there scores 0.
2. If that line *is* the value (money normalised), the case scores 1.
3. If it carries exactly one candidate of the answer's kind, that candidate
   is the answer; several candidates are a shotgun and score 0.
4. Only when the final line carries no candidate at all is the whole output
   searched, and then the answer must be the sole candidate there.

A candidate is any token that could be an answer of that kind. Money
candidates need at least four whole digits, because every generated money
answer has them; smaller numbers are step counts or ranks, and counting them
would turn a correct answer into a false shotgun.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_recall.cases import (
    KIND_ABSTAIN,
    KIND_BEAM,
    KIND_EVIDENCE_JSON,
    KIND_FILES,
    KIND_FREE,
    KIND_LOCOMO,
    KIND_LONGMEMEVAL,
    KIND_MEMORYAGENTBENCH,
    KIND_MONEY,
    KIND_VOUCHER,
    WorkspaceSnapshot,
)
from pytest_recall.scoring.abstain import false_abstention, says_not_given, score_abstain

VOUCHER_PATTERN = re.compile(r"\bAR-2026-\d{4}\b")
ISO_DATE_PATTERN = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
# A BEAM answer is read whole (a rubric may want several lines: an ordered list, a summary), up to this tail.
MAX_BEAM_ANSWER_CHARS = 8000

# A number stands alone: no word character or period just before it, no word
# character just after, and a period after it only when no digit follows (so a
# sentence-ending period does not hide "27,940.01.").
_BEFORE = r"(?<![\w.])"
_AFTER = r"(?![\w])(?!\.\d)"
_CENTS = r"(?:\.\d{1,2})?"
_GROUPED = rf"\$?\d{{1,3}}(?:,\d{{3}})*{_CENTS}"
_PLAIN = rf"\$?\d+{_CENTS}"
MONEY_PATTERN = re.compile(f"{_BEFORE}{_GROUPED}{_AFTER}|{_BEFORE}{_PLAIN}{_AFTER}")

# Characters peeled off both ends of every line: quotes, markdown emphasis,
# punctuation and brackets an agent may wrap its answer in.
LINE_STRIP_CHARS = " \t\r\n\"'`*.,:;!?()[]{}"
MIN_WHOLE_DIGITS = 4
UNKNOWN = "UNKNOWN"


def final_line(stdout: str) -> str:
    """The last line that still has text once wrapping punctuation is peeled off."""
    for line in reversed(stdout.splitlines()):
        stripped = line.strip(LINE_STRIP_CHARS)
        if stripped:
            return stripped
    return ""


def normalise_money(text: str) -> str | None:
    """``'$12,345.67 USD'`` becomes ``'12345.67'``; None when it is no number."""
    bare = text.replace("$", "").replace(",", "").replace("USD", "").strip()
    try:
        return f"{float(bare):.2f}"
    except ValueError:
        return None


def candidates(text: str, kind: str) -> set[str]:
    """Every token in ``text`` that could be an answer of this kind, normalised.

    Voucher ids and ISO dates are blanked before the money scan: otherwise
    ``AR-2026-0016`` would offer ``2026.00`` as a rival money value.
    """
    if kind == KIND_VOUCHER:
        return set(VOUCHER_PATTERN.findall(text))
    scrubbed = ISO_DATE_PATTERN.sub(" ", VOUCHER_PATTERN.sub(" ", text))
    found: set[str] = set()
    for token in MONEY_PATTERN.findall(scrubbed):
        value = normalise_money(token)
        if value is not None and len(value.split(".")[0]) >= MIN_WHOLE_DIGITS:
            found.add(value)
    return found


def _verdict(
    score: float, reason: str, category: Any, reported: str, n_candidates: int | None = None
) -> dict[str, Any]:
    verdict: dict[str, Any] = {"score": score, "reason": reason, "category": category, "reported": reported}
    if n_candidates is not None:
        verdict["n_candidates"] = n_candidates
    return verdict


# A shotgun's reason names this many of its values; a thousand would bury the verdict.
NAMED_CANDIDATES = 4


def _named(values: set[str]) -> str:
    """The candidates a shotgun offered, sorted, so the reason shows what the agent hedged between."""
    listed = sorted(values)
    more = f" and {len(listed) - NAMED_CANDIDATES} more" if len(listed) > NAMED_CANDIDATES else ""
    return ", ".join(listed[:NAMED_CANDIDATES]) + more


def score_case(stdout: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """Score one final-step stdout against a money or voucher expectation."""
    answer = str(expected["answer"])
    kind = str(expected.get("answer_kind", KIND_MONEY))
    category = expected.get("category")

    tail = final_line(stdout)
    if tail.upper() == UNKNOWN:
        return _verdict(
            0.0, "agent answered UNKNOWN: the value did not survive into the new session", category, UNKNOWN
        )
    tail_value = tail if kind == KIND_VOUCHER else (normalise_money(tail) or tail)
    if tail_value.lower() == answer.lower():
        return _verdict(1.0, "final line is the expected value", category, tail)

    on_tail = candidates(tail, kind)
    if on_tail:
        if answer in on_tail and len(on_tail) == 1:
            return _verdict(1.0, "final line carries the expected value amid prose", category, answer)
        if answer in on_tail:
            reason = f"final line offers {len(on_tail)} candidate values ({_named(on_tail)}): a shotgun earns nothing"
            return _verdict(0.0, reason, category, tail, len(on_tail))
        return _verdict(0.0, "final line gives a different value", category, tail, len(on_tail))

    anywhere = candidates(stdout, kind)
    if answer in anywhere and len(anywhere) == 1:
        return _verdict(1.0, "expected value is the only candidate in the output", category, answer)
    if answer in anywhere:
        reason = f"output offers {len(anywhere)} candidate values ({_named(anywhere)}): a shotgun earns nothing"
        return _verdict(0.0, reason, category, tail, len(anywhere))
    return _verdict(0.0, "expected value not found in the output", category, tail, len(anywhere))


def judge_answer(
    stdout: str, expected: Mapping[str, Any], *, snapshot: WorkspaceSnapshot | None = None
) -> dict[str, Any]:
    """Dispatch on ``answer_kind`` to the built-in judges.

    ``NOT GIVEN`` is checked here, not in :func:`score_case`, so that function
    stays the seed's rule for rule. A ``files`` answer is judged on
    ``snapshot``, what the last step left in its workdir, not on stdout.
    """
    kind = expected.get("answer_kind")
    if kind == KIND_FILES:
        from pytest_recall.scoring.files_judge import score_files

        return score_files(snapshot, expected)
    if kind == KIND_EVIDENCE_JSON:
        from pytest_recall.scoring.evidence_judge import score_evidence_json

        return score_evidence_json(stdout, expected)
    if kind == KIND_FREE:
        # No rule of ours can read an open answer; the judge command's verdict replaces this (scoring/llm_verdict.py).
        reason = "a free answer is scored by the judge command (--recall-judge-cmd) only"
        return {"score": None, "reason": reason, "category": expected.get("category"), "reported": final_line(stdout)}
    if kind == KIND_ABSTAIN:
        return score_abstain(final_line(stdout), expected)
    if kind == KIND_LONGMEMEVAL:
        from pytest_recall.scoring.lexical_judge import score_longmemeval_lexical

        return score_longmemeval_lexical(final_line(stdout), expected)
    if kind == KIND_LOCOMO:
        from pytest_recall.scoring.locomo_f1 import score_locomo

        return score_locomo(final_line(stdout), expected)
    if kind == KIND_BEAM:
        from pytest_recall.scoring.beam_rubric import score_beam

        return score_beam(stdout[-MAX_BEAM_ANSWER_CHARS:], expected)
    if kind == KIND_MEMORYAGENTBENCH:
        from pytest_recall.scoring.memoryagentbench_metrics import score_memoryagentbench

        return score_memoryagentbench(final_line(stdout), expected)
    if kind in (None, KIND_MONEY, KIND_VOUCHER) and says_not_given(final_line(stdout)):
        # The seed would still credit a lone value earlier in the output; an abstention takes it back.
        return false_abstention(final_line(stdout), expected)
    return score_case(stdout, expected)


def judge_run(stdout: str, exit_code: int | None, expected: Mapping[str, Any]) -> dict[str, Any] | None:
    """The verdicts that need no answer at all: a failed exit or silence.

    Returns None when the output must go to the answer judge. A non-zero
    exit scores 0 even if the right value was printed: a crashed agent did
    not finish its job.
    """
    category = expected.get("category")
    if exit_code is not None and exit_code != 0:
        return _verdict(0.0, f"agent exited {exit_code}", category, final_line(stdout))
    # A coding agent's work is its files: it may well say nothing.
    if not stdout.strip() and expected.get("answer_kind") != KIND_FILES:
        return _verdict(0.0, "empty stdout", category, "")
    return None


def judge_steps(
    outcomes: Sequence[tuple[int | None, int | None, bool]],
    stdout: str,
    expected: Mapping[str, Any],
    answer_judge: Callable[[str, Mapping[str, Any]], dict[str, Any]] = judge_answer,
    *,
    planned_steps: int | None = None,
) -> dict[str, Any]:
    """The verdict for a whole case from each step's (exit code, signal, timed out)."""
    spoiled = step_failure(outcomes, stdout, expected, planned_steps=planned_steps)
    if spoiled is not None:
        return spoiled
    exit_code = outcomes[-1][0] if outcomes else None
    return judge_run(stdout, exit_code, expected) or answer_judge(stdout, expected)


def step_failure(
    outcomes: Sequence[tuple[int | None, int | None, bool]],
    stdout: str,
    expected: Mapping[str, Any],
    *,
    planned_steps: int | None = None,
) -> dict[str, Any] | None:
    """The verdict when a step spoiled the case before any answer could be read, else None.

    A step that timed out, crashed or failed spoils the case: the later
    sessions could not have recalled what an unfinished one never stored.
    The last step's own exit code is left to the judge of its answer; a run
    that stopped early (``planned_steps`` more than it ran) has no last step.
    """
    last_step = planned_steps or len(outcomes)
    category = expected.get("category")
    for number, (exit_code, signal_number, timed_out) in enumerate(outcomes, start=1):
        if timed_out:
            reported = final_line(stdout) if number == len(outcomes) else ""
            return _verdict(0.0, f"timeout in step {number}", category, reported)
        if signal_number is not None:
            return _verdict(0.0, f"agent was killed by signal {signal_number} in step {number}", category, "")
        last = number == last_step
        if exit_code not in (0, None) and not last:
            return _verdict(0.0, f"agent exited {exit_code} in step {number}", category, "")
    return None


def feedback_text(verdict: Mapping[str, Any], expected: Mapping[str, Any]) -> str:
    """What an agent is told about its previous answer before the next question."""
    if expected.get("answer_kind") == KIND_EVIDENCE_JSON:
        from pytest_recall.scoring.evidence_judge import render_feedback

        return render_feedback(dict(verdict), expected)
    return (
        f"Feedback on your previous answer: score {verdict.get('score')} ({verdict.get('reason')}). "
        f"The correct answer was {expected.get('answer')}.\n\n"
    )
