"""LoCoMo's token F1 against an independent implementation of the paper's rules, and the lexical judge's table."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from nltk.stem import PorterStemmer

from pytest_recall.scoring.judge import judge_answer
from pytest_recall.scoring.lexical_judge import score_longmemeval_lexical
from pytest_recall.scoring.locomo_f1 import locomo_score

LOCOMO = Path(__file__).resolve().parent / "data" / "locomo_tiny.json"
STEMMER = PorterStemmer()


def reference_words(text: str) -> list[str]:
    """The paper's normalisation written out step by step, word list in, stems out."""
    text = text.replace(",", "")
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    kept = []
    for word in text.split():
        if word not in {"a", "an", "the", "and"}:
            kept.append(word)
    return [STEMMER.stem(word) for word in kept]


def reference_f1(prediction: str, gold: str) -> float:
    predicted = reference_words(prediction)
    wanted = reference_words(gold)
    remaining = list(wanted)
    overlap = 0
    for word in predicted:
        if word in remaining:
            remaining.remove(word)
            overlap += 1
    if overlap == 0:
        return 0.0
    precision = overlap / len(predicted)
    recall = overlap / len(wanted)
    return 2 * precision * recall / (precision + recall)


def reference_score(prediction: str, gold: str, category: int) -> float:
    if category == 5:
        lowered = prediction.lower()
        return 1.0 if ("not mentioned" in lowered or "no information available" in lowered) else 0.0
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category == 1:
        golds = [g.strip() for g in gold.split(",")]
        predictions = [p.strip() for p in prediction.split(",")]
        best = [max(reference_f1(p, g) for p in predictions) for g in golds]
        return sum(best) / len(best)
    return reference_f1(prediction, gold)


def predictions_for(gold: str) -> list[str]:
    """An exact answer, partial ones, a wrong one and a declining one for each gold answer."""
    words = gold.split()
    return [
        gold,
        gold.upper() + ".",
        " ".join(words[: max(1, len(words) // 2)]),
        f"I think it was {gold} and more besides",
        ", ".join(reversed([part.strip() for part in gold.split(",")])),
        "something else entirely",
        "Not mentioned in the conversation",
        "",
    ]


def locomo_questions() -> list[tuple[str, int]]:
    found = []
    for sample in json.loads(LOCOMO.read_text(encoding="utf-8")):
        for qa in sample["qa"]:
            gold = qa.get("answer", qa.get("adversarial_answer"))
            found.append((str(gold), qa["category"]))
    return found


@pytest.mark.parametrize(("gold", "category"), locomo_questions())
def test_locomo_f1_equals_an_independent_implementation_on_every_question(gold, category):
    for prediction in predictions_for(gold):
        assert locomo_score(prediction, gold, category) == pytest.approx(reference_score(prediction, gold, category))


@pytest.mark.parametrize(
    ("prediction", "gold", "category", "score"),
    [
        ("Adoption agencies", "Adoption agencies", 1, 1.0),
        ("charity race, lake sunrise", "lake sunrise, charity race", 1, 1.0),
        ("lake sunrise", "lake sunrise, charity race", 1, 0.5),
        ("Psychology", "Psychology; counseling certification", 3, 1.0),
        ("mental health", "mental health", 4, 1.0),
        ("the painting", "paintings", 4, 1.0),  # stems and articles
        ("No information available.", "self-care is important", 5, 1.0),
        ("self-care is important", "self-care is important", 5, 0.0),
        ("2022", "2022", 4, 1.0),
    ],
)
def test_locomo_rules_by_category(prediction, gold, category, score):
    assert locomo_score(prediction, gold, category) == pytest.approx(score)


def test_locomo_verdict_reads_the_final_line_and_names_its_metric():
    expected = {"answer": "mental health", "answer_kind": "locomo", "category": "single-hop", "locomo_category": 4}
    verdict = judge_answer("thinking...\nIt raised awareness for mental health\n", expected)
    assert verdict["metric"] == "locomo_f1" and 0 < verdict["score"] < 1


LEXICAL = [
    ("Business Administration", "You graduated in business administration.", False, 1.0),
    ("Business Administration", "Marketing", False, 0.0),
    ("3", "You own three bikes.", False, 1.0),
    ("$400,000", "It sold for 400000 dollars", False, 1.0),
    ("May 22, 2023", "You adopted Biscuit on 2023/05/22.", False, 1.0),
    ("May 22, 2023", "On 22nd May 2023", False, 1.0),
    ("May 22", "It was May 22, 2023", False, 1.0),
    ("7 days. 8 days (including the last day) is also acceptable.", "8 days", False, 1.0),
    ("25", "twenty-five", False, 1.0),
    ("12", "It was not mentioned", False, 0.0),
    ("The information provided is not enough.", "That was not mentioned in our chats.", True, 1.0),
    ("The information provided is not enough.", "UNKNOWN", True, 1.0),
    ("The information provided is not enough.", "Your brother studied law.", True, 0.0),
]


@pytest.mark.parametrize(("gold", "said", "abstention", "score"), LEXICAL)
def test_the_lexical_judge(gold, said, abstention, score):
    expected = {"answer": gold, "answer_kind": "longmemeval", "category": "x", "abstention": abstention}
    verdict = score_longmemeval_lexical(said, expected)
    assert verdict["score"] == score
    assert verdict["metric"] == "longmemeval_lexical" and verdict["reason"].startswith("lexical judge")
