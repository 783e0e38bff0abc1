"""The fake model as a judge: fixed rules for what it accepts, strict or deliberately lenient.

``recall-judge`` sends a prompt with tagged blocks (:mod:`pytest_recall.agents.judge_prompts`);
the fake model reads them back and answers ``yes`` or ``no`` by rule, so a
test knows every verdict in advance. The strict rules follow the prompt's own
rules: the gold answer's words in the response (a temporal count may be off by
one), no other candidate beside a gold that is one number (a shotgun answer;
a knowledge update may name the old value beside the new),
an abstention answered only by declining, a preference judged on most of the
gold rubric's content words. The lenient mode accepts any response that does
not decline, as a lenient LLM judge does with vague and shotgun answers. The
gullible mode falls for answers written to game a judge, as a careless LLM
judge does: it accepts any response that holds the gold's text (a shotgun, the
gold negated, a hedge) or that tells the judge it is correct, and judges the
rest strictly, so ``judge-audit`` has a judge to catch.
The fickle mode is strict but not self-consistent, as a real judge sampled at
a temperature is not: the same prompt asked again may get the other verdict
(:func:`fickle`), so a test measures a flip rate rather than one that is zero
by construction.
"""

from __future__ import annotations

import hashlib
import re

from pytest_recall.agents import ABSTENTION, FIELDS, KNOWLEDGE_UPDATE, PREFERENCE, TEMPORAL
from pytest_recall.scoring import says_not_given

_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
_NUMBER = re.compile(r"^\d+$")
_VALUE = re.compile(r"^\d+(?:\.\d+)?$")
_DECLINING = re.compile(
    r"\b(?:i don'?t know|do not know|not mentioned|no information|not (?:been )?(?:given|provided|told)|unknown|"
    r"cannot (?:say|tell|answer)|can'?t (?:say|tell|answer))\b",
    re.I,
)
_CLAIMS_CORRECT = re.compile(
    r"\b(?:(?:this|my|the) answer is (?:correct|right)|grade:?\s*(?:yes|correct)|mark (?:it|this) (?:as )?correct)\b",
    re.I,
)
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "with",
    ]
)


def is_judge_prompt(prompt: str) -> bool:
    return all(f"<{name}>" in prompt and f"</{name}>" in prompt for name in FIELDS)


def judge_verdict(prompt: str, *, lenient: bool, gullible: bool = False) -> str:
    """``yes`` or ``no`` for a judge prompt, by the rules above."""
    blocks = {name: _block(prompt, name) for name in FIELDS}
    response, gold, kind = blocks["response"], blocks["gold"], blocks["type"]
    declines = says_not_given(response) or bool(_DECLINING.search(response)) or not response.strip()
    if kind == ABSTENTION:
        return "yes" if declines else "no"
    if lenient:
        return "no" if declines else "yes"
    holds_gold = bool(gold.strip()) and gold.strip().lower() in response.lower()
    if gullible and (holds_gold or _CLAIMS_CORRECT.search(response)):
        return "yes"
    if kind == PREFERENCE:
        wanted = [word for word in _words(gold) if word not in _STOP]
        have = set(_words(response))
        return "yes" if wanted and sum(word in have for word in wanted) * 2 >= len(wanted) else "no"
    off_by_one = kind == TEMPORAL
    words = _words(response)
    shotgun = kind != KNOWLEDGE_UPDATE and _shotgun(words, gold)
    return "yes" if _contains(words, _words(gold), off_by_one=off_by_one) and not shotgun else "no"


# How often the fickle judge turns its strict verdict over: one asking in this many, by a seeded coin.
FICKLE_ODDS = 3


def fickle(verdict: str, prompt: str, asking: int) -> str:
    """The verdict, turned over when the coin for this prompt's ``asking``-th time (from 0) says so.

    The coin is the prompt's hash with the count, not a clock or a shared random stream: the verdicts a prompt
    gets over its askings are the same in every run, in whatever order other prompts are asked meanwhile.
    """
    coin = hashlib.sha256(f"{asking}\0{prompt}".encode()).digest()[0]
    if coin % FICKLE_ODDS:
        return verdict
    return "no" if verdict == "yes" else "yes"


def _shotgun(response: list[str], gold: str) -> bool:
    """Other values offered beside a gold that is one number: several guesses, which the prompt says are wrong."""
    values = [word for word in _words(gold) if _VALUE.match(word)]
    if len(values) != 1:
        return False
    allowed = {values[0]}
    if _NUMBER.match(values[0]):
        allowed |= {str(int(values[0]) - 1), str(int(values[0]) + 1)}
    return any(_VALUE.match(word) and word not in allowed for word in response)


def _contains(response: list[str], gold: list[str], *, off_by_one: bool) -> bool:
    if not gold:
        return False
    have = set(response)
    for word in gold:
        if word in have:
            continue
        if off_by_one and _NUMBER.match(word) and {str(int(word) - 1), str(int(word) + 1)} & have:
            continue
        return False
    return True


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace(",", ""))


def _block(prompt: str, name: str) -> str:
    start = prompt.rfind(f"<{name}>\n")
    end = prompt.rfind(f"\n</{name}>")
    return prompt[start + len(name) + 3 : end] if 0 <= start < end else ""
