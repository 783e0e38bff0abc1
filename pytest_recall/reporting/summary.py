"""The terminal summary of a run: verdict, trust, categories, latency and cost, readable at a glance."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_recall.reporting.judge_section import judge_summary_lines
from pytest_recall.reporting.judges_block import judges_summary_lines
from pytest_recall.reporting.run_report import RunReport
from pytest_recall.reporting.wording import counted, left_out_text
from pytest_recall.scoring import JUDGE_ERROR_PREFIX, CaseSummary


def format_summary(report: RunReport, summaries: Sequence[CaseSummary]) -> list[str]:
    """The terminal table: verdict, categories, latency and cost, readable at a glance."""
    lines = [verdict_line(report), *warning_lines(report, summaries)]
    lines += _trust_lines(report)
    lines += epochs_from_line(report, summaries)
    if (stopped := stop_line(report)) is not None:
        lines.append(f"  {stopped}")
    lines += [f"  {line}" for line in rate_limit_lines(report)]
    if report.false_abstention_rate:
        lines.append(f"  false abstentions: {report.false_abstention_rate:.3f} (NOT GIVEN where a value was due)")
    lines += benchmark_lines(summaries, (report.run_mode or {}).get("answer_judge", "answer"))
    lines += judge_summary_lines(report)
    lines += judges_summary_lines(report)
    lines += memory_lines(report)
    categories = report.by_category or {}
    intervals = report.by_category_confidence or {}
    if categories:
        width = max(len(name) for name in categories)
        for name in sorted(categories):
            score = categories[name]
            bar = "#" * round(score * 20)
            line = f"  {name:<{width}}  {score:5.3f}  |{bar:<20}|  {_interval_brackets(intervals.get(name))}"
            lines.append(line.rstrip())
    cost = report.cost_usd_total
    lines.append(
        f"  latency per case: median {report.latency_ms_median / 1000:.2f}s, "
        f"p95 {report.latency_ms_p95 / 1000:.2f}s, total {report.latency_ms_total / 1000:.2f}s;  "
        f"cost: {'not reported' if cost is None else f'${cost:.4f}'}"
    )
    return lines


# How each public benchmark's kind is scored, said above its per-category figures so no one reads them as official.
BENCHMARK_METRICS = {
    "longmemeval": "LongMemEval, scored by the LEXICAL judge (not the benchmark's official LLM judge): "
    "per type, the share whose answer line contains the gold answer",
    "locomo": "LoCoMo, scored by the paper's token F1: per category, the mean F1 (adversarial: declined)",
}

# Said instead when --recall-free-form-judge=llm made the judge command's verdict the score.
LLM_SCORED = "{name}, scored by the judge command (--recall-judge-cmd; the built-in judge's score is in each record)"
# Said instead when a retrieval judge (--recall-answer-judge=contains or evidence) scored what a memory returned.
RETRIEVAL_SCORED = {
    "contains": "{name}, scored by the retrieval judge (--recall-answer-judge=contains): per type, the share whose "
    "output holds the gold answer, not the benchmark's metric",
    "evidence": "{name}, scored by the evidence judge (--recall-answer-judge=evidence): per type, the share whose "
    "output holds an evidence turn (evidence recall), not the benchmark's metric",
}


def benchmark_lines(summaries: Iterable[CaseSummary], answer_judge: Any = "answer") -> list[str]:
    """For imported public-benchmark cases: the metric, and how many haystack sessions each step was told."""
    feeds: dict[str, set[Any]] = {}
    by_llm: set[str] = set()
    for summary in summaries:
        kind = summary.answer_kind
        if kind in BENCHMARK_METRICS and not summary.control:
            feeds.setdefault(str(kind), set()).add(summary.sessions_per_step)
            if isinstance(summary.llm_judge, Mapping) and summary.llm_judge.get("decides"):
                by_llm.add(str(kind))
    lines = []
    for kind, per_step in sorted(feeds.items()):
        told = ", ".join(str(n) for n in sorted(n for n in per_step if n is not None)) or "?"
        metric = BENCHMARK_METRICS[kind]
        if kind in by_llm:
            metric = LLM_SCORED.format(name=metric.split(",")[0])
        elif answer_judge in RETRIEVAL_SCORED:
            metric = RETRIEVAL_SCORED[answer_judge].format(name=metric.split(",")[0])
        lines.append(f"  {metric}; haystack sessions per step: {told}")
    return lines


def warning_lines(report: RunReport, summaries: Sequence[CaseSummary]) -> list[str]:
    """What no summary may drop, ``-q`` included: a shared HOME, memory leaked to the control around an MCP
    server's scope, and agent failures that are no memory result."""
    shared = any(summary.run_home == "user" for summary in summaries)
    lines = [f"  {shared_home_warning(_sandbox_of(report) == 'bwrap')}"] if shared else []
    control = report.control
    if isinstance(control, Mapping) and control.get("mcp_leaked"):
        lines.append(f"  {MCP_LEAK_WARNING.format(score=control.get('score') or 0)}")
    return lines + epochs_from_warning(report, summaries) + failure_lines(summaries)


# Said when the no-memory control of a --recall-mcp run scored above 0: it cannot have remembered anything.
MCP_LEAK_WARNING = (
    "WARNING --recall-mcp: the no-memory control scored {score:.3f}, above 0: memory leaked around the scope "
    "(an MCP server keeping its store outside {{scope}}?), so the score is not one case's memory; see docs/mcp.md"
)


def shared_home_warning(sandboxed: bool) -> str:
    """Why a ``--recall-home=user`` score may not mean one case's memory; said in the header and the summary."""
    if sandboxed:
        return (
            "WARNING --recall-home=user under --recall-sandbox=bwrap: each session's HOME is an empty tmpfs, "
            "so memory an agent keeps in HOME is lost between steps; use --recall-home=case"
        )
    return (
        "WARNING --recall-home=user: memory an agent keeps in HOME is shared between cases (and with the "
        "control), so a case can score from another case's memory; use --recall-home=case"
    )


def _sandbox_of(report: RunReport) -> Any:
    mode = report.run_mode
    return mode.get("sandbox") if isinstance(mode, Mapping) else None


def failure_lines(summaries: Sequence[CaseSummary]) -> list[str]:
    """Identical agent failures on one line each: they are no memory result, and must never read as one.

    ``8 cases: agent failed in step 1 (exit 1): Error: 'Unknown model: fake'``
    """
    groups: dict[str, int] = {}
    for summary in summaries:
        if summary.control or summary.outcome not in FAILURE_OUTCOMES_SHOWN or summary.failure_text is None:
            continue
        key = summary.failure_text
        groups[key] = groups.get(key, 0) + 1
    if not groups:
        return []
    lines = ["  agent failures (not memory results, though each scores 0: fix the agent or its setup, then run again):"]
    lines += [f"  {counted(n, 'case')}: {text}" for text, n in sorted(groups.items(), key=lambda item: -item[1])]
    return lines


FAILURE_OUTCOMES_SHOWN = ("agent_failed", "timed_out")


def failure_text(row: Mapping[str, Any]) -> str:
    """Where and how a run's agent failed, with the last line it wrote on stderr."""
    steps = [s for s in row.get("steps") or [] if isinstance(s, Mapping)]
    failed = next(
        (s for s in steps if s.get("timed_out") or s.get("signal") is not None or s.get("exit_code") not in (0, None)),
        None,
    )
    if failed is None and row.get("reason"):
        # No step failed: what the agent left failed the case (a FIFO as its cost file, an uncopyable ingest).
        return str(row["reason"])[:160]
    failed = failed or (steps[-1] if steps else {})
    number = failed.get("step", "?")
    if failed.get("timed_out"):
        what = f"timed out in step {number}"
    elif failed.get("signal") is not None:
        what = f"agent killed by signal {failed.get('signal')} in step {number}"
    else:
        what = f"agent failed in step {number} (exit {failed.get('exit_code')})"
    stderr = [line.strip() for line in str(failed.get("stderr") or "").splitlines() if line.strip()]
    return f"{what}: {stderr[-1][:160]}" if stderr else what


def run_unit(report: RunReport) -> str:
    """What the counts count: *cases* are case folders, *runs* are case x epoch; they differ only with epochs."""
    return "run" if (report.epochs or 1) > 1 else "case"


def verdict_line(report: RunReport) -> str:
    """The first summary line; an interrupted run has no verdict, only how far it got."""
    unit = run_unit(report)
    n_total = int(report.n_total or 0)
    if report.interrupted:
        planned = report.n_planned
        ran = f"{n_total} of {counted(int(planned), unit)}" if planned else counted(n_total, unit)
        return f"recall: INTERRUPTED  {ran} ran; no verdict (score so far {report.score:.3f})"
    verdict = "PASSED" if report.passed else "FAILED"
    return (
        f"recall: {verdict}  score {report.score:.3f}  (threshold {report.threshold})  "
        f"{report.n_passed}/{counted(n_total, unit)} passed"
        + (f", {counted(int(report.n_errors), 'error')}" if report.n_errors else "")
        + (
            f", {counted(int(report.n_collection_errors), 'case')} failed to collect"
            if report.n_collection_errors
            else ""
        )
        + _stopped_words(report.stop)
    )


def _stopped_words(stop: Any) -> str:
    """``--recall-stop=decided`` that stopped early, on the verdict line itself: ``-q`` keeps only that line,
    and a score over 486 of 600 cases must not read as one over all 600."""
    if not isinstance(stop, Mapping) or stop.get("decided_after") is None:
        return ""
    return f"; decided after {stop['decided_after']} of {stop['n_cases']} cases, {stop['n_not_run']} not run"


def error_lines(summaries: Sequence[CaseSummary]) -> list[str]:
    """Each distinct reason cases could not run, once, with how many it stopped.

    An agent that cannot start fails the same way in every case; one line
    says so better than a screenful of copies.
    """
    counts: dict[str, int] = {}
    for summary in summaries:
        if summary.error:
            counts[summary.error] = counts.get(summary.error, 0) + 1
    return [
        f"  {counted(count, 'case')} {_what_stopped(reason)}: {reason}"
        for reason, count in sorted(counts.items(), key=lambda item: -item[1])
    ]


def _what_stopped(reason: str) -> str:
    """A judge error comes after the agent ran, so its case did run: only its score is missing."""
    return "ran but got no score" if reason.startswith(JUDGE_ERROR_PREFIX) else "could not run"


def _interval_brackets(interval: Mapping[str, Any] | None) -> str:
    return f"[{interval['low']:.3f}, {interval['high']:.3f}]" if interval else ""


def rate_limit_lines(report: RunReport) -> list[str]:
    """The model's rate limits: the refusals and the time paused, and the cases the retry budget did not see
    through, which score 0 but must never read as forgetting; none without a refusal."""
    limits = report.rate_limits
    if not limits:
        return []
    # With a budget of one attempt (--recall-rate-limit-attempts=1) no refused case runs again.
    again = ", and those cases ran again from step 1" if limits.get("attempts", 2) > 1 else ""
    # A report from before the run's pause budget has none.
    bound = f" (bound {limits['pause_budget_s']:.0f}s)" if limits.get("pause_budget_s") else ""
    lines = [
        f"rate limits: the model refused {counted(int(limits['n_refused']), 'session')}; new sessions on "
        f"this host were paused {limits['paused_s']:.1f}s in all{bound}{again}"
    ]
    if limits.get("budget_spent"):
        lines.append("the run's pause budget was spent: cases refused after it ended rate limited at once")
    if limits.get("n_rate_limited"):
        lines.append(
            f"{counted(int(limits['n_rate_limited']), 'case')} rate limited past the retry budget "
            f"({counted(int(limits['attempts']), 'attempt')}): scored 0, not forgetting"
        )
    return lines


def stop_line(report: RunReport, *, as_percent: bool = False) -> str | None:
    """``--recall-stop=decided``: when the gate was decided, on how many cases, and how sure; None without it.

    ``as_percent`` writes the estimate and interval as the HTML page writes every other score, so one page
    does not say ``64.6% – 100.0%`` beside ``[0.532, 1.000]``."""
    stop = report.stop
    if not stop:
        return None
    low, high = stop["interval"]
    level = round(100 * (1 - stop["alpha"]))
    both_sides = round(100 * stop.get("interval_level", 1 - 2 * stop["alpha"]))
    if as_percent:
        estimate = "-" if stop["estimate"] is None else f"{100 * stop['estimate']:.1f}%"
        interval = f"{100 * low:.1f}% – {100 * high:.1f}%"
    else:
        estimate = "-" if stop["estimate"] is None else f"{stop['estimate']:.3f}"
        interval = f"[{low:.3f}, {high:.3f}]"
    sure = f"estimate {estimate}, {both_sides}% anytime-valid interval {interval}"
    lift = _lift_words(stop.get("lift"), level)
    if stop["decided_after"] is None:
        return f"not decided early: all {stop['n_cases']} cases ran ({sure}){lift}"
    side = "at or above" if stop["decision"] == "above" else "below"
    return (
        f"decided after {stop['decided_after']} of {stop['n_cases']} cases: score {side} the threshold at "
        f"{level}% ({sure}); {counted(int(stop['n_not_run']), 'case')} not run{lift}"
    )


def _lift_words(lift: Mapping[str, Any] | None, level: int) -> str:
    """With a control: where the always-valid test of the lift's sign stands, appended to the stop line."""
    if not lift:
        return ""
    if lift["decided_after"] is None:
        return f"; lift undecided after {lift['n_fed']} of {lift['n_pairs']} pairs"
    side = "better" if lift["decision"] == "positive" else "worse"
    return (
        f"; lift decided after {lift['decided_after']} of {lift['n_pairs']} pairs: memory {side} than its "
        f"control at {level}% (mean difference {lift['estimate']:+.3f} over {lift['n_fed']} pairs)"
    )


def _epochs_line(report: RunReport, epochs: int) -> str:
    """pass@k and pass^k, and over which cases: those scored in every epoch, not those run fewer times."""
    line = (
        f"  epochs {epochs}: pass@{epochs} {report.pass_at_k:.3f} (solved in any epoch), "
        f"pass^{epochs} {report.pass_all_k:.3f} (solved in every epoch)"
    )
    runs = [case.get("k") for case in report.per_case or ()]
    fewer = sum(1 for k in runs if k != epochs)
    if fewer:
        settled = ((report.protocol or {}).get("run") or {}).get("epochs_from") or {}
        line += f" of the {counted(len(runs) - fewer, 'case')} scored {epochs} times; {fewer} ran fewer"
        if settled.get("settled"):
            line += f" ({settled['settled']} settled by --recall-epochs-from)"
    return line


def _epochs_from(report: RunReport, summaries: Sequence[CaseSummary]) -> tuple[int, int, int] | None:
    """With ``--recall-epochs-from``: how many cases the baseline settled, this run's cases that ran once
    because it settled them, and this run's cases."""
    chosen = ((report.protocol or {}).get("run") or {}).get("epochs_from")
    if not isinstance(chosen, Mapping):
        return None
    runs: dict[tuple[object, object], int] = {}
    for summary in summaries:
        if not summary.control:
            runs[(summary.suite, summary.id)] = runs.get((summary.suite, summary.id), 0) + 1
    once = sum(1 for count in runs.values() if count == 1)
    return int(chosen.get("settled") or 0), once, len(runs)


def epochs_from_line(report: RunReport, summaries: Sequence[CaseSummary]) -> list[str]:
    """How many cases ran once because the baseline settled them, so pass@k is not read as k runs of each."""
    given = _epochs_from(report, summaries)
    if given is None or given[1] == 0:
        return []
    settled, once, total = given
    return [f"  epochs from a baseline: {once} of {counted(total, 'case')} ran once, settled by it ({settled} settled)"]


def epochs_from_warning(report: RunReport, summaries: Sequence[CaseSummary]) -> list[str]:
    """A baseline that settled none of this run's cases (another suite's report) chose nothing: said, even
    under ``-q``."""
    given = _epochs_from(report, summaries)
    if given is None or given[1] or not given[2]:
        return []
    return [
        f"  WARNING: --recall-epochs-from: the baseline settled {counted(given[0], 'case')}, none of them in this "
        "run (a report of another suite?): every case ran every epoch"
    ]


def _trust_lines(report: RunReport) -> list[str]:
    """The interval, the repeat figures and the control, when the report has them (old ones may not)."""
    lines = []
    interval = report.confidence
    if interval:
        lines.append(
            f"  {round(100 * interval['level'])}% interval {_interval_brackets(interval)} "
            f"({interval['method']}, {counted(int(interval['n']), 'case')})"
        )
    epochs = report.epochs or 1
    if epochs > 1 and report.pass_at_k is not None:
        lines.append(_epochs_line(report, epochs))
    control = report.control
    if control:
        score = control.get("score")
        line = f"  control (no memory): score {'-' if score is None else f'{score:.3f}'}"
        if control.get("lift") is not None:
            low, high = control["lift_low"], control["lift_high"]
            line += f"; memory lift {control['lift']:+.3f} [{low:+.3f}, {high:+.3f}]"
            if control.get("lift_significant"):
                line += f", p {control['lift_test']['p_value']:.3f}"
            elif low <= 0 <= high:
                line += "  NOT SIGNIFICANT: the interval includes 0"
            else:
                line += f"  NOT SIGNIFICANT: p {control['lift_test']['p_value']:.3f}"
        lines.append(line + left_out_text(control))
        runs = counted(int(control["n"]), "control run") if control.get("n") else "the control runs"
        lines.append(f"  pytest's passed count includes {runs}, which pass whatever they score: see the line above")
        lines += help_harm_lines(report)
    return lines


def _memory_source(report: RunReport) -> str:
    """Who counted the memory calls: the MCP tap on a --recall-mcp run, else the agent itself ($RECALL_MEMORY_LOG)."""
    run = (report.protocol or {}).get("run")
    if isinstance(run, Mapping) and "mcp_servers" in run and not run["mcp_servers"]:
        return "the agent's own log"
    return "MCP tap"


def memory_lines(report: RunReport) -> list[str]:
    """What the MCP tap, or the agent's own log of its memory calls (recall-provider's), saw: whether the memory
    was used, retrieval against reasoning, and what the memory's calls took."""
    memory = report.memory
    if not isinstance(memory, Mapping):
        return []
    cases, unused = memory["cases"], memory["unused"]
    line = f"  memory ({_memory_source(report)}): {cases - unused} of {counted(cases, 'case')} used it "
    line += "(a write before the last step or a read in it)"
    if unused and memory.get("score_used") is not None and memory.get("score_all") is not None:
        line += f"; score {memory['score_all']:.3f} with the {unused} unused, {memory['score_used']:.3f} without"
    lines = [line]
    if memory.get("untapped_servers"):
        names = ", ".join(repr(server) for server in memory["untapped_servers"])
        lines.append(
            f"  memory use UNKNOWN for server(s) {names} in {counted(memory.get('untapped_cases', 0), 'case')}: "
            "reached by URL, which the tap does not see (it covers stdio servers); those cases are not counted unused"
        )
    if memory.get("control_calls"):
        lines.append(f"  the no-memory control made {counted(memory['control_calls'], 'memory call')}; see docs/mcp.md")
    table = memory.get("retrieval_table")
    if isinstance(table, Mapping):
        lines.append(
            f"  evidence recall {memory['evidence_recall']:.3f}: retrieved and right {table['retrieved_right']}, "
            f"retrieved but wrong (reasoning) {table['retrieved_wrong']}, not retrieved but right "
            f"{table['missed_right']}, not retrieved and wrong (retrieval) {table['missed_wrong']}"
        )
    if memory.get("returned_tokens_median") is not None:
        median = memory["returned_tokens_median"]
        lines.append(f"  returned to the question: median {median:g} tokens (the last step's reads)")
    for server, figures in (memory.get("latency_ms") or {}).items():
        if figures.get("calls"):
            calls = counted(figures["calls"], "call")
            lines.append(f"  {server}: {calls}, p50 {figures['p50']:.1f} ms, p95 {figures['p95']:.1f} ms")
    return lines


def help_harm_lines(report: RunReport) -> list[str]:
    """How many cases memory helped and harmed, and the harmed ones by name: harm is never averaged away."""
    effect = report.help_harm
    if not effect:
        return []
    helped, harmed = effect.get("helped") or [], effect.get("harmed") or []
    lines = [
        f"  memory helped {counted(len(helped), 'case')} (control failed, memory passed), "
        f"harmed {counted(len(harmed), 'case')} (control passed, memory failed); "
        f"exact McNemar p {_p_text(effect['p_value'])}{left_out_text(effect)}"
    ]
    for category, entry in sorted((effect.get("by_category") or {}).items()):
        if entry.get("harmed"):
            lines.append(f"  harmed in {category}: {', '.join(entry['harmed'])}")
    return lines


def _p_text(p_value: float) -> str:
    return "< 0.001" if p_value < 0.001 else f"{p_value:.3f}"
