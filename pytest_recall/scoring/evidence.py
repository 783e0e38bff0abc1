"""The evidence a verdict needs beyond the run, gathered in one place, then handed to :func:`decide`.

:func:`~pytest_recall.scoring.verdict.decide` stays pure; this is the one
module in ``scoring`` that reads the disk. It checks the case's own files
against the digests taken at collection (an agent must not escape its score
by rewriting its case) and, for a trap task that ships a judge, runs that
judge through a runner the caller hands in, since spawning it belongs to the
session layer. A fresh case and a case that could not start both come here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from pytest_recall.cases import TASK_JUDGE_KEY, Case, CaseRun, changed_files, changed_on_disk
from pytest_recall.scoring.llm_verdict import settle
from pytest_recall.scoring.verdict import AnswerScorer, Verdict, decide

# Runs a trap task's own judge on (case, last stdout, last exit code); returns what it printed as
# JSON, or a TaskJudgeFailure when it crashed, hung or printed no JSON.
TaskJudgeRunner = Callable[[Case, str, "int | None"], Any]


def case_verdict(
    run: CaseRun,
    *,
    answer_judge: AnswerScorer,
    task_judge_runner: TaskJudgeRunner,
    case_folder: Path | None = None,
    collected_digests: Mapping[str, str] | None = None,
) -> Verdict:
    """The verdict of one run: what changed on disk and the task judge's word, then :func:`decide`.

    ``collected_digests`` are the case folder's file digests at collection;
    None for a case that lives in memory (a generated suite).
    """
    if run.error:
        return decide(run, answer_judge=answer_judge)
    changed: list[str] = []
    if case_folder is not None and collected_digests is not None:
        changed = changed_files(case_folder, collected_digests)
    task_judge = None
    if run.case.extra.get(TASK_JUDGE_KEY):
        # A trap task that ships its own judge is scored by it, on what it reads from disk.
        changed += changed_on_disk(run.case)
        task_judge = partial(task_judge_runner, run.case)
    verdict = decide(run, answer_judge=answer_judge, changed_on_disk=changed, task_judge=task_judge)
    # The judge command's word on the answer (--recall-judge-cmd) is the score only where it decides.
    return verdict if changed or task_judge is not None else settle(verdict, run.llm_judge)
