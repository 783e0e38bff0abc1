"""The ``--recall-*`` rows of the topics that say what a run makes of its cases: judging, the reports, and
scale-out (shards, retries, budgets). Registered by :mod:`~pytest_recall.plugin.options`; docs/options.md."""

from __future__ import annotations

from pytest_recall.plugin.config import DEFAULT_RETRY_DELAY_S
from pytest_recall.plugin.option_model import Option
from pytest_recall.reporting import TranscriptMode
from pytest_recall.scoring import AnswerJudgeName, FreeFormJudge
from pytest_recall.sessions import (
    DEFAULT_JUDGE_TIMEOUT_S,
    DEFAULT_RATE_LIMIT_ATTEMPTS,
)

JUDGING_OPTIONS = (
    Option.mode(
        "recall_answer_judge",
        "How each case's last answer is judged: 'answer' (default) the built-in judge of its answer_kind (or a "
        "pytest_recall_judge hook); 'contains' a retrieval judge, 1 when the expected answer appears anywhere in "
        "the output, for agents that return what a memory found rather than an answer (recall-mcp). Its reason "
        "gives the bytes returned, since returning everything finds everything. 'evidence' is the same for the "
        "case's evidence (an import's evidence turns, else its answer): the score is then a memory's evidence "
        "recall, per category.",
        choices=AnswerJudgeName,
    ),
    Option(
        "recall_judge_cmd",
        "An LLM judge: a command run once per judged case, outside the agent's sandbox, given one JSON object on stdin "
        "(question, gold, answer, kind, case_id) and printing yes/no or a JSON object with a score and a reason, "
        "e.g. 'recall-judge -m gpt-4o-mini'. It judges the free-form kinds (longmemeval, locomo, free); its "
        "verdict, cost and errors go in each record's llm_judge, apart from the agent's. Retried as agents are "
        "(--recall-retries); the same question, gold and answer is judged once per run and judge. Give it more "
        "than once, each as NAME=CMD, for several judges of the same answers (ini: one judge per line): the "
        "first given scores unless --recall-judge-score names another; the report's judges block sets them "
        "side by side.",
        metavar="[NAME=]COMMAND",
        kind="list",
    ),
    Option(
        "recall_judge_score",
        "With several --recall-judge-cmd judges: the NAME of the one whose verdict is the score (default: the "
        "first given); the others' verdicts are kept beside it in each record's llm_judges.",
        metavar="NAME",
    ),
    Option(
        "recall_judge_both",
        "With --recall-judge-cmd: also put every kind that has a deterministic judge and a text answer (money, "
        "voucher, abstain, ...) to the judge command, so the report gives the two judges' agreement rate and "
        "Cohen's kappa, per kind, and lists the cases where they disagree. The deterministic score stays the score.",
        "false",
        kind="bool",
    ),
    Option.mode(
        "recall_free_form_judge",
        "Whose verdict is the score of a free-form case (longmemeval, locomo): 'deterministic' (default) the "
        "built-in judge's, with the judge command's recorded beside it; 'llm' the --recall-judge-cmd verdict, as "
        "LongMemEval's official metric does, the built-in score kept beside it. A 'free' case has no built-in "
        "judge: the judge command always scores it, and a run with one needs --recall-judge-cmd.",
        choices=FreeFormJudge,
    ),
    Option(
        "recall_judge_samples",
        "Ask each judge command this many times per answer (default 1): its verdict is the majority of its samples "
        "(a tie fails), each sample cached apart, and the judges table gives each judge's flip rate, the share of "
        "answers its samples disagree on.",
        "1",
        metavar="K",
    ),
    Option(
        "recall_judge_timeout",
        f"Seconds one call of the judge command may take before it is killed and counted a judge error "
        f"(default {DEFAULT_JUDGE_TIMEOUT_S:g}).",
        str(DEFAULT_JUDGE_TIMEOUT_S),
        metavar="SECONDS",
    ),
)

REPORTS_OPTIONS = (
    Option(
        "recall_report",
        "Write the run report as one JSON document to this path at session end.",
        metavar="PATH",
    ),
    Option(
        "recall_html",
        "Write the run report as one self-contained HTML page to this path at session end.",
        metavar="PATH",
    ),
    Option.mode(
        "recall_transcripts",
        "Which cases keep their steps' prompt references, stdout and stderr in the report: 'failed' (default) "
        "those that did not score 1.0, 'all' every case (with whole prompts instead of references), 'none' no "
        "case. The run log always keeps everything.",
        choices=TranscriptMode,
    ),
    Option(
        "recall_log",
        "Append each finished case's record to this file as one JSON line, on disk as soon as the case ends, so "
        "a killed run keeps the work it paid for. xdist workers may share it.",
        metavar="PATH",
    ),
)

SCALE_OUT_OPTIONS = (
    Option(
        "recall_concurrency",
        "Cases run at once inside one pytest process (default 1). Agents mostly wait on I/O, so this can far "
        "exceed the core count; it is cheaper than as many xdist workers. Under xdist it applies in each worker: "
        "-n W runs W x N cases at once.",
        "1",
        metavar="N",
    ),
    Option(
        "recall_shard",
        "Run only shard K of N (e.g. 2/4): a deterministic, balanced share of the collected tests, so N jobs "
        "run every case exactly once. Merge their reports with 'pytest-recall merge'. 'auto' reads K and N from "
        "RECALL_SHARD_INDEX/RECALL_SHARD_TOTAL, GitLab's CI_NODE_INDEX/CI_NODE_TOTAL, or a Kubernetes Indexed "
        "Job's JOB_COMPLETION_INDEX (from 0) with RECALL_SHARD_TOTAL.",
        metavar="K/N|auto",
    ),
    Option(
        "recall_shard_durations",
        "A previous report or run log whose case durations balance --recall-shard by time (longest first); "
        "without it, cases are dealt by a stable hash of their node id.",
        metavar="PATH",
    ),
    Option(
        "recall_retries",
        "Run a case again from step 1, in a fresh scope and HOME, when its run ended as an agent failure (a step "
        "exited non-zero, died by a signal or timed out, or the agent could not start), up to N more times "
        "(default 0). Rate limits and overload are the usual reason. Each record keeps its 'attempts'.",
        "0",
        metavar="N",
    ),
    Option(
        "recall_retry_delay",
        f"Seconds before the first retry of a case, doubling for each further one (default "
        f"{DEFAULT_RETRY_DELAY_S:g}; 0 retries at once). Other cases in flight keep running meanwhile.",
        str(DEFAULT_RETRY_DELAY_S),
        metavar="SECONDS",
    ),
    Option(
        "recall_rate_limit_attempts",
        "How many times a case runs while the model refuses it for a rate limit (the run pausing new sessions "
        f"between runs; default {DEFAULT_RATE_LIMIT_ATTEMPTS}). A case still refused then ends as 'rate_limited': "
        "scored 0, and named apart from forgetting.",
        str(DEFAULT_RATE_LIMIT_ATTEMPTS),
        metavar="N",
    ),
    Option(
        "recall_max_cost",
        "Stop starting cases once the spend the agent reported (every attempt's, retries included) reaches this "
        "many US dollars; cases in flight finish, the rest are skipped and named in the summary, and "
        "--recall-resume continues later. Under xdist each worker counts its own spend. Default: no limit.",
        metavar="USD",
    ),
    Option(
        "recall_estimate_from",
        "With --collect-only: an earlier report whose median cost and duration per session give the expected "
        "cost and time of the sessions this run would start.",
        metavar="PATH",
    ),
    Option(
        "recall_resume",
        "Resume from a run log (or a report): skip cases it already scored with the same suite, case id, "
        "content and command, and report their stored records as they are. A missing file resumes nothing.",
        metavar="PATH",
    ),
)
