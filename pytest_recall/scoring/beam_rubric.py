"""BEAM's probing answers, scored without a model: a lexical reading of its rubrics, and its event-ordering metric.

BEAM (Beyond a Million Tokens) scores every one of its ten abilities with an
LLM judge: each rubric item ("LLM response should state: 250ms") is judged
0, 0.5 or 1 and the items average. Event ordering adds a metric of its
own: the response's lines are aligned to the rubric's events (by an LLM in
the paper), and the score is Kendall's tau-b between the two orders,
mapped to [0, 1], times the F1 of the events recovered.

Nothing here calls a model, so this approximates the paper's numbers, and
the verdict says so (metric ``beam_rubric_lexical``): a rubric item counts 1
when every content word of its required text is in the answer, 0.5 when at
least half are, else 0; event ordering aligns a line to an event when the
line holds every content word of the event, then applies the paper's
tau-b x F1 exactly. Abstention is scored on declining. Instruction following
and preference following have rubrics about how an answer is written ("code
blocks with syntax highlighting"), which no word match can read: their score
is left to the judge command (--recall-judge-cmd).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_recall.cases import BEAM_JUDGE_ONLY_ABILITIES
from pytest_recall.scoring.memoryagentbench_metrics import normalise

METRIC = "beam_rubric_lexical"
ABSTENTION = "abstention"
EVENT_ORDERING = "event_ordering"
LLM_ONLY = BEAM_JUDGE_ONLY_ABILITIES
_RUBRIC_PREFIX = re.compile(r"^\s*LLM response should (?:state|mention|contain|include)\s*:\s*", re.IGNORECASE)
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "is",
        "are",
        "was",
        "were",
        "be",
        "by",
        "with",
        "i",
        "you",
        "my",
        "your",
        "it",
        "that",
        "this",
    ]
)
_DECLINES = (
    "no information",
    "not mentioned",
    "never mentioned",
    "not provided",
    "don't have",
    "do not have",
    "no record",
    "unknown",
)


def content_words(text: str) -> list[str]:
    return [word for word in normalise(text).split() if word not in _STOP]


def required_text(item: str) -> str:
    """What a rubric item asks the answer to say: the text after "LLM response should state:"."""
    return _RUBRIC_PREFIX.sub("", item).strip()


def item_score(answer: str, item: str) -> float:
    """A rubric item on the judge's scale: 1 every content word said, 0.5 at least half, else 0."""
    wanted = set(content_words(required_text(item)))
    if not wanted:
        return 0.0
    said = len(wanted & set(content_words(answer))) / len(wanted)
    return 1.0 if said == 1 else 0.5 if said >= 0.5 else 0.0


def rubric_score(answer: str, rubric: Sequence[str]) -> float:
    return sum(item_score(answer, item) for item in rubric) / len(rubric) if rubric else 0.0


def kendall_tau_b(first: Sequence[int], second: Sequence[int]) -> float:
    """Kendall's tau-b of two rankings of the same items (ties allowed), as scipy's ``kendalltau`` gives it."""
    concordant = discordant = ties_first = ties_second = 0
    for i in range(len(first)):
        for j in range(i + 1, len(first)):
            a, b = first[i] - first[j], second[i] - second[j]
            if a == 0 and b == 0:
                continue
            if a == 0:
                ties_first += 1
            elif b == 0:
                ties_second += 1
            elif (a > 0) == (b > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = ((concordant + discordant + ties_first) * (concordant + discordant + ties_second)) ** 0.5
    return (concordant - discordant) / denominator if denominator else 0.0


def aligned(reference: Sequence[str], lines: Sequence[str]) -> list[str]:
    """Each line as the event it names (every content word of the event in it), else as itself; one line an event."""
    used: set[int] = set()
    system: list[str] = []
    for line in lines:
        words = set(content_words(line))
        match = next((i for i, ev in enumerate(reference) if i not in used and set(content_words(ev)) <= words), None)
        if match is None:
            system.append(line)
        else:
            used.add(match)
            system.append(reference[match])
    return system


def event_ordering_score(reference: Sequence[str], lines: Sequence[str]) -> float:
    """The paper's event-ordering score: (tau-b + 1) / 2 times the F1 of the events recovered."""
    system = aligned(reference, lines)
    true_positive = len(set(reference) & set(system))
    false_positive = sum(1 for item in system if item not in reference)
    false_negative = sum(1 for item in reference if item not in system)
    precision = true_positive / (true_positive + false_positive) if true_positive + false_positive else 0.0
    recall = true_positive / (true_positive + false_negative) if true_positive + false_negative else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    union = list(dict.fromkeys([*reference, *system]))
    tie = len(union) + 1

    def ranks(sequence: Sequence[str]) -> list[int]:
        position = {item: i + 1 for i, item in enumerate(sequence)}
        return [position.get(item, tie) for item in union]

    return (kendall_tau_b(ranks(reference), ranks(system)) + 1) / 2 * f1


def declines(answer: str) -> bool:
    lowered = answer.lower()
    return any(phrase in lowered for phrase in _DECLINES)


def score_beam(answer: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict of a ``beam`` answer: ``answer`` is the whole reply, since a rubric may ask for several lines."""
    ability = str(expected.get("beam_ability", ""))
    rubric = [str(item) for item in expected.get("rubric") or []]
    tail = answer.strip().splitlines()[-1] if answer.strip() else ""
    verdict: dict[str, Any] = {"category": expected.get("category"), "reported": tail, "metric": METRIC}
    if ability in LLM_ONLY:
        return {**verdict, "score": None, "reason": f"{ability} needs a rubric judge: give --recall-judge-cmd"}
    if ability == ABSTENTION:
        said = declines(answer)
        return {**verdict, "score": float(said), "reason": "declined" if said else "answered what was never said"}
    if ability == EVENT_ORDERING:
        value = round(event_ordering_score(rubric, [line for line in answer.splitlines() if line.strip()]), 6)
        return {**verdict, "score": value, "reason": f"event order: tau-b x F1 = {value:g} (events aligned by words)"}
    value = round(rubric_score(answer, rubric), 6)
    return {**verdict, "score": value, "reason": f"rubric items said, by word: {value:g} averaged over {len(rubric)}"}
