"""The abstain kind and the false-abstention rate, as plain functions with tables of cases."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_recall.reporting.merge import case_scalars, report_of_rows
from pytest_recall.reporting.spool import summary_of_row
from pytest_recall.reporting.summary import format_summary
from pytest_recall.scoring.abstain import false_abstention_rate
from pytest_recall.scoring.judge import judge_answer, judge_steps

ABSTAIN = {"id": "a", "category": "abstention", "answer": "NOT GIVEN", "answer_kind": "abstain"}
MONEY = {"id": "m", "category": "interference", "answer": "12345.67", "answer_kind": "money"}
VOUCHER = {"id": "v", "category": "closing", "answer": "AR-2026-1234", "answer_kind": "voucher"}


@pytest.mark.parametrize(
    ("stdout", "score"),
    [
        ("NOT GIVEN", 1.0),
        ("NOT GIVEN\n", 1.0),
        ("Checking my notes.\n**NOT GIVEN.**\n\n", 1.0),
        ("not given", 1.0),
        ("UNKNOWN", 0.0),
        ("12345.67", 0.0),
        ("NOT GIVEN\n12345.67", 0.0),
        ("It was NOT GIVEN to me", 0.0),
        ("NOTGIVEN", 0.0),
    ],
)
def test_abstain_scores_only_a_final_not_given(stdout: str, score: float) -> None:
    assert judge_answer(stdout, ABSTAIN)["score"] == score


@pytest.mark.parametrize("expected", [MONEY, VOUCHER])
@pytest.mark.parametrize("stdout", ["NOT GIVEN", "The figure was 12345.67 (AR-2026-1234).\nNOT GIVEN"])
def test_not_given_scores_zero_where_a_value_was_due(expected: dict[str, Any], stdout: str) -> None:
    verdict = judge_answer(stdout, expected)
    assert verdict["score"] == 0.0
    assert verdict["reported"] == "NOT GIVEN"


def test_unknown_rule_is_untouched() -> None:
    assert judge_answer("UNKNOWN", MONEY)["reported"] == "UNKNOWN"
    assert judge_answer("12,345.67", MONEY)["score"] == 1.0


def test_a_crashed_abstainer_still_scores_zero() -> None:
    assert judge_steps([(0, None, False), (1, None, False)], "NOT GIVEN", ABSTAIN)["score"] == 0.0


def _record(kind: str, reported: str, score: float | None = 0.0, control: bool = False) -> dict[str, Any]:
    return {
        "id": reported + kind,
        "suite": "s",
        "nodeid": f"s/{reported}{kind}{control}::run",
        "category": "c",
        "answer_kind": kind,
        "score": score,
        "reported": reported,
        "control": control,
        "epoch": 1,
        "duration_s": 0.1,
        "error": None if score is not None else "boom",
    }


@pytest.mark.parametrize(
    ("records", "rate"),
    [
        ([], None),
        ([_record("abstain", "NOT GIVEN", 1.0)], None),
        ([_record("money", "NOT GIVEN"), _record("money", "12345.67", 1.0)], 0.5),
        ([_record("money", "NOT GIVEN", control=True), _record("voucher", "UNKNOWN")], 0.0),
        ([_record("money", "NOT GIVEN", score=None), _record("money", "1234.56", 1.0)], 0.0),
    ],
)
def test_false_abstention_rate_counts_not_given_where_a_value_was_due(
    records: list[dict[str, Any]], rate: float | None
) -> None:
    assert false_abstention_rate([summary_of_row(r) for r in records]) == rate


def test_report_and_summary_show_false_abstentions_only_when_there_are_some() -> None:
    some = report_of_rows([_record("money", "NOT GIVEN"), _record("money", "1234.56", 1.0)], threshold=0.5, command="x")
    assert some.false_abstention_rate == 0.5
    assert any("false abstentions: 0.500" in line for line in format_summary(some, case_scalars(some)))
    none = report_of_rows([_record("money", "1234.56", 1.0)], threshold=0.5, command="x")
    assert none.false_abstention_rate == 0.0
    assert not any("false abstentions" in line for line in format_summary(none, case_scalars(none)))
