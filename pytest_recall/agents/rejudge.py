"""``pytest-recall rejudge``: a finished run's stored answers put to other judges, no agent started.

A record keeps the request its judge would read (``judge_request``, see
:func:`~pytest_recall.scoring.judge_scope.kept_request`); each judge command is
asked it again, with the case id put back, exactly as a run asks, so the same
judge gives the same verdict, and bounded and killed as in a run
(:func:`~pytest_recall.sessions.judge_command.run_judge_command`). Within one
rejudge, an answer given twice is judged once per judge, as a run's cache
does. With ``samples`` (``--judge-samples=K``) each judge is asked K times
per answer and its verdict is the majority (:func:`majority`), the samples
cached apart; how often a judge's K samples disagree is its flip rate. The
judges' verdicts then go to the judges table
(:mod:`pytest_recall.scoring.judge_panel`). This lives among the agents since
it is the one place that reads a report and runs judge processes: reporting
may not start processes, and sessions may not read reports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pytest_recall.reporting import CaseRecord, RunReport, case_name, deterministic_score, judges_both, prompts_sha256
from pytest_recall.scoring import PanelCase, judge_cache_key, majority_reason, panel_table, sample_majority
from pytest_recall.sessions import Judge, JudgeCall, run_judge_command
from pytest_recall.sessions import parse_judges as parse_judge_texts

# Cases named in the one line about answers that were not kept; the rest are counted.
NAMED_MISSING = 10


def parse_judges(texts: Sequence[str]) -> list[Judge]:
    """``--judge-cmd`` values as judges, named as ``--recall-judge-cmd`` names them."""
    return parse_judge_texts(texts, "--judge-cmd")


def _verdict(call: JudgeCall, cached: bool) -> dict[str, Any]:
    reply = call.reply
    return {
        "score": reply.score,
        "reason": reply.reason,
        "error": reply.error,
        "cached": cached,
        "attempts": 0 if cached else call.attempts,
        "cost_usd": None if cached else call.cost_usd,
        "tokens_in": None if cached else call.tokens_in,
        "tokens_out": None if cached else call.tokens_out,
        "prompt_sha256": call.prompt_sha256,
    }


def majority(sampled: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One verdict from a judge's samples of one answer: a pass when more than half of the samples that gave a
    verdict passed, so a tie is a fail (a judge that cannot make up its mind has not accepted the answer); a judge
    error only when no sample gave a verdict. One sample is that sample's verdict, as without sampling."""
    if len(sampled) == 1:
        return dict(sampled[0])
    scores = [verdict["score"] for verdict in sampled]
    score, flipped = sample_majority(scores)
    asked = [verdict for verdict in sampled if not verdict["cached"]]
    costs = [verdict["cost_usd"] for verdict in asked if verdict["cost_usd"] is not None]
    return {
        "score": score,
        "reason": majority_reason(scores),
        "error": None if score is not None else sampled[0]["error"],
        "cached": not asked,
        "attempts": sum(verdict["attempts"] for verdict in sampled),
        "cost_usd": round(sum(costs), 6) if costs else None,
        "tokens_in": sum(verdict["tokens_in"] or 0 for verdict in asked) if asked else None,
        "tokens_out": sum(verdict["tokens_out"] or 0 for verdict in asked) if asked else None,
        "prompt_sha256": next((v["prompt_sha256"] for v in sampled if v["prompt_sha256"]), None),
        "calls": len(asked),
        "samples": [verdict["score"] for verdict in sampled],
        # Whether the samples that gave a verdict disagree; None with fewer than two verdicts to compare.
        "flipped": flipped,
    }


def _ask_all(
    judge: Judge,
    requests: Sequence[dict[str, Any]],
    *,
    samples: int,
    timeout_s: float,
    retries: int,
    workers: int,
) -> list[dict[str, Any]]:
    """One judge's verdicts on every request, in order, each the majority of ``samples`` askings; one call per
    distinct request and sample (errors asked again)."""
    asks = [(index, sample) for index in range(len(requests)) for sample in range(samples)]
    keys = [judge_cache_key(judge.argv, requests[index], sample) for index, sample in asks]
    first: dict[str, int] = {}
    for position, key in enumerate(keys):
        first.setdefault(key, position)

    def ask(position: int) -> JudgeCall:
        return run_judge_command(judge.argv, requests[asks[position][0]], timeout_s=timeout_s, retries=retries)

    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="recall-rejudge") as pool:
        calls = dict(zip(first.values(), pool.map(ask, first.values()), strict=True))
    said = [_verdict(calls[first[key]], cached=first[key] != position) for position, key in enumerate(keys)]
    return [majority(said[index * samples : (index + 1) * samples]) for index in range(len(requests))]


def rejudge_report(
    report: RunReport,
    judges: Sequence[Judge],
    *,
    timeout_s: float,
    retries: int = 0,
    workers: int = 2,
    samples: int = 1,
) -> dict[str, Any]:
    """Every kept answer of ``report`` put to every judge (``samples`` times each): the judges table, each case's
    verdicts, and the cases that kept no answer (an older report, an agent failure, a kind no judge takes)."""
    records = [CaseRecord.from_json(data) for data in report.cases]
    kept = [record for record in records if record.judge_request is not None]
    requests = [{"case_id": f"{record.suite}/{record.id}", **(record.judge_request or {})} for record in kept]
    verdicts = {
        judge.name: _ask_all(judge, requests, samples=samples, timeout_s=timeout_s, retries=retries, workers=workers)
        for judge in judges
    }
    cases = []
    panel = []
    for index, record in enumerate(kept):
        mine = {judge.name: verdicts[judge.name][index] for judge in judges}
        name, kind, built_in = case_name(record), str(record.answer_kind), deterministic_score(record)
        cases.append({"case": name, "kind": kind, "deterministic": built_in, "verdicts": mine})
        scores = {judge: verdict["score"] for judge, verdict in mine.items()}
        flips = {judge: verdict["flipped"] for judge, verdict in mine.items() if verdict.get("flipped") is not None}
        panel.append(PanelCase(name, kind, record.category, built_in, scores, flips))
    return {
        "judges": {judge.name: judge.text for judge in judges},
        "samples": samples,
        # Each judge's prompts, by the hash its command gave with each verdict (recall-judge does).
        "prompts_sha256": {judge.name: prompts_sha256(verdicts[judge.name]) for judge in judges},
        "table": panel_table(panel, [judge.name for judge in judges]),
        "judge_cost": _judge_cost(cases, judges),
        "cases": cases,
        "not_kept": not_kept(report),
    }


def _judge_cost(cases: Sequence[Mapping[str, Any]], judges: Sequence[Judge]) -> dict[str, dict[str, Any]]:
    """Each judge's calls, cost and tokens: judging's own, apart from what the agents spent in the run."""
    totals = {}
    for judge in judges:
        asked = [case["verdicts"][judge.name] for case in cases if not case["verdicts"][judge.name]["cached"]]
        costs = [verdict["cost_usd"] for verdict in asked if verdict["cost_usd"] is not None]
        tokens = [verdict["tokens_in"] or 0 for verdict in asked], [verdict["tokens_out"] or 0 for verdict in asked]
        totals[judge.name] = {
            "calls": sum(verdict.get("calls", 1) for verdict in asked),
            "cost_usd": round(sum(costs), 6) if costs else None,
            "tokens_in": sum(tokens[0]),
            "tokens_out": sum(tokens[1]),
        }
    return totals


def not_kept(report: RunReport) -> list[str]:
    """The cases of a report that kept no answer a judge could read again."""
    records = (CaseRecord.from_json(data) for data in report.cases)
    return [case_name(record) for record in records if record.judge_request is None]


def missing_line(not_kept: Sequence[str], total: int, run_mode: Mapping[str, Any] | None = None) -> str | None:
    """One line naming the cases that cannot be re-judged, or None when every case can; for a run without
    ``--recall-judge-both`` (its exact answers kept no request) it names that flag, the usual cause."""
    if not not_kept:
        return None
    named = ", ".join(not_kept[:NAMED_MISSING])
    more = f" and {len(not_kept) - NAMED_MISSING} more" if len(not_kept) > NAMED_MISSING else ""
    why = (
        "a report from before kept answers, an agent failure, or a kind no judge takes"
        if judges_both(run_mode)
        else "the run had no --recall-judge-both, so only free-form answers were kept for a judge: run it again "
        "with --recall-judge-cmd=CMD --recall-judge-both"
    )
    return f"{len(not_kept)} of {total} cases kept no answer to judge and cannot be re-judged ({why}): {named}{more}"
