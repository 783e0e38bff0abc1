"""A *lexical* judge for LongMemEval: deterministic, and not the benchmark's official metric.

LongMemEval's own judge is an LLM asked whether a response contains the
correct answer. This judge asks the same question of the words alone: after
normalising both sides, is the gold answer's token sequence contained in the
answer line? Normalising makes equal what is written differently: case,
punctuation and articles go; thousands separators and currency signs go;
number words up to ninety-nine become digits; dates in the usual spellings
(``2023/05/20``, ``May 20th, 2023``, ``20 May 2023``) become one form, month
and day first. A gold answer that offers alternatives ("7 days. 8 days
(including the last day) is also acceptable.") is met by any of them.
Abstention questions (id ending ``_abs``) score 1 for declining and 0 for an
answer.

It misses paraphrase an LLM judge would accept, and preference questions,
whose gold is a rubric rather than a phrase, rarely pass it: every place
that shows its score calls it lexical, so no one mistakes it for the
official number.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Mapping
from typing import Any

METRIC = "longmemeval_lexical"
MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
_UNITS += "seventeen eighteen nineteen"
NUMBER_WORDS = {word: number for number, word in enumerate(_UNITS.split())}
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
DECLINE_PHRASES = (
    "not mentioned",
    "never mentioned",
    "didn't mention",
    "did not mention",
    "no mention",
    "no information",
    "not enough information",
    "insufficient information",
    "not provided",
    "never provided",
    "don't know",
    "do not know",
    "don't have",
    "do not have",
    "cannot answer",
    "can't answer",
    "unable to answer",
    "not given",
    "unknown",
)
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_ISO = re.compile(r"\b(\d{4})[/-](\d{1,2})[/-](\d{1,2})\b")
_MONTH_FIRST = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}}){_ORD}\b(?:,?\s+(\d{{4}})\b)?")
_DAY_FIRST = re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?({_MONTH})\b\.?(?:,?\s+(\d{{4}})\b)?")
_GROUPED = re.compile(r"(?<=\d),(?=\d{3}\b)")
_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")
_TRAILING_ZERO = re.compile(r"\b(\d+)\.0+\b")
_TENS_UNITS = re.compile(rf"\b({'|'.join(TENS)})[- ]({'|'.join(_UNITS.split()[1:10])})\b")
_ARTICLES = frozenset({"a", "an", "the"})
_SPACE_FOR = str.maketrans({ch: " " for ch in string.punctuation if ch != "-"})


def _date(month: int, day: int, year: str | None) -> str:
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return f" {month} {day} {year or ''} "
    # Month and day first, the year after: "May 20" is then found inside "May 20, 2023".
    return f" {month:02d}-{day:02d} {year or ''} "


def _dates(text: str) -> str:
    text = _ISO.sub(lambda m: _date(int(m.group(2)), int(m.group(3)), m.group(1)), text)
    text = _MONTH_FIRST.sub(lambda m: _date(MONTHS[m.group(1)], int(m.group(2)), m.group(3)), text)
    return _DAY_FIRST.sub(lambda m: _date(MONTHS[m.group(2)], int(m.group(1)), m.group(3)), text)


def _numbers(text: str) -> str:
    text = _GROUPED.sub("", text).replace("$", " ")
    text = _TENS_UNITS.sub(lambda m: str(TENS[m.group(1)] + NUMBER_WORDS[m.group(2)]), text)
    text = _ORDINAL.sub(r"\1", text)
    return _TRAILING_ZERO.sub(r"\1", text)


def lexical_tokens(text: str) -> list[str]:
    """The words of ``text`` as the judge compares them."""
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    text = _numbers(_dates(text))
    words = []
    for word in text.translate(_SPACE_FOR).replace("-", " - ").split():
        if word in _ARTICLES or word == "-":
            continue
        if word in NUMBER_WORDS:
            word = str(NUMBER_WORDS[word])
        elif word in TENS:
            word = str(TENS[word])
        words.append(word)
    return words


def gold_forms(gold: str) -> list[list[str]]:
    """The gold answer's token sequences: the whole, and each alternative it declares acceptable."""
    forms = [lexical_tokens(gold)]
    if "acceptable" in gold.lower():
        for part in re.split(r"(?<=[.;])\s+", gold):
            bare = re.sub(r"\([^)]*\)", " ", part)
            bare = re.sub(r"\b(?:is|are)\s+also\s+acceptable\b|\balso acceptable\b", " ", bare, flags=re.I)
            if lexical_tokens(bare):
                forms.append(lexical_tokens(bare))
    return [form for form in forms if form]


def contains(haystack: list[str], needle: list[str]) -> bool:
    width = len(needle)
    return any(haystack[i : i + width] == needle for i in range(len(haystack) - width + 1))


def declines(answer: str) -> bool:
    lowered = unicodedata.normalize("NFKC", answer).lower().replace("\u2019", "'")
    return any(phrase in lowered for phrase in DECLINE_PHRASES)


def score_longmemeval_lexical(tail: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """The lexical verdict of a ``longmemeval`` answer, 1 or 0; see the module docstring."""
    category = expected.get("category")
    verdict: dict[str, Any] = {"category": category, "reported": tail, "metric": METRIC}
    if expected.get("abstention"):
        if declines(tail):
            return {**verdict, "score": 1.0, "reason": "lexical judge: declined, as the abstention question deserves"}
        return {**verdict, "score": 0.0, "reason": "lexical judge: answered a question the sessions never settled"}
    said = lexical_tokens(tail)
    if any(contains(said, form) for form in gold_forms(str(expected["answer"]))):
        return {**verdict, "score": 1.0, "reason": "lexical judge: the answer line contains the gold answer"}
    reason = "lexical judge: the gold answer is not in the answer line"
    if declines(tail):
        reason = "lexical judge: declined, though the sessions held the answer"
    return {**verdict, "score": 0.0, "reason": reason}
