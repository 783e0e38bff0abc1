"""Comparing two recall reports: real changes are flagged, noise and unpaired cases are not."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from report_docs import run_report

from pytest_recall.reporting import compare
from pytest_recall.reporting.compare import format_comparison


def compare_reports(base: dict[str, Any], new: dict[str, Any], **options: Any) -> dict[str, Any]:
    """The comparison of two reports made here as JSON, read as report files are."""
    return compare.compare_reports(run_report(base), run_report(new), **options)


def cases(
    scores: Sequence[float | None], *, epochs: int = 1, category: str = "recall", prefix: str = "case"
) -> list[dict[str, Any]]:
    """Case i scores ``scores[i]`` in every epoch."""
    return [
        {"id": f"{prefix}_{i:02d}", "suite": "s", "category": category, "epoch": e, "control": False, "score": s}
        for i, s in enumerate(scores)
        for e in range(1, epochs + 1)
    ]


def report(scores: Sequence[float | None], *, epochs: int = 1) -> dict[str, Any]:
    """A report of ``cases`` plus a perfect control record, which a comparison must ignore."""
    control = {"id": "case_00", "suite": "s", "category": "recall", "epoch": 1, "control": True, "score": 1.0}
    return {"schema_version": 1, "cases": [*cases(scores, epochs=epochs), control]}


def test_a_clear_improvement_is_significant_and_not_a_regression() -> None:
    result = compare_reports(report([0.0] * 12), report([1.0] * 12))
    overall = result["overall"]
    assert result["method"] == "mcnemar"
    assert (overall["n"], overall["base"], overall["new"], overall["delta"]) == (12, 0.0, 1.0, 1.0)
    assert (overall["improved"], overall["worsened"]) == (12, 0)
    assert overall["p_value"] == pytest.approx(2 / 2**12, abs=1e-4)
    assert result["improvement"] is True
    assert result["regression"] is False


def test_a_clear_regression_is_flagged() -> None:
    result = compare_reports(report([1.0] * 10 + [0.0] * 2), report([0.0] * 10 + [0.0] * 2))
    assert result["overall"]["delta"] == pytest.approx(-10 / 12, abs=1e-4)
    assert result["overall"]["p_value"] == pytest.approx(0.002, abs=1e-4)
    assert result["regression"] is True
    assert result["overall"]["regression"] is True
    assert "REGRESSION" in format_comparison(result)


def test_no_change_is_no_regression() -> None:
    scores = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    result = compare_reports(report(scores), report(scores))
    assert result["overall"]["delta"] == 0.0
    assert result["overall"]["p_value"] == 1.0
    assert (result["regression"], result["improvement"]) == (False, False)
    assert "no significant change" in format_comparison(result)


def test_a_small_drop_is_reported_but_not_called_a_regression() -> None:
    result = compare_reports(report([1.0] * 8), report([1.0] * 6 + [0.0] * 2))
    assert result["overall"]["delta"] == -0.25
    assert result["regression"] is False


def test_cases_in_only_one_report_are_listed_not_paired() -> None:
    base = report([1.0, 1.0, 1.0])
    new = report([1.0, 1.0])
    new["cases"].append({"id": "extra", "suite": "t", "category": "recall", "epoch": 1, "control": False, "score": 0.0})
    result = compare_reports(base, new)
    assert result["n_paired"] == 2
    assert result["only_in_base"] == [{"suite": "s", "id": "case_02"}]
    assert result["only_in_new"] == [{"suite": "t", "id": "extra"}]
    text = format_comparison(result)
    assert "Only in base (1): s/case_02" in text
    assert "Only in new (1): t/extra" in text


def test_a_case_without_a_score_on_one_side_is_listed_as_unscored() -> None:
    result = compare_reports(report([1.0, 0.0]), report([1.0, None]))
    assert result["n_paired"] == 1
    assert result["unscored"] == [{"suite": "s", "id": "case_01"}]


def test_cases_edited_between_runs_are_pointed_out() -> None:
    base, new = report([1.0, 1.0]), report([1.0, 1.0])
    for i, case in enumerate(base["cases"]):
        case["content_hash"] = f"h{i}"
    for i, case in enumerate(new["cases"]):
        case["content_hash"] = "changed" if case["id"] == "case_01" else f"h{i}"
    assert compare_reports(base, new)["changed"] == [{"suite": "s", "id": "case_01"}]


def test_epochs_fold_to_means_and_use_the_paired_bootstrap() -> None:
    result = compare_reports(report([0.0] * 10, epochs=3), report([1.0] * 10, epochs=3))
    assert result["epochs"] == {"base": 3, "new": 3}
    assert result["method"] == "sign-flip"
    assert result["overall"]["n"] == 10
    assert result["improvement"] is True


def test_partial_credit_uses_the_paired_bootstrap_with_an_interval() -> None:
    result = compare_reports(report([0.25, 1.0, 0.0, 1.0] * 3), report([1.0, 1.0, 0.25, 1.0] * 3))
    overall = result["overall"]
    assert result["method"] == "sign-flip"
    assert overall["low"] <= overall["delta"] <= overall["high"]
    assert overall["level"] == 0.95


def test_deltas_per_category() -> None:
    base = {"cases": cases([1.0] * 4, category="balance") + cases([0.0] * 4, category="names", prefix="n")}
    new = {"cases": cases([1.0] * 4, category="balance") + cases([1.0] * 4, category="names", prefix="n")}
    result = compare_reports(base, new)
    assert sorted(result["by_category"]) == ["balance", "names"]
    assert result["by_category"]["balance"]["delta"] == 0.0
    assert result["by_category"]["names"]["delta"] == 1.0
    assert result["overall"]["delta"] == 0.5


def test_nothing_in_common_compares_to_nothing() -> None:
    base = report([1.0])
    new = {"cases": [{"id": "other", "suite": "s", "category": "recall", "score": 1.0}]}
    result = compare_reports(base, new)
    assert result["overall"] is None
    assert result["regression"] is False
    assert "nothing to compare" in format_comparison(result)


def test_comparison_is_deterministic() -> None:
    base, new = report([0.25, 1.0, 0.0] * 5, epochs=2), report([1.0, 0.25, 0.0] * 5, epochs=2)
    assert compare_reports(base, new, seed=3) == compare_reports(base, new, seed=3)
    assert format_comparison(compare_reports(base, new)) == format_comparison(compare_reports(base, new))


def test_terminal_table_has_one_line_per_category_and_a_verdict() -> None:
    text = format_comparison(compare_reports(report([0.0] * 12), report([1.0] * 12)))
    lines = text.splitlines()
    assert lines[0].startswith("pytest-recall compare: new - base over 12 paired cases (McNemar exact test")
    assert lines[2].split()[:2] == ["category", "n"]
    assert lines[3].split()[:5] == ["overall", "12", "0.0%", "100.0%", "+100.0"]
    assert lines[4].split()[0] == "recall"
    assert lines[-1].startswith("Verdict: improvement")


def test_the_always_valid_test_calls_a_clear_change_early_in_case_id_order() -> None:
    result = compare_reports(report([0.0] * 40), report([1.0] * 40))
    sequential = result["sequential"]
    assert (sequential["order"], sequential["better"], sequential["n_pairs"]) == ("case-id", "new", 40)
    assert sequential["decided_after"] < 40
    assert f"Sequential: new better than base, decided after {sequential['decided_after']} of 40 pairs" in (
        format_comparison(result)
    )
    worse = compare_reports(report([1.0] * 40), report([0.0] * 40))["sequential"]
    assert worse["better"] == "base" and worse["decided_after"] < 40


def test_no_change_or_a_small_one_is_undecided() -> None:
    scores = [1.0, 0.0] * 20
    assert compare_reports(report(scores), report(scores))["sequential"]["better"] is None
    # 3 cases of 40 better: the fixed-sample test sees no significance and the always-valid one no sign.
    result = compare_reports(report([0.0] * 3 + scores[3:]), report(scores))
    assert result["sequential"]["better"] is None and result["sequential"]["decided_after"] is None
    assert "Sequential: undecided after 40 pairs (always-valid test, pairs in case-id order)." in (
        format_comparison(result)
    )


def test_a_report_that_drew_its_cases_is_tested_in_the_drawn_order() -> None:
    """The ten cases that went up are the first ten drawn: the drawn order decides sooner than case-id order."""
    from pytest_recall.scoring import draw_key

    def with_nodeids(loaded: dict[str, Any]) -> dict[str, Any]:
        for row in loaded["cases"]:
            row["nodeid"] = f"cases/s/{row['id']}::recall"
        return loaded

    ids = sorted((f"case_{i:02d}" for i in range(30)), key=lambda case_id: draw_key(f"cases/s/{case_id}::recall"))
    first_drawn = {int(case_id.removeprefix("case_")) for case_id in ids[:10]}
    base = with_nodeids(report([0.0] * 30))
    new = with_nodeids(report([1.0 if i in first_drawn else 0.0 for i in range(30)]))
    undrawn = compare_reports(base, new)["sequential"]
    new["stop"] = {"mode": "decided"}
    drawn = compare_reports(base, new)["sequential"]
    assert drawn["order"] == "drawn" and undrawn["order"] == "case-id"
    assert drawn["better"] == "new" and drawn["decided_after"] <= 10
    assert undrawn["decided_after"] is None or undrawn["decided_after"] > drawn["decided_after"]
