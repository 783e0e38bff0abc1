"""Did the agent get better or worse between two runs, or did the dice roll differently?

Two reports are compared case by case: a case's score in the new run is
paired with its own score in the base run, which removes the case-to-case
difficulty from the comparison and is far more sensitive than comparing two
overall scores. Pure functions; the ``pytest-recall compare`` command wires
them to files and exit codes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_recall.reporting.judge_section import judge_comparison, judge_comparison_lines
from pytest_recall.reporting.protocol import difference_lines, differs_in_data, protocol_differences
from pytest_recall.reporting.run_report import RunReport
from pytest_recall.reporting.spool import CaseSummary, summary_of_row
from pytest_recall.reporting.wording import counted
from pytest_recall.scoring import (
    BOOTSTRAP_SEED,
    CaseFold,
    PairedTest,
    case_draw_key,
    fold_cases,
    is_binary_single_epoch,
    lift_sign,
    pair_folds,
    paired_by_category,
)

# Long lists of unpaired cases help nobody in a terminal; the JSON keeps them all.
MAX_LISTED_CASES = 10
_METHOD_NAMES = {
    "mcnemar": "McNemar exact test",
    "sign-flip": "paired bootstrap, sign-flip p",
    "bootstrap": "paired bootstrap, sign-flip p",  # what reports before 0.2 called the sign-flip test
}


def compare_reports(
    base: RunReport, new: RunReport, *, alpha: float = 0.05, seed: int = BOOTSTRAP_SEED
) -> dict[str, Any]:
    """Pair cases by (suite, id) and test new − base, overall and per category.

    Control records are ignored and epochs fold to their mean first. Only the
    overall test decides ``regression``: per-category tests are reported but,
    being many tests at once, one of them will look significant by chance.
    """
    base_folds = fold_cases(_summaries(base))
    new_folds = fold_cases(_summaries(new))
    pairs = pair_folds(base_folds, new_folds)
    exact = is_binary_single_epoch([fold for pair in pairs for fold in pair])
    overall, per_category = paired_by_category(pairs, exact=exact, alpha=alpha, seed=seed)
    base_keys = {f.key for f in base_folds}
    new_keys = {f.key for f in new_folds}
    paired_keys = {n.key for _, n in pairs}
    return {
        # First, as the terminal shows it: a difference here can explain any delta below.
        "protocol_differences": protocol_differences(base.protocol, new.protocol),
        "alpha": alpha,
        "method": overall.method if overall else None,
        "n_paired": len(pairs),
        "epochs": {"base": _epochs(base_folds), "new": _epochs(new_folds)},
        "overall": _entry(overall) if overall else None,
        "by_category": {category: _entry(test) for category, test in per_category.items()},
        "regression": bool(overall and _is_regression(overall)),
        "improvement": bool(overall and overall.significant and overall.delta > 0),
        "only_in_base": _listing(base_keys - new_keys),
        "only_in_new": _listing(new_keys - base_keys),
        "unscored": _listing((base_keys & new_keys) - paired_keys),
        "changed": _listing(
            b.key for b, n in pairs if b.content_hash and n.content_hash and b.content_hash != n.content_hash
        ),
        "sequential": sequential_verdict(pairs, base, new, alpha=alpha),
        **judge_comparison(base, new),
    }


def sequential_verdict(
    pairs: Sequence[tuple[CaseFold, CaseFold]],
    base: RunReport,
    new: RunReport,
    *,
    alpha: float = 0.05,
) -> dict[str, Any] | None:
    """The always-valid test of the sign of new − base on the paired cases, beside the fixed-sample one.

    It is the one ``--recall-stop=decided`` runs against a control: valid at
    whatever pair it is read, so "decided after N of M pairs" says how few
    paired cases the answer needed. A report from a run that drew its cases
    (it has a ``stop`` block) gives the order they ran in, drawn again from
    its node ids; otherwise the pairs go in case-id order, which is only as
    random as the ids are.
    """
    if not pairs:
        return None
    drawn = next((report for report in (new, base) if report.stop), None)
    ordered = list(pairs)
    if drawn is not None:
        keys: dict[tuple[str, str], str] = {}
        for summary in _summaries(drawn):
            if not summary.control and summary.nodeid:
                key = (str(summary.suite), str(summary.id))
                keys[key] = case_draw_key(summary.nodeid)
        ordered.sort(key=lambda pair: keys.get(pair[1].key, "g"))  # "g" sorts after every hex key
    differences = [max(-1.0, min(1.0, (n.mean or 0.0) - (b.mean or 0.0))) for b, n in ordered]
    state = lift_sign(differences, len(differences), alpha)
    better = {"positive": "new", "negative": "base"}.get(state.decision or "")
    return {
        "order": "drawn" if drawn is not None else "case-id",
        "better": better,
        "decided_after": state.seen if better else None,
        "n_pairs": len(differences),
        "alpha": alpha,
    }


def nothing_to_compare(new: RunReport, result: Mapping[str, Any], *, new_name: str) -> str | None:
    """Why a comparison says nothing (the new run scored no case, or no case is scored in both), or None.

    A gate that passes on such a comparison would pass a run that never ran.
    """
    scored = [r for r in _summaries(new) if not r.control and r.score is not None]
    if not scored:
        return f"{new_name} scored no case (every case errored, or none ran); nothing to compare"
    if not result.get("n_paired"):
        return "no case is scored in both reports; nothing to compare (are they runs of the same suite?)"
    return None


def refused_verdict(result: Mapping[str, Any], *, base_name: str, new_name: str) -> tuple[list[str], str] | None:
    """Why no verdict is given without ``--allow-protocol-diff``, as the lines to show and the one-line reason:
    the two runs measured different data, or their scores come from different judges; None when neither.

    A change of data set or of scoring judge moves the score by itself, so a delta across one is no evidence
    about the agent.
    """
    protocol = protocol_lines(result.get("protocol_differences") or [])
    if differs_in_data(result.get("protocol_differences") or []):
        return protocol, (
            f"{base_name} and {new_name} measured different data (see above): no verdict across data sets; "
            "compare runs of the same import, or pass --allow-protocol-diff"
        )
    if (result.get("scoring_judges") or {}).get("differ"):
        return [*protocol, *judge_comparison_lines(result)], (
            f"{base_name} and {new_name} were scored by different judges (see above): no verdict across scoring "
            "judges; compare runs scored by the same judge, or pass --allow-protocol-diff"
        )
    return None


def _summaries(report: RunReport) -> list[CaseSummary]:
    """Each case as its summary: a report read by ``summarized_report`` has them; one read whole, its rows."""
    cases = report.cases
    if not isinstance(cases, list):
        return []
    return [
        summary_of_row(case) if isinstance(case, Mapping) else case
        for case in cases
        if isinstance(case, (CaseSummary, Mapping))
    ]


def _epochs(folds: Sequence[CaseFold]) -> int:
    return max((f.n_records for f in folds), default=0)


def _is_regression(test: PairedTest) -> bool:
    return test.significant and test.delta < 0


def _entry(test: PairedTest) -> dict[str, Any]:
    return {**test.as_dict(), "regression": _is_regression(test)}


def _listing(keys: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"suite": suite, "id": case_id} for suite, case_id in sorted(keys)]


def protocol_lines(differences: Sequence[Mapping[str, Any]]) -> list[str]:
    """The protocol differences, field by field, said before any significance; nothing when the protocols match."""
    if not differences:
        return []
    return [
        f"Protocol differs in {len(differences)} field(s): the two numbers were not measured the same way",
        *difference_lines(differences),
    ]


def format_comparison(result: Mapping[str, Any]) -> str:
    """The protocol differences, then a compact table: one line per category, unpaired cases and the verdict."""
    overall = result.get("overall")
    protocol = protocol_lines(result.get("protocol_differences") or [])
    if not overall:
        return "\n".join(
            [
                *protocol,
                "pytest-recall compare: no case was scored in both reports; nothing to compare.",
                *_unpaired_lines(result),
            ]
        )
    level = round(100 * (1 - float(result.get("alpha", 0.05))))
    rows = [("overall", overall), *sorted(dict(result.get("by_category") or {}).items())]
    width = min(30, max(len("category"), *(len(name) for name, _ in rows)))
    header = (
        f"{'category':<{width}}  {'n':>4}  {'base':>6}  {'new':>6}  {'delta':>7}  {'+/-':>7}  "
        f"{f'{level}% interval':>18}  {'p':>6}"
    )
    method = _METHOD_NAMES.get(str(result.get("method")), str(result.get("method")))
    lines = [
        *protocol,
        f"pytest-recall compare: new - base over {result.get('n_paired', 0)} paired cases "
        f"({method}, alpha {result.get('alpha')})",
        "delta and interval in percentage points; +/- counts cases that went up/down",
        header,
        *(_row(name, entry, width) for name, entry in rows),
        *_unpaired_lines(result),
        *judge_comparison_lines(result),
        *_sequential_lines(result.get("sequential")),
        *_too_few_lines(result),
        _verdict(result),
    ]
    return "\n".join(lines)


def _row(name: str, entry: Mapping[str, Any], width: int) -> str:
    label = name if len(name) <= width else name[: width - 3] + "..."
    interval = f"[{_points(entry['low'])}, {_points(entry['high'])}]"
    flips = f"{entry['improved']}/{entry['worsened']}"
    flag = "  REGRESSION" if entry.get("regression") else ("  improved" if entry.get("significant") else "")
    return (
        f"{label:<{width}}  {entry['n']:>4}  {_percent(entry['base']):>6}  {_percent(entry['new']):>6}  "
        f"{_points(entry['delta']):>7}  {flips:>7}  {interval:>18}  {entry['p_value']:>6.3f}{flag}"
    )


def _unpaired_lines(result: Mapping[str, Any]) -> list[str]:
    labels = (
        ("only_in_base", "Only in base"),
        ("only_in_new", "Only in new"),
        ("unscored", "Not scored in both (error or no gold)"),
        ("changed", "Case changed since base (content hash differs)"),
    )
    return [f"{label} ({len(cases)}): {_case_names(cases)}" for key, label in labels if (cases := result.get(key))]


def _case_names(cases: Sequence[Mapping[str, Any]]) -> str:
    names = [f"{c['suite']}/{c['id']}" for c in cases[:MAX_LISTED_CASES]]
    more = len(cases) - MAX_LISTED_CASES
    return ", ".join(names) + (f" ... and {more} more" if more > 0 else "")


def _verdict(result: Mapping[str, Any]) -> str:
    overall = result["overall"]
    evidence = f"{_points(overall['delta'])} points, p = {overall['p_value']:.3f}"
    if result.get("regression"):
        return f"Verdict: REGRESSION ({evidence})."
    if result.get("improvement"):
        return f"Verdict: improvement ({evidence})."
    return f"Verdict: no significant change ({evidence})."


def _too_few_lines(result: Mapping[str, Any]) -> list[str]:
    """Why a change that looks large is no verdict: how many cases a paired test needs moving one way.

    With every changed case moving the same way, both tests' two-sided p is ``2 / 2**k`` over ``k``
    changed cases, so none below ``log2(2 / alpha)`` of them can reach ``alpha``, whatever a category shows.
    """
    if result.get("regression") or result.get("improvement"):
        return []
    alpha = float(result.get("alpha", 0.05))
    needed = math.ceil(math.log2(2 / alpha))
    overall = result["overall"]
    paired = counted(int(result.get("n_paired", 0)), "paired case")
    return [
        f"No verdict from {paired}: at alpha {alpha:g} a paired test needs at least {needed} cases moving the "
        f"same way, and none the other, to call a change; {overall['worsened']} went down and "
        f"{overall['improved']} up, and a category's row is never the verdict"
    ]


def _sequential_lines(sequential: Mapping[str, Any] | None) -> list[str]:
    if not sequential:
        return []
    how = f"always-valid test, pairs in {sequential['order']} order"
    if sequential["better"] is None:
        return [f"Sequential: undecided after {sequential['n_pairs']} pairs ({how})."]
    worse = "base" if sequential["better"] == "new" else "new"
    return [
        f"Sequential: {sequential['better']} better than {worse}, decided after {sequential['decided_after']} "
        f"of {sequential['n_pairs']} pairs ({how})."
    ]


def _percent(score: float) -> str:
    return f"{100 * score:.1f}%"


def _points(delta: float) -> str:
    """Score differences in percentage points, always signed so direction reads at a glance."""
    return f"{100 * delta:+.1f}"
