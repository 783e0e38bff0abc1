"""Where a score is decided: every rule of a case's verdict, in order, in one function.

:func:`decide` is the only place a run becomes a score (where a judge command's
verdict is the score instead, :func:`~pytest_recall.scoring.llm_verdict.settle` says so after it). It is pure: the facts
that need I/O (which case files changed on disk, what a trap task's own judge
printed, what a user's judge hook says) are handed to it, the last two as
callables that it calls only when their rule is reached.

The rules, first match wins:

1. an agent that could not start: no score, an error;
2. a case changed on disk during the run: 0, since an agent must not escape
   its score by rewriting its case; likewise an agent that left something the
   harness could not handle plainly (a tree too deep to walk, a FIFO as its
   cost file, its workdir swapped for a link): 0, an agent failure with the
   reason, never an error, which would take the case out of the score;
3. a step the model refused for a rate limit in the case's last attempt
   (the retry budget spent): 0, as a case with no answer, named
   ``rate_limited`` so that it never reads as forgetting; whatever the step
   printed is not judged, so claiming a rate limit never scores above a
   wrong answer;
4. a step that timed out, was killed or failed before the last: 0, since the
   later sessions could not recall what an unfinished one never stored;
5. a trap task's own judge, when the task ships one; a judge that fails
   on the answer is tried on the case's expected answer: when it judges
   that, the agent's answer broke it (0, ``agent_failed``); when it fails
   there too, the task is broken and the case gets no score;
6. the last step's exit code and silence, then the answer kind's judge;
7. a control item scores like any other but never fails: it measures what
   the agent knows without memory.

Every verdict also names its *outcome*, so that no agent failure is ever read
as forgetting: ``correct``, ``partial``, ``wrong``, ``unknown`` (the agent said
UNKNOWN or printed nothing), ``agent_failed`` (a step exited non-zero or died
by a signal), ``timed_out``, ``rate_limited`` (the model still refused it
when the retry budget was spent), or ``error`` (it could not start, or a trap
task's judge failed). The score stays exactly what the seed's judge gives: an agent
failure still scores 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import Any

from pytest_recall.cases import KIND_FILES, CaseRun
from pytest_recall.scoring.judge import UNKNOWN, final_line, judge_answer, judge_steps, step_failure
from pytest_recall.scoring.passing import scored_a_pass

AnswerScorer = Callable[[str, Mapping[str, Any]], dict[str, Any]]
TaskJudge = Callable[[str, "int | None"], Any]
TASK_JUDGE_NAME = "judge.py"
OUTCOMES = ("correct", "partial", "wrong", "unknown", "agent_failed", "timed_out", "rate_limited", "error")


@dataclass(frozen=True, slots=True)
class Verdict:
    """A decided case: its score, why, and what the judge said besides (``reported``, ``n_candidates``, ...)."""

    score: float | None
    reason: str | None
    details: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    error: str | None = None
    control: bool = False
    outcome: str = "wrong"

    def as_dict(self) -> dict[str, Any]:
        """The judge's own mapping, with the decided score and reason: what records and task graders read."""
        return {**self.details, "score": self.score, "reason": self.reason}


def decide(
    run: CaseRun,
    *,
    answer_judge: AnswerScorer,
    changed_on_disk: Sequence[str] = (),
    task_judge: TaskJudge | None = None,
) -> Verdict:
    """The verdict of one run of one case. See the module docstring for the rules and their order."""
    case = run.case
    if run.error:
        return Verdict(None, run.error, error=run.error, control=run.control, outcome="error")
    stdout = run.judged_stdout
    category = case.expected.get("category")
    if (refused := _refused_before_judging(run, changed_on_disk, category)) is not None:
        return refused
    # An exit status the case counts as ending well (ok_exit_codes) is judged as 0.
    outcomes = [
        (0 if result.exit_code in result.ok_exit_codes else result.exit_code, result.signal, result.timed_out)
        for result in (step.result for step in run.steps)
    ]
    # A case of a group that shared its group's ingest ran from its own first step, not from step 1.
    first = run.steps[0].number if run.steps else 1
    planned = 1 if run.control else sum(1 for step in case.steps if step.number >= first)
    task_judge_failure = None
    judged: Mapping[str, Any]
    if task_judge is not None:
        exit_code = outcomes[-1][0] if outcomes else None
        failed_step = step_failure(outcomes, stdout, case.expected, planned_steps=planned)
        if failed_step:
            judged = failed_step
        else:
            output = task_judge(stdout, exit_code)
            task_judge_failure = output if isinstance(output, TaskJudgeFailure) else None
            judged = _task_judge_verdict(output, category)
    else:
        # Files are judged on the snapshot the session layer took, which the judge hook does not carry.
        judge = (
            partial(judge_answer, snapshot=run.workspace_snapshot) if case.answer_kind == KIND_FILES else answer_judge
        )
        judged = judge_steps(outcomes, stdout, case.expected, judge, planned_steps=planned)
    details = {key: value for key, value in judged.items() if key not in ("score", "reason")}
    score = judged.get("score")
    outcome = "agent_failed" if task_judge_failure is not None and task_judge_failure.agents_doing else None
    outcome = outcome or _outcome(run, score, stdout)
    why = judged.get("reason")
    if run.memory_hint and outcome in ("partial", "wrong", "unknown"):
        # No earlier step kept any memory: the reason says where it went instead (sessions/lost_memory.py).
        why = f"{why}; {run.memory_hint}" if why else run.memory_hint
    return Verdict(score, why, MappingProxyType(details), control=run.control, outcome=outcome)


def _refused_before_judging(run: CaseRun, changed_on_disk: Sequence[str], category: Any) -> Verdict | None:
    """A 0 whatever the answer: the case changed under the run, the agent left what the harness refuses, or the
    model refused a step to the end of the retry budget; None when the answer is to be judged."""
    if changed_on_disk:
        reason, outcome = f"case files changed on disk during the run: {', '.join(changed_on_disk)}", "wrong"
    elif run.agent_fault:
        reason, outcome = f"the agent left what the harness refuses to handle: {run.agent_fault}", "agent_failed"
    elif (refused := _rate_limited_step(run)) is not None:
        reason = (
            f"the model still refused step {refused} for a rate limit on attempt {run.attempts}, the last of the "
            "retry budget: scored 0, not forgetting"
        )
        outcome = "rate_limited"
    else:
        return None
    return Verdict(0.0, reason, MappingProxyType({"category": category}), control=run.control, outcome=outcome)


def _rate_limited_step(run: CaseRun) -> int | None:
    """The number of the step that ended the run because the model refused it for a rate limit, else None."""
    failed = next((step for step in run.steps if step.result.failed), None)
    return failed.number if failed is not None and failed.result.rate_limit_wait() is not None else None


def _outcome(run: CaseRun, score: Any, stdout: str) -> str:
    """What happened, in one word; a failed or timed-out step wins over any score."""
    failed = next((step.result for step in run.steps if step.result.failed), None)
    if failed is not None:
        return "timed_out" if failed.timed_out else "agent_failed"
    if not isinstance(score, (int, float)) or isinstance(score, bool):
        return "error"  # a trap task's judge that gave no score
    if scored_a_pass(score):
        return "correct"
    if score > 0:
        return "partial"
    if not stdout.strip() or final_line(stdout).upper() == UNKNOWN:
        return "unknown"
    return "wrong"


def _task_judge_verdict(output: Any, category: Any) -> Mapping[str, Any]:
    """What a trap task's judge printed, taken as the verdict when it is one."""
    if isinstance(output, TaskJudgeFailure):
        if output.agents_doing:
            reason = (
                f"task judge failed on this answer ({output.reason}) but judges the expected answer: "
                "the agent's doing, scored 0"
            )
            return {"score": 0.0, "reason": reason, "category": category}
        reason = f"task judge failed: {output.reason}; it fails on the expected answer too: the task's doing"
        return {"score": None, "reason": reason, "category": category}
    return dict(output)


def task_judge_problem(output: Any) -> str | None:
    """Why what a trap task's judge printed is no verdict, or None when it is one (a JSON object with a score)."""
    score = output.get("score") if isinstance(output, dict) else None
    if not isinstance(score, (int, float)) or isinstance(score, bool):
        return f"{TASK_JUDGE_NAME} printed no JSON object with a numeric 'score'"
    return None


@dataclass(frozen=True, slots=True)
class TaskJudgeFailure:
    """A trap task's judge that could not give a verdict (it crashed, hung or printed no JSON).

    ``agents_doing``: the same judge gives a verdict on the case's expected answer, so what broke it is the
    agent's answer (output it cannot parse, a huge reply), and the case scores 0 as the agent's failure; when
    it fails on the expected answer too, the task is broken and the case is an error that leaves the score.
    """

    reason: str
    agents_doing: bool = False
