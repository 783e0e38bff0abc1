"""The abilities suite: right answers, the hard-to-guess rules, stable bytes, and the reference agents.

Answers are checked against an oracle written here from the rendered prompts
alone. It shares no code with the generator or the notebook, and reads the
tables differently: it tells a debit from a credit by the running balance,
not by the column an amount sits in, and it applies corrections by replaying
the notices in date order.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import pytest

from pytest_recall.cases.model import Case, case_files
from pytest_recall.suites import abilities
from pytest_recall.suites.suite_file import family_cases, suite_cases

REPO_DIR = Path(__file__).resolve().parents[1]
BUNDLED = REPO_DIR / "cases" / "abilities"
ORACLE_SEED = 4242
ORACLE_COUNT = 1000
CATEGORIES = {
    "multi_session_total",
    "knowledge_update",
    "as_of",
    "interference",
    "distractor_sessions",
    "abstention",
    "long_haystack",
}
SESSIONS = {
    "multi_session_total": (3, 5),
    "knowledge_update": (3, 6),
    "as_of": (3, 6),
    "interference": (3, 8),
    "distractor_sessions": (4, 8),
    "abstention": (2, 8),
    "long_haystack": (2, 2),
}
# Inner runs of hundreds of cases outlast the fixture's default safety net.
LONG_RUN_TIMEOUT_S = 900.0

# --- the oracle -------------------------------------------------------------------------

AMOUNT = r"[\d,]+\.\d\d"
TITLE = re.compile(r"^Account (\S+) · .* · period (\S+) to (\S+) · USD$")
OPENING = re.compile(rf"^(\S+) +Balance brought forward +({AMOUNT})$")
ENTRY = re.compile(rf"^(\d{{4}}-\d\d-\d\d)  (AR-2026-\d{{4}}) .*?({AMOUNT}) +({AMOUNT})$")
NOTICE = re.compile(
    rf"Correction notice for account (\S+) ·.*?issued (\S+)\. Voucher (\S+) of .*? was posted with a \w+ of {AMOUNT}\."
    rf" (?:The correct \w+ is ({AMOUNT})\.|It is reversed in full)"
)
ASK = re.compile(
    r"Question: What is (?:the total of the (?P<side>Debit|Credit) column of account (?P<a1>\S+) .*? over every"
    r" entry dated from (?P<start>\S+) to (?P<end>\S+),|the balance of account (?P<a2>\S+) .*? at the close of"
    r" (?P<close>\S+),|the amount of voucher (?P<voucher>\S+) on account (?P<a3>\S+) .*?,)"
    r" as the books (?:stand now|stood at the close of (?P<asof>\S+))\?"
)


def amount(text: str) -> Decimal:
    return Decimal(text.replace(",", ""))


@dataclass
class Month:
    opening: Decimal
    entries: list[tuple[str, str, Decimal, Decimal]] = field(default_factory=list)  # date, voucher, debit, credit


def read_months(prompts: list[str]) -> dict[tuple[str, str], Month]:
    """(account, first day) -> the month, from every table in the prompts; debit or credit by the balance."""
    months: dict[tuple[str, str], Month] = {}
    current: Month | None = None
    balance = Decimal(0)
    for prompt in prompts:
        for line in prompt.splitlines():
            if title := TITLE.match(line):
                current = months.setdefault((title.group(1), title.group(2)), Month(Decimal(0)))
            elif current is not None and (opening := OPENING.match(line)):
                current.opening = balance = amount(opening.group(2))
            elif current is not None and (entry := ENTRY.match(line)):
                moved, after = amount(entry.group(3)), amount(entry.group(4))
                debit = moved if after == balance + moved else Decimal(0)
                assert debit or after == balance - moved, line
                current.entries.append((entry.group(1), entry.group(2), debit, moved - debit))
                balance = after
            elif not line.strip():
                continue
            elif not line.startswith(("Date ", "---")):
                current = None
    return months


def read_notices(prompts: list[str]) -> list[tuple[str, str, str, Decimal]]:
    """(issued, account, voucher, new amount) of every correction, in date order."""
    found = []
    for prompt in prompts:
        flat = " ".join(prompt.split())
        for notice in NOTICE.finditer(flat):
            account, issued, voucher, new = notice.groups()
            found.append((issued, account, voucher, Decimal(0) if new is None else amount(new)))
    return sorted(found)


def oracle(case: Case) -> str:
    prompts = [step.prompt for step in case.steps]
    months = read_months(prompts[:-1])
    notices = read_notices(prompts[:-1])
    ask = ASK.search(" ".join(prompts[-1].split()))
    assert ask is not None, prompts[-1]
    account = ask.group("a1") or ask.group("a2") or ask.group("a3")
    as_of = ask.group("asof")
    mine = {first: month for (code, first), month in months.items() if code == account}
    current = {v: new for issued, code, v, new in notices if code == account and (as_of is None or issued <= as_of)}

    def corrected(debit: Decimal, credit: Decimal, voucher: str) -> tuple[Decimal, Decimal]:
        if voucher not in current:
            return debit, credit
        return (current[voucher], Decimal(0)) if debit else (Decimal(0), current[voucher])

    rows = sorted((d, v, *corrected(dr, cr, v)) for m in mine.values() for d, v, dr, cr in m.entries)
    if ask.group("voucher"):
        hits = [dr + cr for _, v, dr, cr in rows if v == ask.group("voucher")]
        return f"{hits[0]:.2f}" if hits else "NOT GIVEN"
    if ask.group("close"):
        close = ask.group("close")
        first = close[:8] + "01"
        while first in mine:  # walk back over the months given without a gap
            year, month = int(first[:4]), int(first[5:7])
            earlier = f"{year - (month == 1)}-{(month - 2) % 12 + 1:02d}-01"
            if earlier not in mine:
                break
            first = earlier
        if first not in mine:
            return "NOT GIVEN"
        total = mine[first].opening + sum(dr - cr for d, _, dr, cr in rows if first <= d <= close)
        return f"{total:.2f}"
    start, end = ask.group("start"), ask.group("end")
    needed = {f"2026-{m:02d}-01" for m in range(int(start[5:7]), int(end[5:7]) + 1)}
    if not needed <= set(mine):
        return "NOT GIVEN"
    column = 2 if ask.group("side") == "Debit" else 3
    return f"{sum(row[column] for row in rows if start <= row[0] <= end):.2f}"


# --- the generator, checked ---------------------------------------------------------------


@pytest.fixture(scope="module")
def oracle_cases() -> list[Case]:
    return abilities.generate(ORACLE_SEED, ORACLE_COUNT)


@pytest.mark.slow
def test_the_oracle_agrees_on_every_one_of_1000_cases(oracle_cases):
    disagreements = [
        (case.case_id, case.expected["answer"], oracle(case))
        for case in oracle_cases
        if oracle(case) != case.expected["answer"]
    ]
    assert disagreements == []
    assert len(oracle_cases) == ORACLE_COUNT


@pytest.mark.slow
def test_every_category_comes_in_its_number_of_sessions_and_money_is_hard_to_guess(oracle_cases):
    assert Counter(case.category for case in oracle_cases) == {
        category: ORACLE_COUNT // 7 + (1 if i < ORACLE_COUNT % 7 else 0)
        for i, category in enumerate(abilities.CATEGORIES)
    }
    for case in oracle_cases:
        low, high = SESSIONS[str(case.category)]
        assert low <= len(case.steps) <= high, case.case_id
        if case.category == "abstention":
            assert case.expected == {**case.expected, "answer": "NOT GIVEN", "answer_kind": "abstain"}
            continue
        answer = str(case.expected["answer"])
        whole, cents = answer.split(".")
        assert case.answer_kind == "money" and len(whole) >= 4, case.case_id
        assert cents != "00" and not whole.endswith("00"), case.case_id
        assert answer not in case.steps[-1].prompt and f"{Decimal(answer):,.2f}" not in case.steps[-1].prompt


def test_every_question_names_its_account_and_period():
    for case in abilities.generate(5, 70):
        question = next(line for line in case.steps[-1].prompt.splitlines() if line.startswith("Question:"))
        assert re.search(r"account \d{4}-\d{3} · Trade Debtors · .+ branch", question), question
        assert re.search(r"\d{4}-\d\d-\d\d|voucher AR-2026-\d{4}", question), question


def test_the_same_seed_gives_the_same_bytes_and_a_longer_run_only_appends():
    first = [case_files(case) for case in abilities.generate(9, 21)]
    again = [case_files(case) for case in abilities.generate(9, 28)]
    assert again[:21] == first
    digest = hashlib.sha256(json.dumps(first, sort_keys=True).encode()).hexdigest()
    assert digest == hashlib.sha256(json.dumps(again[:21], sort_keys=True).encode()).hexdigest()


def test_the_bundled_suite_has_32_cases_per_category_and_stable_bytes():
    cases = list(suite_cases(BUNDLED, "abilities"))
    assert Counter(case.category for case in cases) == dict.fromkeys(CATEGORIES, 32)
    assert max(len(step.prompt.encode()) for case in cases for step in case.steps) < abilities.ARGV_SAFE_BYTES
    blob = json.dumps([case_files(case) for case in cases], sort_keys=True).encode()
    assert hashlib.sha256(blob).hexdigest() == BUNDLED_DIGEST


def test_version_1_still_gives_the_first_bundled_cases_byte_for_byte():
    settings = {"family": "abilities", "version": 1, "seed": 17, "count": 224, "haystack_bytes": 60000}
    cases = list(family_cases(settings, suite="abilities", source="v1"))
    blob = json.dumps([case_files(case) for case in cases], sort_keys=True).encode()
    assert hashlib.sha256(blob).hexdigest() == BUNDLED_V1_DIGEST


# Pinned so a change to the generator (or to the ledger walk it borrows) shows up as a changed suite.
BUNDLED_DIGEST = "63864d2b983c884c624d54ce96c1200f29b4d3de141f946b5f1d7797a12611a3"
BUNDLED_V1_DIGEST = "4f64f6e69e4b860c65cf08da5346ca2765bf46e7b56370deb3082458e7fbdd6c"


def vouchers_repeat(case: Case) -> bool:
    """Whether one account shows the same voucher id in more than one entry, over all the case's sessions."""
    shown: Counter[tuple[str, str]] = Counter()
    for step in case.steps[:-1]:
        for account, chunk in re.findall(r"Account (\S+) · (.*?)(?=\nAccount |\Z)", step.prompt, re.S):
            shown.update((account, voucher) for voucher in re.findall(r"AR-\d{4}-\d{4}", chunk))
    return any(count > 1 for count in shown.values())


def asked_before_its_period_ends(case: Case) -> bool:
    asked = case.steps[-1].prompt
    dated = re.match(r"Date of this session: (\S+)\.", asked)
    assert dated is not None
    ends = re.findall(r"to (\d{4}-\d\d-\d\d),|at the close of (\d{4}-\d\d-\d\d), as the books stand", asked)
    return any((a or b) >= dated.group(1) for a, b in ends)


def test_no_voucher_repeats_within_an_account_and_no_question_comes_before_its_period_ends():
    # The categories where the tells were: a total over months of one account, and abstention.
    at = [i for i in range(4200) if abilities.CATEGORIES[i % 7] in ("multi_session_total", "abstention")]
    tells = {
        version: Counter(
            tell
            for case in (abilities.generate_one(3, i, version=version) for i in at)
            for tell, shown in (("repeat", vouchers_repeat(case)), ("early", asked_before_its_period_ends(case)))
            if shown
        )
        for version in (1, 2)
    }
    # Version 1 had both tells, one rarely and one in a quarter of abstentions; version 2 has neither.
    assert tells[1]["repeat"] > 0 and tells[1]["early"] > 50
    assert tells[2] == Counter()
