"""The HTML page's LLM judge section: agreement with the built-in judge, per kind, and every disagreement.

Drawn from the report's ``llm_judge`` section alone (see
:mod:`pytest_recall.reporting.judge_section`), so a merged report's page
shows the same figures. Case names come from records, which an agent's run
does not choose, but they are escaped like everything else on the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from pytest_recall.reporting.html_text import clean
from pytest_recall.reporting.html_text import table_row as _row
from pytest_recall.reporting.judge_section import agreement_text
from pytest_recall.reporting.run_report import RunReport

HINT = (
    "Where both the built-in judge and the judge command (--recall-judge-cmd) scored an answer: how often they "
    "agree, and Cohen's kappa, the share of that agreement chance would not give (1 perfect, 0 chance). "
    "Every disagreement is listed: a judge that passes what the built-in judge fails may be lenient."
)

# A disagreement's two verdicts, in the order the table shows them.
SIDES = ("deterministic", "llm")


def judge_html_section(report: RunReport) -> Markup:
    """The section, or nothing for a run without a judge command."""
    section = report.llm_judge
    if not isinstance(section, Mapping):
        return Markup("")
    agreement = section.get("agreement") or {}
    cost = section.get("cost_usd")
    lead = (
        f"{section.get('n_judged', 0)} answers judged ({section.get('n_cached', 0)} from the run's cache), "
        f"{section.get('n_errors', 0)} judge errors (not agent failures), "
        f"judge cost {'not reported' if cost is None else f'${cost:.4f}'}. "
    )
    lead += f"Agreement: {agreement_text(agreement)}." if agreement.get("n") else "No answer was scored both ways."
    kinds = [
        _row("td", [clean(kind), agreement_text(entry)]) for kind, entry in (agreement.get("by_kind") or {}).items()
    ]
    parts = [Markup('<p id="judge-agreement">{}</p>').format(lead)]
    if kinds:
        parts.append(_table(["kind", "agreement"], kinds))
    disagreements = agreement.get("disagreements") or []
    rows = [
        _row(
            "td",
            [
                clean(entry.get("case")),
                clean(entry.get("kind")),
                _word(entry.get("deterministic")),
                _word(entry.get("llm")),
            ],
        )
        for entry in disagreements
        if isinstance(entry, Mapping)
    ]
    if rows:
        parts.append(Markup("<h3>Disagreements ({})</h3>").format(len(rows)))
        parts.append(_table(["case", "kind", "built-in judge", "LLM judge"], rows, table_id="judge-disagreements"))
    return Markup('<section>\n<h2>LLM judge</h2>\n<p class="hint">{}</p>\n{}\n</section>').format(
        HINT, Markup("\n").join(parts)
    )


JUDGES_HINT = (
    "Several judge commands judged the same answers: each one's score with its 95% interval, the built-in "
    "judge's beside them, how often each pair agrees (Cohen's kappa), the spread, and every answer whose "
    "verdict flips between judges: there the score is the judge's choice, not the agent's."
)


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def judges_html_section(report: RunReport) -> Markup:
    """The judges table of a run with several judges (the report's ``judges`` block), or nothing."""
    block = report.judges
    if not isinstance(block, Mapping):
        return Markup("")
    table = block["table"]
    rows = [
        _row("td", [clean(name), str(row["n"]), str(row["errors"]), _cell(row["score"]), _interval(row["interval"])])
        for name, row in [*table["judges"].items(), ("(built-in)", table["deterministic"])]
    ]
    lead = Markup("Score by judge {}; spread {}; Fleiss' kappa {}.").format(
        block.get("score_by"), _cell(table.get("spread")), _cell(table.get("fleiss_kappa"))
    )
    pairs = [
        _row("td", [clean(" vs ".join(pair["judges"])), str(pair["n"]), _cell(pair["rate"]), _cell(pair["kappa"])])
        for pair in table["pairs"]
    ]
    flips = [
        _row("td", [clean(flip["case"]), clean(flip["kind"]), clean(_said(flip["verdicts"]))])
        for flip in table["flips"]
    ]
    parts = [
        Markup('<p id="judges-lead">{}</p>').format(lead),
        _table(["judge", "n", "errors", "score", "95% interval"], rows, table_id="judges"),
        _table(["pair", "n", "agreement", "Cohen's kappa"], pairs),
    ]
    if flips:
        parts.append(Markup("<h3>Flips between judges ({})</h3>").format(len(flips)))
        parts.append(_table(["case", "kind", "verdicts"], flips, table_id="judge-flips"))
    return Markup('<section>\n<h2>Judges</h2>\n<p class="hint">{}</p>\n{}\n</section>').format(
        JUDGES_HINT, Markup("\n").join(parts)
    )


def _interval(bounds: Sequence[float]) -> str:
    return f"[{bounds[0]:.2f}, {bounds[1]:.2f}]"


def _said(verdicts: Mapping[str, bool]) -> str:
    return ", ".join(f"{judge} {_word(passed)}" for judge, passed in verdicts.items())


def _word(passed: Any) -> str:
    return "pass" if passed else "fail"


def _table(head: Sequence[str], rows: Sequence[Markup], *, table_id: str = "") -> Markup:
    opening = Markup('<table id="{}">').format(table_id) if table_id else Markup("<table>")
    return Markup("{}<thead>{}</thead><tbody>{}</tbody></table>").format(
        opening, _row("th", head), Markup("").join(rows)
    )
