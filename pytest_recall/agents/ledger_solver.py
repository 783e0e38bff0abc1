"""Read a ledger prompt the way a careful clerk would, and answer its question.

The reference ``notebook`` agent uses this to prove the harness end to end: it
solves step 1, files the answer under a key, and in step 2 works out the same
key from the wording alone. The key is all that may cross sessions; the table
never does, which is what makes the notebook an honest memory.

Everything here is a pure function of the prompt text: no I/O, no state.
Entries dated after the period line's end belong to the next period and are
left out of every answer; the ledger suite only asks questions whose answer
either names the period or does not depend on those entries.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

CENT = Decimal("0.01")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)

_PERIOD = re.compile(r"period (\d{4}-\d{2}-\d{2}) to (\d{4}-\d{2}-\d{2})")
_ROW = re.compile(r"^\d{4}-\d{2}-\d{2}\b")
_MONEY = re.compile(r"(?<![\d,.])\d{1,3}(?:,\d{3})*\.\d{2}(?![\d.])")
_VOUCHER = re.compile(r"\b[A-Z]{2}-\d{4}-\d{4}\b")
_MONTH = "(" + "|".join(MONTHS) + r") (\d{4})"


@dataclass(frozen=True, slots=True)
class Entry:
    """One posted line of the ledger; exactly one of debit and credit is non-zero."""

    date: str
    voucher: str
    counterparty: str
    debit: Decimal
    credit: Decimal
    balance: Decimal


@dataclass(frozen=True, slots=True)
class Ledger:
    """The table as posted: opening balance, the period, and every entry in order."""

    period_start: str
    period_end: str
    opening: Decimal
    entries: tuple[Entry, ...]

    @property
    def in_period(self) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if self.period_start <= e.date <= self.period_end)


@dataclass(frozen=True, slots=True)
class Question:
    """What was asked: a kind and its one parameter (a month, a name, a rank, a date, or empty)."""

    kind: str
    param: str = ""

    @property
    def key(self) -> str:
        """The memory key: the same string for the step-1 question and the step-2 reminder."""
        return f"{self.kind}:{self.param}" if self.param else self.kind


def solve(prompt: str) -> tuple[str, str] | None:
    """``(memory_key, answer)`` for a step-1 prompt, or None if it holds no ledger question."""
    ledger = parse_ledger(prompt)
    question = parse_question(prompt)
    if ledger is None or question is None:
        return None
    answer = ANSWERERS[question.kind](ledger, question.param)
    return (question.key, answer) if answer is not None else None


def recall_key(prompt: str) -> str | None:
    """The memory key a step-2 prompt asks for, or None if its wording is not recognised."""
    text = _flatten(prompt)
    for pattern, make in _REMINDERS:
        match = pattern.search(text)
        if match:
            return make(match).key
    return None


# --- the table ---------------------------------------------------------------


def parse_ledger(prompt: str) -> Ledger | None:
    """Parse the fixed-width table, placing each amount by the header column it lines up with.

    Amounts are right-aligned under Debit, Credit and Balance, so the column an
    amount belongs to is the header whose right edge is nearest the amount's.
    Nearest, not equal: the brought-forward row runs one character wider.
    """
    lines = prompt.splitlines()
    period = _PERIOD.search(prompt)
    header_at = next((i for i, ln in enumerate(lines) if ln.startswith("Date") and "Balance" in ln), None)
    if period is None or header_at is None:
        return None
    header = lines[header_at]
    try:
        columns = {name: header.index(name) + len(name) for name in ("Debit", "Credit", "Balance")}
        party_from = header.index("Counterparty")
    except ValueError:
        return None
    opening: Decimal | None = None
    entries: list[Entry] = []
    for line in lines[header_at + 1 :]:
        if not _ROW.match(line):
            continue
        amounts = _place_amounts(line, columns)
        voucher = _VOUCHER.search(line)
        if "Balance" not in amounts:
            continue
        if voucher is None:
            opening = amounts["Balance"]
            continue
        first_amount = min((m.start() for m in _MONEY.finditer(line)), default=len(line))
        entries.append(
            Entry(
                date=line[:10],
                voucher=voucher.group(),
                counterparty=line[party_from:first_amount].strip(),
                debit=amounts.get("Debit", Decimal(0)),
                credit=amounts.get("Credit", Decimal(0)),
                balance=amounts["Balance"],
            )
        )
    if opening is None:
        return None
    return Ledger(period.group(1), period.group(2), opening, tuple(entries))


def _place_amounts(line: str, columns: dict[str, int]) -> dict[str, Decimal]:
    placed: dict[str, Decimal] = {}
    for match in _MONEY.finditer(line):
        column = min(columns, key=lambda name: abs(columns[name] - match.end()))
        placed[column] = Decimal(match.group().replace(",", ""))
    return placed


# --- the question --------------------------------------------------------------


def parse_question(prompt: str) -> Question | None:
    """Recognise the step-1 question by its wording."""
    text = _flatten(prompt)
    for pattern, make in _QUESTIONS:
        match = pattern.search(text)
        if match:
            return make(match)
    return None


def _flatten(text: str) -> str:
    """Whitespace collapsed, so a reminder wrapped across lines still matches."""
    return " ".join(text.split())


def _month_key(name: str, year: str) -> str:
    return f"{year}-{MONTHS.index(name) + 1:02d}"


def _side(word: str) -> str:
    return "debit" if word.lower().startswith("debit") else "credit"


_Maker = Callable[[re.Match[str]], Question]

_QUESTIONS: tuple[tuple[re.Pattern[str], _Maker], ...] = (
    (
        re.compile(r"What is the closing balance on this account at the end of the period\?"),
        lambda m: Question("closing_balance"),
    ),
    (
        re.compile(r"Identify the Voucher number of the single largest (debit|credit) entry\."),
        lambda m: Question(f"largest_{m.group(1)}_voucher"),
    ),
    (
        re.compile(r"Total the (Debit|Credit) column over every entry dated in " + _MONTH + r"\."),
        lambda m: Question(f"period_{_side(m.group(1))}s", _month_key(m.group(2), m.group(3))),
    ),
    (
        re.compile(r"Total the Debit column over every entry whose Counterparty is (.+?)\.(?: |$)"),
        lambda m: Question("counterparty_total", m.group(1)),
    ),
    (
        re.compile(r"Total the Credit column over every entry whose Counterparty is (.+?)\.(?: |$)"),
        lambda m: Question("counterparty_credits", m.group(1)),
    ),
    (
        re.compile(
            r"Rank the debit entries from largest to smallest \(break ties by Voucher, ascending\)"
            r" and identify the Voucher number at position (\d+)\."
        ),
        lambda m: Question("nth_largest_voucher", m.group(1)),
    ),
    (
        re.compile(
            r"Subtract the total of the Credit column from the total of the Debit column"
            r" over every entry dated in " + _MONTH + r"\."
        ),
        lambda m: Question("net_movement", _month_key(m.group(1), m.group(2))),
    ),
    (
        re.compile(r"What was the balance on this account at the close of (\d{4}-\d{2}-\d{2})\?"),
        lambda m: Question("balance_on_date", m.group(1)),
    ),
)

_REMINDERS: tuple[tuple[re.Pattern[str], _Maker], ...] = (
    (re.compile(r"computed one value: the closing balance on the account\."), lambda m: Question("closing_balance")),
    (
        re.compile(r"computed one value: the voucher number of the largest (debit|credit) entry\."),
        lambda m: Question(f"largest_{m.group(1)}_voucher"),
    ),
    (
        re.compile(r"computed one value: the total (debits|credits) posted in " + _MONTH + r"\."),
        lambda m: Question(f"period_{m.group(1)}", _month_key(m.group(2), m.group(3))),
    ),
    (
        re.compile(r"computed one value: the total billed to (.+?)\.(?: |$)"),
        lambda m: Question("counterparty_total", m.group(1)),
    ),
    (
        re.compile(r"computed one value: the total credited to (.+?)\.(?: |$)"),
        lambda m: Question("counterparty_credits", m.group(1)),
    ),
    (
        re.compile(r"computed one value: the voucher number at position (\d+) when debits are ranked largest first\."),
        lambda m: Question("nth_largest_voucher", m.group(1)),
    ),
    (
        re.compile(r"computed one value: the net movement \(debits minus credits\) in " + _MONTH + r"\."),
        lambda m: Question("net_movement", _month_key(m.group(1), m.group(2))),
    ),
    (
        re.compile(r"computed one value: the balance on the account at the close of (\d{4}-\d{2}-\d{2})\."),
        lambda m: Question("balance_on_date", m.group(1)),
    ),
)


# --- the answers -----------------------------------------------------------------


def money(value: Decimal) -> str:
    """Two decimals, no separators: the form answer.json uses."""
    return str(value.quantize(CENT))


def _closing_balance(ledger: Ledger, _: str) -> str:
    return money(_balance_through(ledger, ledger.period_end))


def _balance_on_date(ledger: Ledger, date: str) -> str:
    return money(_balance_through(ledger, date))


def _balance_through(ledger: Ledger, date: str) -> Decimal:
    # Recomputed from the opening balance rather than read off the Balance
    # column, so a row whose printed balance is wrong cannot mislead.
    moved = sum((e.debit - e.credit for e in ledger.in_period if e.date <= date), Decimal(0))
    return ledger.opening + moved


def _largest_debit_voucher(ledger: Ledger, _: str) -> str | None:
    return _ranked_voucher([(e.debit, e.voucher) for e in ledger.in_period if e.debit], 1)


def _largest_credit_voucher(ledger: Ledger, _: str) -> str | None:
    return _ranked_voucher([(e.credit, e.voucher) for e in ledger.in_period if e.credit], 1)


def _nth_largest_voucher(ledger: Ledger, rank: str) -> str | None:
    return _ranked_voucher([(e.debit, e.voucher) for e in ledger.in_period if e.debit], int(rank))


def _ranked_voucher(amounts: list[tuple[Decimal, str]], rank: int) -> str | None:
    """Largest amount first, ties by voucher ascending; None when the rank does not exist."""
    ordered = sorted(amounts, key=lambda pair: (-pair[0], pair[1]))
    return ordered[rank - 1][1] if 0 < rank <= len(ordered) else None


def _period_debits(ledger: Ledger, month: str) -> str:
    return money(sum((e.debit for e in ledger.in_period if e.date.startswith(month)), Decimal(0)))


def _period_credits(ledger: Ledger, month: str) -> str:
    return money(sum((e.credit for e in ledger.in_period if e.date.startswith(month)), Decimal(0)))


def _net_movement(ledger: Ledger, month: str) -> str:
    return money(sum((e.debit - e.credit for e in ledger.in_period if e.date.startswith(month)), Decimal(0)))


def _counterparty_total(ledger: Ledger, name: str) -> str:
    return money(sum((e.debit for e in ledger.in_period if e.counterparty == name), Decimal(0)))


def _counterparty_credits(ledger: Ledger, name: str) -> str:
    return money(sum((e.credit for e in ledger.in_period if e.counterparty == name), Decimal(0)))


ANSWERERS: dict[str, Callable[[Ledger, str], str | None]] = {
    "closing_balance": _closing_balance,
    "balance_on_date": _balance_on_date,
    "largest_debit_voucher": _largest_debit_voucher,
    "largest_credit_voucher": _largest_credit_voucher,
    "nth_largest_voucher": _nth_largest_voucher,
    "period_debits": _period_debits,
    "period_credits": _period_credits,
    "net_movement": _net_movement,
    "counterparty_total": _counterparty_total,
    "counterparty_credits": _counterparty_credits,
}
