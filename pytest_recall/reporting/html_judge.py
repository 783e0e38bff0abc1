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

HINT = (
    "Where both the built-in judge and the judge command (--recall-judge-cmd) scored an answer: how often they "
    "agree, and Cohen's kappa, the share of that agreement chance would not give (1 perfect, 0 chance). "
    "Every disagreement is listed: a judge that passes what the built-in judge fails may be lenient."
)

# A disagreement's two verdicts, in the order the table shows them.
SIDES = ("deterministic", "llm")


def judge_html_section(report: Mapping[str, Any]) -> Markup:
    """The section, or nothing for a run without a judge command."""
    section = report.get("llm_judge")
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


def _word(passed: Any) -> str:
    return "pass" if passed else "fail"


def _table(head: Sequence[str], rows: Sequence[Markup], *, table_id: str = "") -> Markup:
    opening = Markup('<table id="{}">').format(table_id) if table_id else Markup("<table>")
    return Markup("{}<thead>{}</thead><tbody>{}</tbody></table>").format(
        opening, _row("th", head), Markup("").join(rows)
    )
