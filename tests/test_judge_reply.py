"""Reading a judge command's verdict, and how far two judges agree (issue 30)."""

from __future__ import annotations

import pytest

from pytest_recall.scoring.judge_agreement import JudgedTwice, agreement_report, cohens_kappa
from pytest_recall.scoring.judge_reply import read_judge_reply


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("yes\n", 1.0),
        ("The answer names the same city.\nYES", 1.0),
        ("no", 0.0),
        ("  No.  ", 0.0),
        ('{"score": 1, "reason": "same date"}', 1.0),
        ('{"score": 0.5}', 0.5),
        ('{"verdict": "no", "reason": "another value"}', 0.0),
    ],
)
def test_a_readable_verdict_gives_its_score(text: str, score: float) -> None:
    reply = read_judge_reply(text)
    assert reply.error is None and reply.score == score


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "printed nothing"),
        ("maybe", "neither yes nor no"),
        ("{not json", "does not parse"),
        ("[1]", "neither yes nor no"),
        ('{"score": "high"}', 'no numeric "score"'),
        ('{"score": 2}', "outside 0 to 1"),
        ('{"score": NaN}', 'no numeric "score"'),
        ('{"score": true}', 'no numeric "score"'),
        ("yes\n" * 40_000, "a verdict is one line"),
    ],
)
def test_an_unreadable_verdict_is_a_judge_error_not_a_score(text: str, says: str) -> None:
    reply = read_judge_reply(text)
    assert reply.score is None and reply.error is not None and says in reply.error


def test_kappa_matches_a_worked_example() -> None:
    # 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: po = 0.7, pe = 0.5*0.6 + 0.5*0.4 = 0.5, kappa = 0.4.
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15
    assert cohens_kappa(pairs) == pytest.approx(0.4)
    assert cohens_kappa([(True, True)] * 4) is None
    assert cohens_kappa([]) is None


def test_the_agreement_report_lists_every_disagreement_per_kind() -> None:
    judged = [
        JudgedTwice("s/a", "money", True, True),
        JudgedTwice("s/b", "money", False, True),
        JudgedTwice("s/c", "free", False, False),
        JudgedTwice("s/d", "free", True, True),
    ]
    report = agreement_report(judged)
    assert report["n"] == 4 and report["agreed"] == 3 and report["rate"] == 0.75
    assert report["by_kind"]["free"]["rate"] == 1.0 and report["by_kind"]["money"]["rate"] == 0.5
    assert report["disagreements"] == [{"case": "s/b", "kind": "money", "deterministic": False, "llm": True}]
