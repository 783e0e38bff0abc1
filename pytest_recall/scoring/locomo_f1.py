"""LoCoMo's own metric: token F1 with the paper's normalisation, stemming and per-category rules.

Written from the rules its evaluation code applies, so a score here can sit
beside the published tables:

- normalise: drop commas, lower-case, drop punctuation, drop the words
  ``a``, ``an``, ``the`` and ``and``, collapse whitespace; then stem every
  token with NLTK's Porter stemmer;
- F1 of the prediction's tokens against the gold's, counted as multisets;
- category 1 (multi-hop): gold and prediction are split on ``,``; each gold
  part takes its best F1 against any predicted part, and the parts average;
- category 3 (open-domain): only the gold's text before the first ``;``;
- categories 2 and 4: plain F1;
- category 5 (adversarial): 1 when the prediction says "not mentioned" or
  "no information available", else 0.

The prediction is the final non-empty line of the last step's stdout, the
answer contract of every pytest-recall judge.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from pytest_recall.scoring.passing import scored_a_pass

MULTI_HOP = 1
OPEN_DOMAIN = 3
ADVERSARIAL = 5
DECLINES = ("no information available", "not mentioned")
METRIC = "locomo_f1"
_DROPPED_WORDS = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = frozenset(string.punctuation)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    from nltk.stem import PorterStemmer  # type: ignore[import-untyped]

    return PorterStemmer()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A word as NLTK's Porter stemmer gives it, as the paper's F1 compares words."""
    return str(_stemmer().stem(word))


def normalise(text: str) -> str:
    lowered = text.replace(",", "").lower()
    bare = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    return " ".join(_DROPPED_WORDS.sub(" ", bare).split())


def tokens(text: str) -> list[str]:
    return [stem(word) for word in normalise(text).split()]


def token_f1(prediction: str, gold: str) -> float:
    predicted, wanted = tokens(prediction), tokens(gold)
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(wanted)
    return 2 * precision * recall / (precision + recall)


def multi_part_f1(prediction: str, gold: str) -> float:
    """Each comma-separated gold part scored by its best predicted part, averaged over the gold parts."""
    predicted = [part.strip() for part in prediction.split(",")]
    parts = [part.strip() for part in gold.split(",")]
    return sum(max(token_f1(p, g) for p in predicted) for g in parts) / len(parts)


def declines(prediction: str) -> bool:
    lowered = prediction.lower()
    return any(phrase in lowered for phrase in DECLINES)


def locomo_score(prediction: str, gold: str, category: int) -> float:
    """The paper's score of one answer in one category, from 0 to 1."""
    if category == ADVERSARIAL:
        return 1.0 if declines(prediction) else 0.0
    if category == MULTI_HOP:
        return multi_part_f1(prediction, gold)
    if category == OPEN_DOMAIN:
        gold = gold.split(";")[0].strip()
    return token_f1(prediction, gold)


def score_locomo(tail: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict of a ``locomo`` answer: the F1 is the score, so partial answers earn partial credit."""
    category = int(expected.get("locomo_category", 4))
    score = round(locomo_score(tail, str(expected["answer"]), category), 6)
    if category == ADVERSARIAL:
        reason = "declined, as the adversarial question deserves" if score else "answered a question never settled"
    elif scored_a_pass(score):
        reason = "token F1 1.0: the gold answer's words, stemmed"
    elif score > 0:
        reason = f"token F1 {score:.3f}: some of the gold answer's words"
    else:
        reason = "token F1 0: none of the gold answer's words"
    return {"score": score, "reason": reason, "category": expected.get("category"), "reported": tail, "metric": METRIC}
