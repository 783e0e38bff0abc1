"""The page's per-case summary tables: the epochs table and the helped and harmed lists, as data.

Both grow with the run: the epochs table has a row per case, and the helped
and harmed lists may name every case. Drawn as markup, 100,000 of them would
make the page a browser chokes on, so each section carries a skeleton and
its rows as a JSON data block (``html_cases.data_block``), and the page's
script (``html_script``) draws them: the epochs table a page of rows at a
time with a search by case id, the lists a few names each with the rest
folded until opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from pytest_recall.reporting.html_cases import data_block, paged_controls, table_head
from pytest_recall.reporting.html_text import clean, clean_text, number, percent, status
from pytest_recall.reporting.run_report import RunReport
from pytest_recall.reporting.wording import left_out_text

HELP_HARM_COLUMNS = (
    "category",
    "helped (control failed, memory passed)",
    "harmed (control passed, memory failed)",
    "exact McNemar p",
)


def _section(kind: str, title: str, hint: str, content: Markup) -> Markup:
    return Markup('<section class="{}">\n<h2>{}</h2>\n<p class="hint">{}</p>\n{}\n</section>').format(
        kind, clean(title), clean(hint), content
    )


def epoch_section(stats: Mapping[str, Any]) -> Markup:
    """Each case's mean, pass@k, pass^k, spread and scores by epoch; rows drawn by the script."""
    per_case = stats.get("per_case")
    if not per_case:
        return Markup("")
    k = stats.get("epochs")
    summary = (
        f"pass@{k} (solved in at least one of {k} epochs): {percent(number(stats.get('pass_at_k')))} · "
        f"pass^{k} (solved in every epoch): {percent(number(stats.get('pass_all_k')))} · spread is best minus worst"
    )
    head = table_head(["case", "category", "mean", f"pass@{k}", f"pass^{k}", "spread", "scores by epoch"])
    table = Markup('{}\n<table class="epochs">\n{}\n<tbody></tbody>\n</table>\n{}').format(
        paged_controls(len(per_case)), head, data_block([epoch_row(case) for case in per_case])
    )
    return _section("epoch-table", "Consistency across epochs", summary, table)


def epoch_row(case: Mapping[str, Any]) -> list[Any]:
    """One case's row, by position: id, suite, category, mean, pass@k, pass^k, spread, [score, tone] by epoch."""
    scores = [number(score) for score in case.get("scores") or []]
    return [
        clean_text(case.get("id")),
        clean_text(case.get("suite")),
        clean_text(case.get("category")),
        percent(number(case.get("mean"))),
        _yes(case.get("pass_at_k")),
        _yes(case.get("pass_all_k")),
        percent(number(case.get("spread")), 0),
        [[f"{score or 0:.2f}", status(score, None)[1]] for score in scores],
    ]


def _yes(flag: Any) -> str:
    return "–" if flag is None else ("yes" if flag else "no")


def help_harm_section(report: RunReport) -> Markup:
    """Every case memory helped and every case it harmed, by name: harm is never averaged away."""
    effect = report.help_harm
    if not isinstance(effect, Mapping):
        return Markup("")
    rows = [
        [
            clean_text(category),
            [clean_text(name) for name in entry.get("helped") or []],
            [clean_text(name) for name in entry.get("harmed") or []],
            p_value(entry.get("p_value")),
        ]
        for category, entry in sorted((effect.get("by_category") or {}).items())
    ]
    detail = (
        f"Over {effect.get('n', 0)} cases run both ways, memory helped {len(effect.get('helped') or [])} and "
        f"harmed {len(effect.get('harmed') or [])} (exact McNemar p = {p_value(effect.get('p_value'))})"
        f"{left_out_text(effect)}."
    )
    table = Markup(
        "<noscript><p>The cases of this table are listed by the page's script, which is off here; "
        "the JSON report names every one under help_harm.</p></noscript>\n"
        '<table class="help-harm">\n{}\n<tbody></tbody>\n</table>\n{}'
    ).format(table_head(HELP_HARM_COLUMNS), data_block(rows))
    return _section("help-harm", "Helped and harmed", detail, table)


def p_value(value: Any) -> str:
    p = number(value)
    return "–" if p is None else f"{p:.3f}"
