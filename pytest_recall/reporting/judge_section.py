"""The LLM judge in records and reports: each case's verdict, and the run's agreement with the built-in judge.

A record's ``llm_judge`` says what the judge command (``--recall-judge-cmd``)
said of the case's last answer, what that cost, and the built-in judge's
score beside it. The report's ``llm_judge`` section counts the verdicts, the
judge errors (apart from the agent's failures), the judge's own cost and
tokens, and, for every answer both judges scored, the agreement rate and
Cohen's kappa overall and per kind, with the disagreements listed. The
terminal summary, the HTML page, JUnit and ``compare`` read that section.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pytest_recall.cases import LlmJudgement
from pytest_recall.reporting.judges_block import judges_table_lines
from pytest_recall.reporting.run_report import RunReport
from pytest_recall.reporting.wording import counted
from pytest_recall.scoring import CaseSummary, Verdict, agreement_report, judged_twice_from, scored_a_pass

# The terminal names this many disagreements; the report and the page list them all.
SHOWN_DISAGREEMENTS = 5


def llm_judge_field(judgement: LlmJudgement | None, verdict: Verdict) -> dict[str, Any] | None:
    """A record's ``llm_judge``: the judge command's verdict, the built-in score beside it, and the judge's cost;
    and the hash of its prompt when the judge gave one (``recall-judge`` does; a judge of the user's may not)."""
    if judgement is None:
        return None
    # Where the judge command decided, the built-in score waits in the details (see scoring/llm_verdict.py).
    deterministic = verdict.details.get("deterministic_score") if judgement.decides else verdict.score
    return (
        {
            "score": judgement.score,
            "passed": None if judgement.score is None else scored_a_pass(judgement.score),
            "reason": judgement.reason,
            "error": judgement.error,
            "decides": judgement.decides,
            "deterministic_score": deterministic,
            "cost_usd": judgement.cost_usd,
            "tokens_in": judgement.tokens_in,
            "tokens_out": judgement.tokens_out,
            "attempts": judgement.attempts,
            "cached": judgement.cached,
            "duration_s": judgement.duration_s,
        }
        | ({"prompt_sha256": judgement.prompt_sha256} if judgement.prompt_sha256 else {})
        | _sampled(judgement)
    )


def _sampled(judgement: LlmJudgement) -> dict[str, Any]:
    """With --recall-judge-samples: each sample's score and whether they disagree."""
    return {"samples": list(judgement.samples), "flipped": judgement.flipped} if judgement.samples else {}


# What a record keeps of a judge beside the scoring one: its verdict and cost; the built-in score is in llm_judge.
OTHER_JUDGE_FIELDS = ("score", "passed", "reason", "error", "cost_usd", "tokens_in", "tokens_out", "attempts", "cached")


def other_judges_field(others: Iterable[tuple[str, LlmJudgement]], verdict: Verdict) -> dict[str, Any] | None:
    """A record's ``llm_judges``: each other judge's verdict by name; None with one judge."""
    kept = {}
    for name, judgement in others:
        field = llm_judge_field(judgement, verdict) or {}
        kept[name] = {key: field[key] for key in OTHER_JUDGE_FIELDS} | _sampled(judgement)
    return kept or None


# What the report's aggregates read of a record's llm_judge; its reason stays in the full record.
SUMMARY_FIELDS = (
    "score",
    "error",
    "decides",
    "deterministic_score",
    "cost_usd",
    "tokens_in",
    "tokens_out",
    "cached",
    "prompt_sha256",
)


def llm_judge_summary(value: Any) -> dict[str, Any] | None:
    """The few scalars of a record's ``llm_judge`` that the report section needs."""
    if not isinstance(value, Mapping):
        return None
    return {name: value.get(name) for name in SUMMARY_FIELDS}


def judge_section(summaries: Iterable[CaseSummary]) -> dict[str, Any]:
    """The report's ``llm_judge`` section, or nothing for a run without a judge command."""
    listed = list(summaries)
    judged = [summary.llm_judge for summary in listed if isinstance(summary.llm_judge, Mapping)]
    if not judged:
        return {}
    errors = [verdict for verdict in judged if verdict.get("score") is None]
    first_error = next(
        (
            f"{summary.nodeid}: {verdict['error']}"
            for summary in listed
            if (verdict := summary.llm_judge) and verdict.get("error")
        ),
        None,
    )
    costs = [verdict["cost_usd"] for verdict in judged if isinstance(verdict.get("cost_usd"), (int, float))]
    return {
        "llm_judge": {
            "n_judged": len(judged),
            "n_errors": len(errors),
            "n_cached": sum(1 for verdict in judged if verdict.get("cached")),
            "n_decided": sum(1 for verdict in judged if verdict.get("decides")),
            "cost_usd": round(sum(costs), 6) if costs else None,
            "tokens_in": _total(verdict.get("tokens_in") for verdict in judged),
            "tokens_out": _total(verdict.get("tokens_out") for verdict in judged),
            "agreement": agreement_report(judged_twice_from(listed)),
            "prompts_sha256": prompts_sha256(judged),
            **({"first_error": first_error} if first_error else {}),
        }
    }


def prompts_sha256(judged: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every prompt the judge said its verdicts were given under, once each: one for a prompt file,
    one per kind of question for the built-in prompts."""
    return sorted({str(value) for verdict in judged if (value := verdict.get("prompt_sha256"))})


def _total(values: Iterable[Any]) -> int | None:
    known = [value for value in values if isinstance(value, int) and not isinstance(value, bool)]
    return sum(known) if known else None


# Said when judges were given but no answer of the run was put to them: exact answers go to the built-in judge.
NOTHING_JUDGED = (
    "LLM judge: these cases are judged by the built-in judge, none by {who}; "
    "add --recall-judge-both to put them to {who} too"
)


def nothing_judged(panel: bool) -> str:
    """The line that says judges were given and no case of the run goes to them (start-up and summary alike)."""
    return NOTHING_JUDGED.format(who="the judges" if panel else "the judge")


def judge_summary_lines(report: RunReport) -> list[str]:
    """The judge at a glance: verdicts, errors, cost, agreement with kappa, per kind, and the disagreements."""
    section = report.llm_judge
    given = (report.run_mode or {}).get("llm_judge")
    if not isinstance(section, Mapping):
        if isinstance(given, Mapping) and not given.get("both"):
            return ["  " + nothing_judged(bool(given.get("judges")))]
        return []
    cost = section.get("cost_usd")
    tokens = section.get("tokens_in"), section.get("tokens_out")
    spent = "cost not reported" if cost is None else f"cost ${cost:.4f}"
    if tokens != (None, None):
        spent += f", tokens {tokens[0] or 0} in / {tokens[1] or 0} out"
    lines = [
        f"  LLM judge: {counted(section['n_judged'], 'answer')} judged ({section['n_cached']} cached), "
        f"{counted(section['n_errors'], 'judge error')} (not agent failures); {spent}"
    ]
    if section.get("first_error"):
        lines.append(f"    first judge error: {section['first_error']}")
    agreement = section.get("agreement") or {}
    if agreement.get("n"):
        scoring = given.get("score_by") if isinstance(given, Mapping) else None
        who = f"the scoring judge ({scoring})" if scoring else "the LLM judge"
        lines.append(f"  {who} and the built-in judge agree on {agreement_text(agreement)}")
        kinds = agreement.get("by_kind") or {}
        if len(kinds) > 1:
            lines.append("    " + "; ".join(f"{kind} {agreement_text(entry)}" for kind, entry in kinds.items()))
        disagreements = agreement.get("disagreements") or []
        for entry in disagreements[:SHOWN_DISAGREEMENTS]:
            lines.append(f"    disagree: {disagreement_text(entry)}")
        if len(disagreements) > SHOWN_DISAGREEMENTS:
            lines.append(f"    ... and {len(disagreements) - SHOWN_DISAGREEMENTS} more (see the report)")
    return lines


def agreement_text(entry: Mapping[str, Any]) -> str:
    """``7/8 answers (0.875), kappa 0.600``; a kappa with no meaning (both judges constant) says so."""
    kappa = entry.get("kappa")
    kappa_text = "kappa undefined (a judge gave one verdict only)" if kappa is None else f"kappa {kappa:.3f}"
    return f"{entry['agreed']}/{entry['n']} answers ({entry['rate']:.3f}), {kappa_text}"


def disagreement_text(entry: Mapping[str, Any]) -> str:
    """``suite/case_03 (money): built-in judge fail, LLM judge pass``."""
    return (
        f"{entry['case']} ({entry['kind']}): built-in judge {_word(entry['deterministic'])}, "
        f"LLM judge {_word(entry['llm'])}"
    )


def _word(passed: Any) -> str:
    return "pass" if passed else "fail"


def judge_run_properties(report: RunReport) -> list[tuple[str, object]]:
    """The judge's run-level figures for the JUnit ``<testsuite>``: agreement, kappa, errors."""
    section = report.llm_judge
    if not isinstance(section, Mapping):
        return []
    agreement = section.get("agreement") or {}
    return [
        ("recall_llm_judge_n_judged", section.get("n_judged")),
        ("recall_llm_judge_n_errors", section.get("n_errors")),
        ("recall_llm_judge_agreement", agreement.get("rate")),
        ("recall_llm_judge_kappa", agreement.get("kappa")),
        ("recall_llm_judge_n_disagreements", len(agreement.get("disagreements") or []) if agreement else None),
        *_judges_run_properties(report.judges),
    ]


def _judges_run_properties(block: object) -> list[tuple[str, object]]:
    """With several judges: which one scores, their spread and flips, and each judge's score."""
    if not isinstance(block, Mapping):
        return []
    table = block["table"]
    return [
        ("recall_judges_score_by", block.get("score_by")),
        ("recall_judges_spread", table.get("spread")),
        ("recall_judges_n_flips", len(table.get("flips") or [])),
        *((f"recall_judge_{name}_score", row.get("score")) for name, row in table["judges"].items()),
    ]


# A judged case's JUnit properties, from its record's llm_judge.
JUNIT_JUDGE_FIELDS = ("score", "passed", "error")
JUNIT_JUDGE_PROPERTIES = tuple(f"recall_llm_judge_{name}" for name in JUNIT_JUDGE_FIELDS)


def judge_case_properties(verdict: object, others: object = None) -> list[tuple[str, object]]:
    """A case's judge verdict (its record's ``llm_judge``) for its JUnit testcase: score, pass, and the
    judge error when there was one; with several judges, each other judge's score by its name too."""
    if not isinstance(verdict, Mapping):
        return []
    given = [(name, verdict.get(field)) for name, field in zip(JUNIT_JUDGE_PROPERTIES, JUNIT_JUDGE_FIELDS, strict=True)]
    if isinstance(others, Mapping):
        given += [(f"recall_judge_{name}_score", other.get("score")) for name, other in others.items()]
    return given


def judge_comparison(base: RunReport, new: RunReport) -> dict[str, Any]:
    """For ``compare``: each report's LLM judge figures, judges table and scoring judge side by side, when
    either run had a judge command; ``scoring_judges.differ`` when their scores come from different judges."""
    reports = {"base": base, "new": new}
    if not any(isinstance(report.llm_judge, Mapping) for report in reports.values()):
        return {}
    scoring = {name: scoring_judge(report) for name, report in reports.items()}
    return {
        "llm_judge": {
            name: {
                "n_judged": section.get("n_judged"),
                "n_errors": section.get("n_errors"),
                **{key: (section.get("agreement") or {}).get(key) for key in ("n", "agreed", "rate", "kappa")},
            }
            if isinstance(section := report.llm_judge, Mapping)
            else None
            for name, report in reports.items()
        },
        "judges": {
            name: report.judges if isinstance(report.judges, Mapping) else None for name, report in reports.items()
        },
        "scoring_judges": {**scoring, "differ": _identity(scoring["base"]) != _identity(scoring["new"])},
    }


def scoring_judge(report: RunReport) -> dict[str, Any] | None:
    """The judge command whose verdicts are scores in this run: its name, command and the hashes of the files
    it names (its prompt), from the protocol block (a report from before it, from its run mode); None when the
    built-in judge decided every score (no judge command, or one that only judged beside it)."""
    section = report.llm_judge
    if not isinstance(section, Mapping) or not section.get("n_decided"):
        return None
    pinned = ((report.protocol or {}).get("judges") or {}).get("llm_judge") or {}
    mode = (report.run_mode or {}).get("llm_judge") or {}
    return {
        "name": mode.get("score_by") or pinned.get("score_by"),
        "command": pinned.get("command") or mode.get("cmd"),
        "files_sha256": pinned.get("files_sha256"),
    }


def _identity(judge: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    """What makes two scoring judges one: the command and its files; a judge renamed is the same judge."""
    return None if judge is None else (judge.get("command"), judge.get("files_sha256"))


def judge_comparison_lines(result: Mapping[str, Any]) -> list[str]:
    """The judges' agreement in each report on one line, each run's judges table as its summary shows it, and
    one line when the two runs' scores come from different judges: a judge that drifted shows beside the
    score's change."""
    sides = result.get("llm_judge")
    if not isinstance(sides, Mapping):
        return []
    said = []
    for name in ("base", "new"):
        side = sides.get(name)
        if not isinstance(side, Mapping):
            said.append(f"{name}: no judge command")
        elif side.get("n"):
            said.append(f"{name}: {agreement_text(side)}, {side.get('n_errors')} judge errors")
        else:
            said.append(f"{name}: {side.get('n_judged')} judged, none scored both ways")
    lines = [f"LLM judge agreement with the built-in judge: {'; '.join(said)}"]
    for name, block in (result.get("judges") or {}).items():
        if isinstance(block, Mapping):
            heading, *rows = judges_table_lines(block)
            lines += [f"Judges of {name}: {heading}", *rows]
    return lines + scoring_judges_lines(result)


def scoring_judges_lines(result: Mapping[str, Any]) -> list[str]:
    """One line naming each run's scoring judge when they differ; nothing when one judge scored both."""
    scoring = result.get("scoring_judges")
    if not isinstance(scoring, Mapping) or not scoring.get("differ"):
        return []
    base, new = scoring.get("base"), scoring.get("new")
    # Judges are told apart by name; two of one name (or none) by their commands, whose ends differ.
    by_name = bool(base and new and base.get("name") and new.get("name") and base["name"] != new["name"])
    shown = f"base by {_judge_text(base, by_name)}, new by {_judge_text(new, by_name)}"
    if base and new and base.get("command") == new.get("command"):
        shown += " (one command, other files: see the protocol lines)"
    return [f"Scoring judges differ: {shown}; a change in score may be the judge's"]


def _judge_text(judge: Mapping[str, Any] | None, by_name: bool) -> str:
    if judge is None:
        return "the built-in judge"
    named = f"judge {judge['name']}" if judge.get("name") else "the judge command"
    if by_name:
        return named
    command = str(judge.get("command"))
    return f"{named} ({command if len(command) <= 60 else '...' + command[-57:]})"
