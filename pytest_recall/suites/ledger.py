"""Ledger cases without end: the session-memory-recall format, generated from a seed.

Eight hand-picked cases are too few to tell a real memory from luck, and too
well known to stay unseen. This module builds as many as asked, in the same
format byte for byte: the same table, the same instructions, the same step-2
wording, with the traps the seed relies on (entries after the period end,
balances that settle to 0.00, ties on rank questions) and answers that cannot
be guessed (money with four whole digits, never the first or last voucher).

Case ``index`` of a seed depends on nothing else, so a suite can be sharded
or collected lazily with :func:`generate_one`, and the output is identical on
every machine and Python version: the random stream is our own splitmix64,
and all money is integer cents until it is printed.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from pytest_recall.cases import Case, make_case
from pytest_recall.suites.rng import SplitMix64

PERIOD_START = "2026-01-01"
PERIOD_END = "2026-03-31"
VOUCHER_PREFIX = "AR-2026-"
MIN_ENTRIES, MAX_ENTRIES = 15, 24  # plus the brought-forward row: 16 to 25 table rows
MIN_ANSWER_CENTS = 1000_00  # four whole digits; the judge ignores shorter numbers as candidates
MAX_ATTEMPTS = 64
COUNTERPARTIES = (
    "Anchor Distributors",
    "BayLine Foods",
    "Cedarworks Ltd",
    "Delta Freight Co",
    "Eastgate Packaging",
    "Fairmont Supplies",
)
# Weighted roughly as often as the seed cases use each one.
DEBIT_NARRATIONS = (
    *("Invoice raised",) * 7,
    *("Service billed",) * 3,
    *("Goods dispatched",) * 2,
    "Freight recharged",
    "Late-payment charge",
)
CREDIT_NARRATIONS = (
    *("Payment received",) * 5,
    *("Settlement received",) * 2,
    "Credit note issued",
    "Refund applied",
    "Discount allowed",
)
MONTH_NAMES = {"2026-01": "January 2026", "2026-02": "February 2026", "2026-03": "March 2026"}
# (month, first day lo, first day hi, last day): the spacing the seed tables show.
MONTH_WALKS = ((1, 3, 6, 29), (2, 1, 4, 28), (3, 1, 4, 29))

# kind -> (answer kind, step-1 question, step-2 reminder); {fields} are filled per case.
WORDING: dict[str, tuple[str, str, str]] = {
    "closing_balance": (
        "money",
        "What is the closing balance on this account at the end of the period?",
        "the closing balance on the account.",
    ),
    "largest_debit_voucher": (
        "voucher",
        "Identify the Voucher number of the single largest debit entry.",
        "the voucher number of the largest debit entry.",
    ),
    "period_debits": (
        "money",
        "Total the Debit column over every entry dated in {month}.",
        "the total debits posted in {month}.",
    ),
    "counterparty_total": (
        "money",
        "Total the Debit column over every entry whose Counterparty is {party}.",
        "the total billed to {party}.",
    ),
    "nth_largest_voucher": (
        "voucher",
        "Rank the debit entries from largest to smallest (break ties by Voucher, ascending)"
        " and identify the Voucher number at position {rank}.",
        "the voucher number at position {rank} when debits are ranked largest first.",
    ),
    "largest_credit_voucher": (
        "voucher",
        "Identify the Voucher number of the single largest credit entry.",
        "the voucher number of the largest credit entry.",
    ),
    "period_credits": (
        "money",
        "Total the Credit column over every entry dated in {month}.",
        "the total credits posted in {month}.",
    ),
    "net_movement": (
        "money",
        "Subtract the total of the Credit column from the total of the Debit column over every entry dated in {month}.",
        "the net movement (debits minus credits) in {month}.",
    ),
    "balance_on_date": (
        "money",
        "What was the balance on this account at the close of {date}?",
        "the balance on the account at the close of {date}.",
    ),
    "counterparty_credits": (
        "money",
        "Total the Credit column over every entry whose Counterparty is {party}.",
        "the total credited to {party}.",
    ),
}
KINDS = tuple(WORDING)

STEP1_OPENING = """\
You are working through a two-part job. This is PART 1 of 2.

Below is an extract from an internal ledger.

Accounts Receivable — subsidiary ledger
Account 1200 · Trade Debtors · period {start} to {end} · USD

"""
STEP1_CLOSING = """
Do the calculation now, then state the result once, in one short sentence,
and commit it to memory. You will be asked for it later in a SEPARATE
session -- the table below will NOT be available then, so remembering the
result is the point of this step.
"""
STEP2 = """\
This is PART 2 of 2, continuing the job you started earlier.

Earlier you worked through a ledger extract and computed one value:
{reminder}

Report that value now.

Output ONLY the value on the last line -- no explanation, no units, no
quotes, no surrounding prose. If you genuinely do not have the value,
output exactly: UNKNOWN
"""
# Measured from the seed: amounts end at columns 81, 93 and 106. "Balance brought
# forward" is one character wider than its field, so that row runs to 107, as there.
ROW = "{0:<10}  {1:<12} {2:<22} {3:<20}{4:>13}{5:>12}{6:>13}"
HEADER = ROW.format("Date", "Voucher", "Narration", "Counterparty", "Debit", "Credit", "Balance")
RULE = "-" * len(HEADER)


class LedgerStream:
    """The ledger's draws over the shared splitmix64 generator, seeded by a tuple of whole numbers."""

    __slots__ = ("_rng",)

    def __init__(self, *parts: int) -> None:
        self._rng = SplitMix64.from_parts(*parts)

    def below(self, n: int) -> int:
        return self._rng.below(n)

    def between(self, low: int, high: int) -> int:
        return low + self.below(high - low + 1)

    def chance(self, percent: int) -> bool:
        return self.below(100) < percent

    def pick(self, options: Sequence[str]) -> str:
        return options[self.below(len(options))]


@dataclass(frozen=True, slots=True)
class Line:
    """A planned entry. A clearing credit takes whatever the balance is when it posts."""

    date: str
    narration: str
    counterparty: str
    debit: int = 0
    credit: int = 0
    clears: bool = False


@dataclass(frozen=True, slots=True)
class Posting:
    """An entry as printed, amounts in cents."""

    date: str
    voucher: str
    narration: str
    counterparty: str
    debit: int
    credit: int
    balance: int


@dataclass(frozen=True, slots=True)
class Table:
    """The ledger extract: what was planned, and what it posts to."""

    opening: int
    first_voucher: int
    lines: tuple[Line, ...]
    postings: tuple[Posting, ...]
    in_period: tuple[Posting, ...]
    after_period: tuple[Posting, ...]


@dataclass(frozen=True, slots=True)
class Ask:
    """The question put to the agent and its one right answer."""

    kind: str
    fields: tuple[tuple[str, str], ...]
    answer: str


def generate(seed: int, count: int, *, suite: str = "ledger") -> list[Case]:
    """The first ``count`` cases of ``seed``; a longer run only appends to a shorter one."""
    if count < 0:
        raise ValueError(f"ledger suite: count must be 0 or more, not {count}")
    return [generate_one(seed, index, suite=suite) for index in range(count)]


def generate_one(seed: int, index: int, *, suite: str = "ledger") -> Case:
    """Case ``index`` (from 0) of ``seed``, built from those two numbers alone."""
    if index < 0:
        raise ValueError(f"ledger suite: case index must be 0 or more, not {index}")
    kind = KINDS[index % len(KINDS)]  # rotate, so any ten in a row cover every category
    source = f"ledger seed={seed} #{index}"
    table, ask = _build(seed, index, kind, source)
    answer_kind, question, reminder = WORDING[kind]
    fields = dict(ask.fields)
    case_id = f"ledger_{index + 1:04d}"
    return make_case(
        case_id=case_id,
        suite=suite,
        prompts=[render_step1(table, question.format(**fields)), STEP2.format(reminder=reminder.format(**fields))],
        expected={"id": case_id, "category": kind, "answer": ask.answer, "answer_kind": answer_kind},
        source=source,
    )


def render_step1(table: Table, question: str) -> str:
    """The step-1 prompt: the seed's framing around this table and question, byte for byte."""
    rows = [
        HEADER,
        RULE,
        ROW.format(PERIOD_START, "", "Balance brought forward", "", "", "", money(table.opening)),
    ]
    for p in table.postings:
        debit, credit = (money(p.debit) if p.debit else ""), (money(p.credit) if p.credit else "")
        rows.append(ROW.format(p.date, p.voucher, p.narration, p.counterparty, debit, credit, money(p.balance)))
    opening = STEP1_OPENING.format(start=PERIOD_START, end=PERIOD_END)
    return opening + "\n".join(rows) + "\n\n" + question + "\n" + STEP1_CLOSING


def money(cents: int) -> str:
    return f"{cents // 100:,}.{cents % 100:02d}"


def plain_money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


# --- building one case ------------------------------------------------------------


def _build(seed: int, index: int, kind: str, source: str) -> tuple[Table, Ask]:
    """Try derived sub-seeds until one yields a case every rule accepts; bounded, then give up loudly."""
    reason: str | None = None
    for attempt in range(MAX_ATTEMPTS):
        stream = LedgerStream(seed, index, attempt)
        table = _plan_table(stream)
        if table is None:
            reason = f"no table of {MIN_ENTRIES} to {MAX_ENTRIES} entries"
            continue
        built = PICKERS[kind](stream, table)
        if built is None:
            reason = f"no table could carry a {kind} question"
            continue
        reason = _rule_breach(*built)
        if reason is None:
            return built
    raise ValueError(
        f"{source}: no {kind} case met the rules in {MAX_ATTEMPTS} attempts (last: {reason}); try another seed"
    )


def _rule_breach(table: Table, ask: Ask) -> str | None:
    """Why this case must not be emitted, or None. The last word, whatever the pickers did."""
    if not MIN_ENTRIES <= len(table.postings) <= MAX_ENTRIES:
        return f"{len(table.postings)} entries"
    if WORDING[ask.kind][0] == "voucher":
        if ask.answer in (table.postings[0].voucher, table.postings[-1].voucher):
            return "answer is the first or last voucher"
    elif int(ask.answer.split(".")[0]) * 100 < MIN_ANSWER_CENTS:
        return f"answer {ask.answer} has fewer than four whole digits"
    return None


def _plan_table(stream: LedgerStream) -> Table | None:
    in_dates = _period_dates(stream)
    target = stream.between(MIN_ENTRIES, MAX_ENTRIES)
    after_dates: list[str] = []
    if stream.chance(35):  # entries after the period end: the extract runs on into April
        day = stream.between(1, 6)
        for _ in range(stream.between(1, 2)):
            after_dates.append(f"2026-04-{day:02d}")
            day += stream.between(2, 7)
    else:
        before_march = sum(1 for d in in_dates if d < "2026-03")
        in_dates = in_dates[: max(target, before_march + 2)]
    if not MIN_ENTRIES <= len(in_dates) + len(after_dates) <= MAX_ENTRIES:
        return None
    opening, lines = walk_entries(stream, in_dates + after_dates)
    return post_entries(opening, stream.between(1000, 9999 - MAX_ENTRIES), lines)


def _period_dates(stream: LedgerStream) -> list[str]:
    dates = []
    for month, first_low, first_high, last_day in MONTH_WALKS:
        day = stream.between(first_low, first_high)
        while day <= last_day:
            dates.append(f"2026-{month:02d}-{day:02d}")
            day += stream.between(2, 7)
    return dates


def walk_entries(stream: LedgerStream, dates: list[str]) -> tuple[int, tuple[Line, ...]]:
    """The opening balance and a plausible run of entries; a credit never overdraws, it settles to 0.00.

    One table in three or so runs low, with credits that settle the account
    outright, so 0.00 balances (and a debit equal to its own balance) turn up.
    """
    settling = stream.chance(40)
    opening = stream.between(5000_00, 12000_00 if settling else 25000_00)
    credit_percent = stream.between(15, 45) + (15 if settling else 0)
    balance, lines = opening, []
    for date in dates:
        party = stream.pick(COUNTERPARTIES)
        wants_credit = stream.chance(credit_percent + (30 if balance > 45000_00 else 0))
        if balance < 100_00 or not wants_credit:
            amount = stream.between(200_00, 9499_99)
            lines.append(Line(date, stream.pick(DEBIT_NARRATIONS), party, debit=amount))
            balance += amount
            continue
        amount = stream.between(500_00, 9499_99)
        clears = amount >= balance or (settling and balance <= 9499_99 and stream.chance(60))
        lines.append(Line(date, stream.pick(CREDIT_NARRATIONS), party, credit=0 if clears else amount, clears=clears))
        balance = 0 if clears else balance - amount
    return opening, tuple(lines)


def post_entries(opening: int, first_voucher: int, lines: tuple[Line, ...]) -> Table:
    balance, postings = opening, []
    for offset, line in enumerate(lines):
        credit = balance if line.clears else line.credit
        balance += line.debit - credit
        voucher = f"{VOUCHER_PREFIX}{first_voucher + offset:04d}"
        postings.append(Posting(line.date, voucher, line.narration, line.counterparty, line.debit, credit, balance))
    in_period = tuple(p for p in postings if p.date <= PERIOD_END)
    return Table(opening, first_voucher, lines, tuple(postings), in_period, tuple(postings[len(in_period) :]))


# --- the questions --------------------------------------------------------------------
# Each picker returns the (possibly reshaped) table and the question, or None when
# this table cannot carry that kind of question well; the caller then tries again.
# Entries after the period only matter where the wording names the period; for
# every other question the picker insists they change nothing, so the answer
# does not hinge on reading "the single largest debit" as in-period or not.

Built = tuple[Table, Ask]
_Picker = Callable[["LedgerStream", Table], "Built | None"]


def _closing_balance(stream: LedgerStream, table: Table) -> Built | None:
    closing = table.in_period[-1].balance
    return table, Ask("closing_balance", (), plain_money(closing))


def _balance_on_date(stream: LedgerStream, table: Table) -> Built | None:
    entries = table.in_period
    if len(entries) < 5:
        return None
    at = stream.between(1, len(entries) - 3)
    day = datetime.date.fromisoformat(entries[at].date)
    gap = (datetime.date.fromisoformat(entries[at + 1].date) - day).days
    if gap > 1 and stream.chance(60):  # a date with no entry: the balance carries from the last one
        day += datetime.timedelta(days=stream.between(1, gap - 1))
    return table, Ask("balance_on_date", (("date", day.isoformat()),), plain_money(entries[at].balance))


def _largest_voucher(side: str) -> _Picker:
    def pick(stream: LedgerStream, table: Table) -> Built | None:
        ranked = _ranked(table.in_period, side)
        if len(ranked) < 3 or ranked[0][0] == ranked[1][0]:
            return None
        if any(amount >= ranked[0][0] for amount, _ in _ranked(table.after_period, side)):
            return None
        return table, Ask(f"largest_{side}_voucher", (), ranked[0][1])

    return pick


def _nth_largest_voucher(stream: LedgerStream, table: Table) -> Built | None:
    rank = stream.between(2, 4)
    ranked = _ranked(table.in_period, "debit")
    if len(ranked) < rank + 3:
        return None
    if stream.chance(50):  # a tie at the asked position, so the voucher tie-break decides
        high, low = (rank - 2, rank - 1) if stream.chance(50) else (rank - 1, rank)
        table = _with_debit(table, ranked[low][1], ranked[high][0])
        ranked = _ranked(table.in_period, "debit")
    if _ranked(table.postings, "debit")[rank - 1] != ranked[rank - 1]:
        return None
    return table, Ask("nth_largest_voucher", (("rank", str(rank)),), ranked[rank - 1][1])


def _ranked(postings: Iterable[Posting], side: str) -> list[tuple[int, str]]:
    """(amount, voucher), largest first and ties by voucher ascending, as the question defines rank."""
    amounts = [(_on_side(p, side), p.voucher) for p in postings]
    return sorted(((a, v) for a, v in amounts if a), key=lambda pair: (-pair[0], pair[1]))


def _on_side(posting: Posting, side: str) -> int:
    return posting.debit if side == "debit" else posting.credit


def _with_debit(table: Table, voucher: str, amount: int) -> Table:
    """The table with one debit raised; only raising, so no later credit can overdraw."""
    at = int(voucher.removeprefix(VOUCHER_PREFIX)) - table.first_voucher
    lines = (*table.lines[:at], replace(table.lines[at], debit=amount), *table.lines[at + 1 :])
    return post_entries(table.opening, table.first_voucher, lines)


def _monthly(kind: str, measure: Callable[[Posting], int], needs: Callable[[list[Posting]], bool]) -> _Picker:
    def pick(stream: LedgerStream, table: Table) -> Built | None:
        totals: dict[str, int] = {}
        for month in MONTH_NAMES:
            entries = [p for p in table.in_period if p.date.startswith(month)]
            total = sum(measure(p) for p in entries)
            if needs(entries) and total >= MIN_ANSWER_CENTS:
                totals[month] = total
        if not totals:
            return None
        month = stream.pick(sorted(totals))
        return table, Ask(kind, (("month", MONTH_NAMES[month]),), plain_money(totals[month]))

    return pick


def _by_party(kind: str, side: str) -> _Picker:
    def pick(stream: LedgerStream, table: Table) -> Built | None:
        totals: dict[str, int] = {}
        two_sided: set[str] = set()
        for party in COUNTERPARTIES:
            entries = [p for p in table.in_period if p.counterparty == party]
            amounts = [_on_side(p, side) for p in entries]
            if sum(1 for a in amounts if a) >= 2 and sum(amounts) >= MIN_ANSWER_CENTS:
                totals[party] = sum(amounts)
                if any(p.debit for p in entries) and any(p.credit for p in entries):
                    two_sided.add(party)
        late = {p.counterparty for p in table.after_period if _on_side(p, side)}
        eligible = sorted(set(totals) - late)
        preferred = sorted(two_sided - late)
        if not eligible:
            return None
        party = stream.pick(preferred if preferred and stream.chance(70) else eligible)
        return table, Ask(kind, (("party", party),), plain_money(totals[party]))

    return pick


def _count(side: str, least: int) -> Callable[[list[Posting]], bool]:
    return lambda entries: sum(1 for p in entries if _on_side(p, side)) >= least


PICKERS: dict[str, _Picker] = {
    "closing_balance": _closing_balance,
    "largest_debit_voucher": _largest_voucher("debit"),
    "period_debits": _monthly("period_debits", lambda p: p.debit, _count("debit", 2)),
    "counterparty_total": _by_party("counterparty_total", "debit"),
    "nth_largest_voucher": _nth_largest_voucher,
    "largest_credit_voucher": _largest_voucher("credit"),
    "period_credits": _monthly("period_credits", lambda p: p.credit, _count("credit", 2)),
    "net_movement": _monthly(
        "net_movement", lambda p: p.debit - p.credit, lambda e: _count("debit", 1)(e) and _count("credit", 1)(e)
    ),
    "balance_on_date": _balance_on_date,
    "counterparty_credits": _by_party("counterparty_credits", "credit"),
}
