"""How the notebook handles the abilities suite: keep every ledger and notice, answer from them.

A session of that suite opens with its date. One that shows ledgers or a
correction is filed, whole, under keys that name the account (and the
period, or the voucher and date); the last session's question is answered
from those notes alone: corrections up to the asked date applied, NOT GIVEN
when the notes never covered the account, period or voucher asked about.
Nothing but the notes crosses sessions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from pytest_recall.agents.ledger_solver import money, parse_ledger

NOT_GIVEN = "NOT GIVEN"
LEDGER_TITLE = "Accounts Receivable — subsidiary ledger"
_SESSION = re.compile(r"\ADate of this session: (\d{4}-\d{2}-\d{2})\.")
_ACCOUNT = re.compile(r"^Account (\S+) · .*· period (\d{4}-\d{2}-\d{2}) to (\d{4}-\d{2}-\d{2}) ·", re.MULTILINE)
_DATE = r"(\d{4}-\d{2}-\d{2})"
_WHEN = r"(?:as the books stand now|as the books stood at the close of " + _DATE + ")"
_TOTAL = re.compile(
    r"Question: What is the total of the (Debit|Credit) column of account (\S+) · .*?"
    rf" over every entry dated from {_DATE} to {_DATE}, {_WHEN}\?"
)
_CLOSING = re.compile(rf"Question: What is the balance of account (\S+) · .*? at the close of {_DATE}, {_WHEN}\?")
_VOUCHER = re.compile(rf"Question: What is the amount of voucher (\S+) on account (\S+) · .*?, {_WHEN}\?")
_CORRECTION = re.compile(
    rf"Correction notice for account (\S+) · .*?, issued {_DATE}\. Voucher (\S+) of .*?"
    r" (?:The correct (?:debit|credit) is ([\d,]+\.\d\d)\.|It is reversed in full)"
)


class Memory(Protocol):
    """What the notebook offers: notes by key, newest wins, and every note under a prefix."""

    def remember(self, key: str, value: str) -> None: ...

    def recall_prefix(self, prefix: str) -> list[tuple[str, str]]: ...


@dataclass(frozen=True, slots=True)
class Ask:
    kind: str  # debits, credits, closing or voucher
    account: str
    start: str = ""
    end: str = ""
    voucher: str = ""
    as_of: str | None = None


def is_session(prompt: str) -> bool:
    return _SESSION.match(prompt) is not None


def session_date(prompt: str) -> str | None:
    """The date a session says it is held on."""
    found = _SESSION.match(prompt)
    return None if found is None else found.group(1)


def respond(prompt: str, memory: Memory) -> str:
    """File what the session shows; answer its question, if it asks one."""
    ask = parse_ask(prompt)
    if ask is not None:
        return answer(ask, memory)
    filed = learn(prompt, memory)
    return f"Noted: {filed} {'entry' if filed == 1 else 'entries'} filed." if filed else "Noted."


def learn(prompt: str, memory: Memory) -> int:
    """File every ledger and correction in the prompt; how many notes were made."""
    filed = 0
    chunks = prompt.split(LEDGER_TITLE)
    for chunk in chunks[1:]:
        account = _ACCOUNT.search(chunk)
        ledger = parse_ledger(LEDGER_TITLE + chunk)
        if account is None or ledger is None:
            continue
        code, start, end = account.groups()
        rows = [[e.date, e.voucher, str(e.debit), str(e.credit)] for e in ledger.entries]
        note = {"start": start, "end": end, "opening": str(ledger.opening), "rows": rows}
        memory.remember(f"abilities:ledger:{code}:{start}", json.dumps(note))
        filed += 1
    fix = _CORRECTION.search(" ".join(prompt.split()))
    if fix is not None:
        code, date, voucher, amount = fix.groups()
        value = "0.00" if amount is None else amount.replace(",", "")
        memory.remember(f"abilities:fix:{code}:{voucher}:{date}", value)
        filed += 1
    return filed


def parse_ask(prompt: str) -> Ask | None:
    text = " ".join(prompt.split())
    if match := _TOTAL.search(text):
        side, account, start, end, as_of = match.groups()
        return Ask("debits" if side == "Debit" else "credits", account, start=start, end=end, as_of=as_of)
    if match := _CLOSING.search(text):
        account, end, as_of = match.groups()
        return Ask("closing", account, end=end, as_of=as_of)
    if match := _VOUCHER.search(text):
        voucher, account, as_of = match.groups()
        return Ask("voucher", account, voucher=voucher, as_of=as_of)
    return None


def answer(ask: Ask, memory: Memory) -> str:
    """The figure from the notes, or NOT GIVEN when they do not hold what it needs."""
    ledgers = sorted((json.loads(v) for _, v in memory.recall_prefix(f"abilities:ledger:{ask.account}:")), key=_start)
    fixes = _fixes(memory.recall_prefix(f"abilities:fix:{ask.account}:"), ask.as_of)
    rows = [
        (date, voucher, _amount(d, fixes.get(voucher)), _amount(c, fixes.get(voucher)))
        for g in ledgers
        for date, voucher, d, c in g["rows"]
    ]
    if ask.kind == "voucher":
        found = [d or c for _, voucher, d, c in rows if voucher == ask.voucher]
        return money(found[0]) if found else NOT_GIVEN
    if ask.kind == "closing":
        chain = _contiguous_to(ledgers, ask.end)
        if not chain:
            return NOT_GIVEN
        first = chain[0]["start"]
        moved = sum((d - c for date, _, d, c in rows if first <= date <= ask.end), Decimal(0))
        return money(Decimal(str(chain[0]["opening"])) + moved)
    if not _covers(ledgers, ask.start, ask.end):
        return NOT_GIVEN
    debits = ask.kind == "debits"
    return money(sum((d if debits else c for date, _, d, c in rows if ask.start <= date <= ask.end), Decimal(0)))


def accounts_held(memory: Memory) -> set[str]:
    """The account codes the notes hold a ledger of."""
    return {key.split(":")[2] for key, _ in memory.recall_prefix("abilities:ledger:")}


def _start(ledger: dict[str, object]) -> str:
    return str(ledger["start"])


def _fixes(notes: Sequence[tuple[str, str]], as_of: str | None) -> dict[str, Decimal]:
    """Voucher -> corrected amount, the latest correction dated on or before ``as_of`` winning."""
    fixes: dict[str, Decimal] = {}
    for key, value in sorted(notes, key=lambda note: note[0].rsplit(":", 1)[1]):
        _, _, _, voucher, date = key.split(":")
        if as_of is None or date <= as_of:
            fixes[voucher] = Decimal(value)
    return fixes


def _amount(posted: str, fixed: Decimal | None) -> Decimal:
    amount = Decimal(posted)
    return amount if fixed is None or not amount else fixed


def _months(start: str, end: str) -> list[str]:
    first, last = int(start[:4]) * 12 + int(start[5:7]) - 1, int(end[:4]) * 12 + int(end[5:7]) - 1
    return [f"{m // 12}-{m % 12 + 1:02d}" for m in range(first, last + 1)]


def _covers(ledgers: Sequence[dict[str, object]], start: str, end: str) -> bool:
    held = {str(g["start"])[:7] for g in ledgers}
    return all(month in held for month in _months(start, end))


def _contiguous_to(ledgers: Sequence[dict[str, object]], end: str) -> list[dict[str, object]]:
    """The run of month ledgers that ends with ``end``'s month and has no gap: its opening carries."""
    by_month = {str(g["start"])[:7]: g for g in ledgers}
    chain: list[dict[str, object]] = []
    month = end[:7]
    while month in by_month:
        chain.insert(0, by_month[month])
        year, number = int(month[:4]), int(month[5:7]) - 1
        month = f"{year - (number == 0)}-{(number - 1) % 12 + 1:02d}"
    return chain
