"""Readable failure reports: what was expected, what came back, and why.

A failed case shows this text instead of a traceback. The same text serves
the ``judge`` fixture (plugin/judge_fixture.py), so a user's own test fails the same way a case does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SHOWN_LINES = 6
# A compact failure shows this many lines of the last step's output: enough for the answer, not a screenful.
COMPACT_LINES = 3
MORE_HINT = "  (-v shows every step's output; the JSON report and --recall-html keep the transcripts)"


class CaseFailed(Exception):
    """A case that ran but did not score 1.0; its message is the whole report."""


def _last_lines(text: str, count: int = SHOWN_LINES) -> list[str]:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-count:]


def _block(title: str, text: str, count: int = SHOWN_LINES) -> list[str]:
    lines = _last_lines(text, count)
    if not lines:
        return [f"    {title}: (empty)"]
    return [f"    {title} (last {len(lines)} lines):", *(f"      | {line[:200]}" for line in lines)]


def verdict_report(
    verdict: Mapping[str, Any],
    expected: Mapping[str, Any],
    steps: Sequence[Mapping[str, Any]] = (),
    *,
    title: str = "",
    compact: bool = False,
) -> str:
    """Expected, reported, reason, then the tail of each step's stdout and stderr.

    ``steps`` are step records as in the JSON report (``step``, ``exit_code``,
    ``duration_s``, ``stdout``, ``stderr``, ...). ``compact`` keeps only the
    last few lines of the last step, with a pointer to the rest: a big
    failing run must stay readable in a CI log.
    """
    heading = f"{title} " if title else ""
    score, reported = verdict.get("score"), verdict.get("reported")
    # Three decimals, as every other score the run prints: a mean of epochs reads 0.222, not 0.2222222222222222.
    shown_score = round(score, 3) if isinstance(score, float) else score
    lines = [
        f"{heading}scored {shown_score}: {verdict.get('reason')}",
        f"  expected: {expected.get('answer')!r}",
        f"  reported: {'no answer' if reported is None else repr(reported)}",
    ]
    if expected.get("category"):
        lines.append(f"  category: {expected.get('category')}")
    shown_steps = list(steps)[-1:] if compact else steps
    for step in shown_steps:
        status = "timed out" if step.get("timed_out") else f"exit {step.get('exit_code')}"
        if step.get("signal"):
            status = f"killed by signal {step.get('signal')}"
        extra = ", output truncated" if step.get("truncated") else ""
        lines.append(f"  step {step.get('step')}: {status} after {float(step.get('duration_s') or 0):.2f}s{extra}")
        if compact:
            lines.extend(_block("stdout", str(step.get("stdout") or ""), COMPACT_LINES))
            if str(step.get("stderr") or "").strip():
                lines.extend(_block("stderr", str(step.get("stderr") or ""), COMPACT_LINES))
        else:
            lines.extend(_block("stdout", str(step.get("stdout") or "")))
            lines.extend(_block("stderr", str(step.get("stderr") or "")))
    if compact and steps:
        lines.append(MORE_HINT)
    return "\n".join(lines)


def fold_repeated_stderr(text: str, seen: dict[tuple[str, ...], str], label: str) -> str:
    """A stderr block another case's failure already showed, named instead of printed again.

    Eight cases failing with the same usage line are one problem; ``seen``
    maps each block shown so far to the case that showed it first.
    """
    lines = text.splitlines()
    kept: list[str] = []
    index = 0
    while index < len(lines):
        end = index + 1
        if lines[index].startswith("    stderr (last "):
            while end < len(lines) and lines[end].startswith("      | "):
                end += 1
            first = seen.setdefault(tuple(lines[index:end]), label)
            if first != label:
                kept.append(f"    stderr: the same as {first}'s, shown above")
                index = end
                continue
        kept.extend(lines[index:end])
        index = end
    return "\n".join(kept)
