"""MemoryAgentBench's deterministic metrics, written from the rules its evaluation code applies.

- normalise: lower-case, drop punctuation, drop the words ``a``, ``an``,
  ``the``, collapse whitespace (no stemming, unlike LoCoMo's F1);
- ``exact_match``: the normalised prediction equals a normalised gold answer;
- ``substring_exact_match``: a normalised gold answer is inside the
  normalised prediction;
- ``f1``: token F1, except that a yes/no/noanswer on either side scores 0
  unless both are the same;
- ``recall``: the share of gold elements found, case-blind, in the raw
  prediction (RULER's needle recall);
- every metric is the best over the gold answers, and over the raw output
  and the text after its ``Answer:`` prefix, as the code takes the better of both.

Which metric a sub-dataset is scored by is the table in the data set's
README, kept in suites/memoryagentbench.py and written into each answer.json
as ``mab_metric``: accuracy is ``substring_exact_match`` for EventQA, RULER QA and
FactConsolidation, ``exact_match`` for DetectiveQA and the ICL sets.
Recsys (recall@5 over a movie catalogue the rows do not carry), InfBench
summarisation and LongMemEval are scored by an LLM judge: no metric here.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_recall.cases import MAB_JUDGE_ONLY_METRIC

SUBSTRING_EXACT_MATCH = "substring_exact_match"
EXACT_MATCH = "exact_match"
RECALL = "recall"
LLM_JUDGED = MAB_JUDGE_ONLY_METRIC
_DROPPED = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
_SPECIAL = frozenset({"yes", "no", "noanswer"})
_ANSWER_PREFIX = re.compile(r"(?:Answer:)(.*)(?:\n|$)", re.IGNORECASE)
_FIRST_LINE = re.compile(r"(?:^)(.*)(?:\n|$)")


def normalise(text: str) -> str:
    bare = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_DROPPED.sub(" ", bare).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalise(prediction) == normalise(gold))


def substring_exact_match(prediction: str, gold: str) -> float:
    return float(normalise(gold) in normalise(prediction))


def f1(prediction: str, gold: str) -> float:
    """Token F1 as the benchmark computes it: a lone yes, no or noanswer must match exactly."""
    predicted, wanted = normalise(prediction), normalise(gold)
    if (predicted in _SPECIAL or wanted in _SPECIAL) and predicted != wanted:
        return 0.0
    same = sum((Counter(predicted.split()) & Counter(wanted.split())).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted.split()), same / len(wanted.split())
    return 2 * precision * recall / (precision + recall)


def element_recall(prediction: str, golds: Sequence[str]) -> float:
    lowered = prediction.lower()
    return sum(gold.lower() in lowered for gold in golds) / len(golds) if golds else 0.0


def parsed(output: str) -> str | None:
    """The text after ``Answer:``, else the first line: what the benchmark's parser reads."""
    for pattern in (_ANSWER_PREFIX, _FIRST_LINE):
        match = pattern.search(output)
        if match:
            return re.sub(r"^Answer:", "", match[1].strip(), flags=re.IGNORECASE).strip()
    return None


_PAIRWISE: dict[str, Callable[[str, str], float]] = {
    EXACT_MATCH: exact_match,
    SUBSTRING_EXACT_MATCH: substring_exact_match,
}


def score(output: str, golds: Sequence[str], metric: str) -> float:
    """The benchmark's score of one answer: the best over gold answers and over the raw and parsed output."""
    if metric == RECALL:
        return element_recall(output, golds)
    pairwise = _PAIRWISE[metric]
    readings = [output] + [text for text in (parsed(output),) if text is not None]
    return max(pairwise(reading, gold) for reading in readings for gold in golds)


def score_memoryagentbench(tail: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict of a ``memoryagentbench`` answer by its sub-dataset's metric; an LLM-judged one is left open."""
    metric = str(expected.get("mab_metric", SUBSTRING_EXACT_MATCH))
    category = expected.get("category")
    if metric == LLM_JUDGED:
        reason = f"{expected.get('mab_source')} is scored by an LLM judge: give --recall-judge-cmd"
        return {"score": None, "reason": reason, "category": category, "reported": tail, "metric": f"mab_{metric}"}
    golds = [str(gold) for gold in expected.get("answers") or [expected["answer"]]]
    value = round(score(tail, golds, metric), 6)
    best_f1 = round(max(f1(tail, gold) for gold in golds), 6)
    found = "matches a gold answer" if value >= 1 else ("matches part of the gold" if value > 0 else "no gold answer")
    reason = f"{metric} {value:g}: {found} (token F1 {best_f1:g})"
    return {"score": value, "reason": reason, "category": category, "reported": tail, "metric": f"mab_{metric}"}
