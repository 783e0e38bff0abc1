"""The judge as plain functions, rule by rule, with tables of outputs.

Money cases expect ``27436.42`` and voucher cases ``AR-2026-5807``, two of
the seed suite's answers.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_recall.scoring.judge import (
    candidates,
    feedback_text,
    final_line,
    judge_answer,
    judge_run,
    judge_steps,
    normalise_money,
    score_case,
)

MONEY = {"id": "case_01", "category": "closing_balance", "answer": "27436.42", "answer_kind": "money"}
VOUCHER = {"id": "case_03", "category": "largest_debit_voucher", "answer": "AR-2026-5807", "answer_kind": "voucher"}
ABSENT = object()


def verdict_of(stdout: str, expected: dict[str, Any]) -> tuple[float, str, Any]:
    verdict = score_case(stdout, expected)
    assert verdict["category"] == expected["category"]
    return verdict["score"], verdict["reported"], verdict.get("n_candidates", ABSENT)


@pytest.mark.parametrize(
    ("stdout", "reported"),
    [
        ("27436.42", "27436.42"),
        ("27436.42\n", "27436.42"),
        ("27436.42\n\n  \n\t\n", "27436.42"),
        ("27436.42\r\n", "27436.42"),
        ("  27436.42  \t", "27436.42"),
        ('"27436.42"', "27436.42"),
        ("'27436.42'", "27436.42"),
        ("`27436.42`", "27436.42"),
        ("**27436.42**", "27436.42"),
        ("(27436.42)", "27436.42"),
        ("[27436.42];", "27436.42"),
        ("{27436.42}!", "27436.42"),
        ("27436.42.", "27436.42"),
        ("27436.42?!", "27436.42"),
        ("Earlier I guessed 31000.00.\n27436.42", "27436.42"),
        ("27436.42\n**\n``\n", "27436.42"),
    ],
)
def test_the_final_non_empty_line_is_read_with_wrapping_stripped(stdout, reported):
    assert verdict_of(stdout, MONEY) == (1.0, reported, ABSENT)


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        ("27436.42\nActually, make that 31000.00", (0.0, "Actually, make that 31000.00", 1)),
        ("27436.42\n31000.00", (0.0, "31000.00", 1)),
        ("27436.42\nDone.", (1.0, "27436.42", ABSENT)),
    ],
    ids=["later-line-overrides", "bare-later-value", "trailing-prose-falls-back"],
)
def test_the_final_line_is_decisive_over_earlier_lines(stdout, expected):
    assert verdict_of(stdout, MONEY) == expected


@pytest.mark.parametrize(
    "stdout",
    [
        "UNKNOWN",
        "unknown",
        "Unknown.",
        "**UNKNOWN**",
        "`UNKNOWN`\n\n",
        "I once saw 27436.42 but cannot be sure.\nUNKNOWN",
    ],
)
@pytest.mark.parametrize("expected", [MONEY, VOUCHER], ids=["money", "voucher"])
def test_unknown_on_the_final_line_scores_zero(stdout, expected):
    assert verdict_of(stdout, expected) == (0.0, "UNKNOWN", ABSENT)


def test_unknown_inside_prose_is_not_the_unknown_verdict():
    verdict = score_case("The value is UNKNOWN to me", MONEY)
    assert verdict["score"] == 0.0
    assert verdict["reported"] == "The value is UNKNOWN to me"
    assert verdict["n_candidates"] == 0


@pytest.mark.parametrize(
    "stdout",
    [
        "$27436.42",
        "27,436.42",
        "$27,436.42",
        "27436.42 USD",
        "USD 27,436.42",
        "$27,436.42 USD",
        "27436.420",
        "The balance is $27,436.42 USD",
        "The balance is 27,436.42 USD, as computed.",
    ],
)
def test_money_is_normalised_before_comparing(stdout):
    assert verdict_of(stdout, MONEY)[0] == 1.0


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("$12,345.67", "12345.67"),
        ("12345.67 USD", "12345.67"),
        ("12345", "12345.00"),
        ("12345.6", "12345.60"),
        ("1,234,567.891", "1234567.89"),
        ("twelve", None),
        ("", None),
    ],
)
def test_normalise_money_gives_two_decimals(text, normalised):
    assert normalise_money(text) == normalised


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        ("27436.4", {"answer": "27436.40"}),
        ("27436", {"answer": "27436.00"}),
        ("27,436", {"answer": "27436.00"}),
        ("The total is 19,721.", {"answer": "19721.00"}),
    ],
)
def test_money_without_cents_matches_an_answer_with_zero_cents(stdout, expected):
    assert verdict_of(stdout, {**MONEY, **expected})[0] == 1.0


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        ("AR-2026-5807", (1.0, "AR-2026-5807", ABSENT)),
        ("ar-2026-5807", (1.0, "ar-2026-5807", ABSENT)),
        ("**AR-2026-5807**.", (1.0, "AR-2026-5807", ABSENT)),
        ("The voucher was AR-2026-5807 (the largest debit).", (1.0, "AR-2026-5807", ABSENT)),
        ("Voucher: AR-2026-5807, amount 4,120.00", (1.0, "AR-2026-5807", ABSENT)),
        ("AR-2026-1234", (0.0, "AR-2026-1234", 1)),
        ("AR-2026-5807 or AR-2026-1234", (0.0, "AR-2026-5807 or AR-2026-1234", 2)),
        ("AR-2026-58071", (0.0, "AR-2026-58071", 0)),
        ("XAR-2026-5807", (0.0, "XAR-2026-5807", 0)),
        ("AR-2025-5807", (0.0, "AR-2025-5807", 0)),
        ("I noted AR-2026-5807 then.\nThat is all", (1.0, "AR-2026-5807", ABSENT)),
    ],
)
def test_voucher_ids_are_matched_whole(stdout, expected):
    assert verdict_of(stdout, VOUCHER) == expected


@pytest.mark.parametrize(
    "stdout",
    [
        "Posted 2026-03-14 under AR-2026-0016: 27436.42",
        "AR-2026-0016 / AR-2026-9999 closed at 27,436.42",
        "As of 2026-12-31 the balance was $27,436.42.",
        "On 2026-03-14 it was 27436.42\nvoucher AR-2026-0016 closed it",
    ],
)
def test_voucher_ids_and_iso_dates_are_no_money_candidates(stdout):
    assert verdict_of(stdout, MONEY)[0] == 1.0


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("AR-2026-0016", set()),
        ("2026-03-14", set()),
        ("2026", {"2026.00"}),
        ("999.99 and 1,000.00", {"1000.00"}),
        ("step 3 of 12, rank 2, 0.5 percent, 12.75", set()),
        ("27,940.01. Then 27940.01.", {"27940.01"}),
        ("27436.42.5", set()),
        ("v27436.42", set()),
        ("27436.42x", set()),
        ("$27,436.42 and 27436.42 USD", {"27436.42"}),
    ],
)
def test_money_candidates(text, found):
    assert candidates(text, "money") == found


@pytest.mark.parametrize(
    "stdout",
    [
        "Step 3 of 12: the balance is 27436.42",
        "Rank 2 of 40 entries; the balance is 27436.42",
        "After 15 entries and 999.99 in fees, 27436.42",
        "Balance (3 accounts): 27,436.42",
    ],
)
def test_small_numbers_are_not_rival_candidates(stdout):
    assert verdict_of(stdout, MONEY) == (1.0, "27436.42", ABSENT)


@pytest.mark.parametrize(
    "stdout",
    [
        "The closing balance was 27,436.42. Nothing else changed",
        "It came to 27436.42. Then I stopped",
        "I computed 27,436.42.\nThat is the figure you asked for",
    ],
)
def test_a_sentence_ending_period_is_not_part_of_the_number(stdout):
    assert verdict_of(stdout, MONEY) == (1.0, "27436.42", ABSENT)


@pytest.mark.parametrize(
    ("stdout", "n_candidates"),
    [
        ("27436.42 or 31000.00", 2),
        ("Either $27,436.42, $31,000.00 or $12,000.50", 3),
        ("27436.42\n31000.00\n12000.50\nOne of those", 3),
        ("Candidates:\n- 27436.42\n- 31000.00\nPick one", 2),
    ],
)
def test_a_shotgun_earns_nothing(stdout, n_candidates):
    verdict = score_case(stdout, MONEY)
    assert verdict["score"] == 0.0
    assert verdict["n_candidates"] == n_candidates
    assert "shotgun" in verdict["reason"]
    assert verdict["reported"] == final_line(stdout)


def test_the_same_value_twice_is_no_shotgun():
    assert verdict_of("$27,436.42 (that is 27436.42)", MONEY) == (1.0, "27436.42", ABSENT)


@pytest.mark.parametrize(
    "stdout",
    [
        "Let me check my notes.\nThe value I stored was 27436.42\nHope that helps!",
        "Looking it up...\nfound: $27,436.42\n\nDone",
        "# Answer\n```\n27436.42\n```",
    ],
)
def test_preamble_and_trailing_prose_are_tolerated(stdout):
    assert verdict_of(stdout, MONEY) == (1.0, "27436.42", ABSENT)


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        ("I do not remember", (0.0, "I do not remember", 0)),
        ("It was 31000.00", (0.0, "It was 31000.00", 1)),
        ("31000.00\n12000.50\nno idea", (0.0, "no idea", 2)),
        ("It was about 27436", (0.0, "It was about 27436", 1)),
    ],
)
def test_a_missing_or_wrong_value_scores_zero_and_counts_candidates(stdout, expected):
    assert verdict_of(stdout, MONEY) == expected


@pytest.mark.parametrize(
    ("stdout", "exit_code", "expected"),
    [
        ("27436.42", 3, (0.0, "agent exited 3")),
        ("", 0, (0.0, "empty stdout")),
        ("  \n\t\r\n", 0, (0.0, "empty stdout")),
        ("", None, (0.0, "empty stdout")),
        ("27436.42", 0, None),
        ("27436.42", None, None),
    ],
)
def test_judge_run_settles_failed_exits_and_silence(stdout, exit_code, expected):
    verdict = judge_run(stdout, exit_code, MONEY)
    assert (None if verdict is None else (verdict["score"], verdict["reason"])) == expected


@pytest.mark.parametrize(
    ("outcomes", "stdout", "reason"),
    [
        ([(0, None, False), (0, None, False)], "27436.42", "final line is the expected value"),
        ([(0, None, False), (None, 9, True)], "27436.42", "timeout in step 2"),
        ([(None, 15, True)], "", "timeout in step 1"),
        ([(0, None, False), (None, 11, False)], "27436.42", "agent was killed by signal 11 in step 2"),
        ([(2, None, False), (0, None, False)], "27436.42", "agent exited 2 in step 1"),
        ([(0, None, False), (1, None, False)], "27436.42", "agent exited 1"),
        ([(0, None, False), (0, None, False)], "", "empty stdout"),
    ],
)
def test_judge_steps_lets_a_failed_step_spoil_the_case(outcomes, stdout, reason):
    verdict = judge_steps(outcomes, stdout, MONEY)
    assert verdict["reason"] == reason
    assert verdict["score"] == (1.0 if reason.startswith("final line") else 0.0)


def test_judge_steps_uses_the_answer_judge_it_is_given():
    verdict = judge_steps([(0, None, False)], "anything", MONEY, lambda stdout, expected: {"score": 0.5, "reason": "x"})
    assert verdict == {"score": 0.5, "reason": "x"}


def test_judge_answer_dispatches_money_and_voucher_to_score_case():
    assert judge_answer("27436.42", MONEY) == score_case("27436.42", MONEY)
    assert judge_answer("AR-2026-5807", VOUCHER) == score_case("AR-2026-5807", VOUCHER)


def test_answer_kind_defaults_to_money():
    expected = {key: value for key, value in MONEY.items() if key != "answer_kind"}
    assert score_case("$27,436.42", expected)["score"] == 1.0


def test_feedback_names_the_score_and_the_correct_answer():
    text = feedback_text(score_case("31000.00", MONEY), MONEY)
    assert "score 0.0" in text
    assert "27436.42" in text
    assert text.endswith("\n\n")
