"""The abilities suite: ledgers spread over many sessions, to test more than one remembered fact.

Two sessions and one fact test the simplest memory there is. Each case here
spreads ledgers of the seed's format over several sessions and asks one
question at the end, in one of seven categories: totals that need every
session (``multi_session_total``), corrections that change a figure
(``knowledge_update``), the figure as it stood before a correction
(``as_of``), lookalike accounts (``interference``), unrelated sessions in
between (``distractor_sessions``), questions about what was never given
(``abstention``), and one ledger hidden among many (``long_haystack``).

Every question names its account and period, and every account code carries
the case number, so that questions stay unambiguous when many cases share one
memory (``--recall-scope=suite``). Money answers follow the seed's rules:
four whole digits or more, and never a round figure.

The table, the random stream and the walk of entries are the ledger
generator's own, so the two families draw ledgers the same way.
"""

from __future__ import annotations

import calendar
import datetime
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from pytest_recall.cases import Case, make_case
from pytest_recall.suites.ledger import (
    COUNTERPARTIES,
    HEADER,
    MAX_ATTEMPTS,
    MIN_ANSWER_CENTS,
    ROW,
    RULE,
    LedgerStream,
    Line,
    Posting,
    Table,
    money,
    plain_money,
    post_entries,
    walk_entries,
)

CATEGORIES = (
    "multi_session_total",
    "knowledge_update",
    "as_of",
    "interference",
    "distractor_sessions",
    "abstention",
    "long_haystack",
)
NOT_GIVEN = "NOT GIVEN"
YEAR = 2026
# 2: voucher ids never repeat within an account, and no question is dated before the end of the period it asks
# about (so a date alone never says the answer was not given). 1: the first cases, byte for byte.
VERSION = 2
VERSIONS = (1, 2)
# The highest voucher number the ledgers' four-digit ids can hold.
LAST_VOUCHER = 9999
# The bundled suite's haystack: well under the 128 KiB Linux allows one argv string.
DEFAULT_HAYSTACK_BYTES = 60_000
# Above this a step no longer fits argv on every system: deliver it with --recall-prompt=stdin or file.
ARGV_SAFE_BYTES = 100_000
# Account codes have three digits for the slot: a haystack of this size stays below 1000 accounts.
MAX_HAYSTACK_BYTES = 1_200_000
# Branch names in near pairs, so lookalike accounts also read alike.
BRANCHES = (
    "Harbour Street",
    "Harbour Road",
    "Mill Lane",
    "Mill Road",
    "Station Road",
    "Station Street",
    "Northgate",
    "Northfield",
    "Southgate",
    "Southfield",
    "Kingsway",
    "Queensway",
)
MEMO_LINES = (
    "{party} asked for copies of its statements to go to a new finance contact.",
    "{party} has moved its accounts payable team to a shared mailbox.",
    "The quarterly review with {party} is moved to the second week of the month.",
    "{party} confirmed that remittance advices will now arrive by email only.",
    "Please stop sending paper reminders to {party}; it prefers the portal.",
    "{party} queried the layout of the last statement but disputes no figure.",
    "Credit control will visit {party} next month to agree a payment calendar.",
    "{party} changed its purchase-order format; nothing on the ledger changes.",
)

SESSION_HEAD = "Date of this session: {date}.\n\n"
LEDGER_INTRO = "Below is an extract from an internal ledger.\n\n"
LEDGER_TITLE = "Accounts Receivable — subsidiary ledger\nAccount {account} · period {start} to {end} · USD\n\n"
LEDGER_CLOSING = """
Read the extract and commit what matters to memory: later sessions will ask
about this account and period, and this table will NOT be shown again.
Reply with one short sentence of acknowledgement.
"""
CORRECTION = """\
Correction notice for account {account}, issued {date}.

Voucher {voucher} of {posted} ({narration}, {party}) was posted with a {side} of {old}.
{change}
The correction takes effect on {date}; every other entry stands as posted.

Commit the correction to memory. Reply with one short sentence of acknowledgement.
"""
AMENDED = "The correct {side} is {new}."
REVERSED = "It is reversed in full: from {date} it counts as never posted."
MEMO = """\
A note from the credit-control team, for the file:

{lines}

No figure needs working out here. Reply with one short sentence of acknowledgement.
"""
HAYSTACK_INTRO = """\
Below is the month-end pack: ledger extracts for many accounts, with the
notes filed alongside them. Only some of it will matter later.

"""
HAYSTACK_CLOSING = """
Commit what matters to memory: later sessions will ask about these accounts
and periods, and this pack will NOT be shown again.
Reply with one short sentence of acknowledgement.
"""
QUESTION = """\
This is the last session of the job. Earlier sessions showed you ledger
extracts and notices; none of them is repeated here.

Question: {question}

Output ONLY the value on the last line -- no explanation, no units, no
quotes, no surrounding prose. If the account, voucher or period asked
about was never given to you in an earlier session, output exactly: NOT GIVEN
If it was given but you genuinely do not have the value, output exactly: UNKNOWN
"""
ASKS = {
    "debits": "What is the total of the Debit column of account {account}"
    " over every entry dated from {start} to {end}, {when}?",
    "credits": "What is the total of the Credit column of account {account}"
    " over every entry dated from {start} to {end}, {when}?",
    "closing": "What is the balance of account {account} at the close of {end}, {when}?",
    "voucher": "What is the amount of voucher {voucher} on account {account}, {when}?",
}
NOW = "as the books stand now"
AS_OF = "as the books stood at the close of {date}"


@dataclass(frozen=True, slots=True)
class Account:
    """An account as the prompts name it: a code that carries the case number, and a branch."""

    code: str
    branch: str

    @property
    def label(self) -> str:
        return f"{self.code} · Trade Debtors · {self.branch} branch"


@dataclass(frozen=True, slots=True)
class MonthLedger:
    """One month of one account, as posted."""

    account: Account
    month: int
    table: Table

    @property
    def start(self) -> str:
        return f"{YEAR}-{self.month:02d}-01"

    @property
    def end(self) -> str:
        return f"{YEAR}-{self.month:02d}-{calendar.monthrange(YEAR, self.month)[1]:02d}"

    @property
    def closing(self) -> int:
        return self.table.postings[-1].balance


@dataclass(frozen=True, slots=True)
class Correction:
    """A later notice: one voucher's amount changed (to 0 when reversed) from ``date`` on."""

    account: Account
    voucher: str
    date: str
    amount: int


@dataclass(frozen=True, slots=True)
class Books:
    """What a case's sessions gave, in the order they gave it: the ground truth for its question."""

    ledgers: tuple[MonthLedger, ...]
    corrections: tuple[Correction, ...] = ()

    def entries(self, account: Account, as_of: str | None) -> list[tuple[Posting, int, int]]:
        """(posting, debit, credit) of every entry of ``account``, corrections up to ``as_of`` applied."""
        changed: dict[str, int] = {}
        for fix in sorted(self.corrections, key=lambda c: c.date):
            if fix.account == account and (as_of is None or fix.date <= as_of):
                changed[fix.voucher] = fix.amount
        out = []
        for ledger in self.ledgers:
            if ledger.account != account:
                continue
            for p in ledger.table.postings:
                amount = changed.get(p.voucher)
                if amount is None:
                    out.append((p, p.debit, p.credit))
                else:
                    out.append((p, amount if p.debit else 0, amount if p.credit else 0))
        return out

    def covers(self, account: Account, start: str, end: str) -> bool:
        """Whether every month from ``start`` to ``end`` of ``account`` was shown."""
        shown = {ledger.month for ledger in self.ledgers if ledger.account == account}
        return all(month in shown for month in range(int(start[5:7]), int(end[5:7]) + 1))

    def opening(self, account: Account) -> int:
        return min(
            (ledger for ledger in self.ledgers if ledger.account == account), key=lambda g: g.month
        ).table.opening


@dataclass(frozen=True, slots=True)
class Question:
    kind: str
    account: Account
    start: str = ""
    end: str = ""
    voucher: str = ""
    as_of: str | None = None

    def text(self) -> str:
        when = NOW if self.as_of is None else AS_OF.format(date=self.as_of)
        return ASKS[self.kind].format(
            account=self.account.label, start=self.start, end=self.end, voucher=self.voucher, when=when
        )


def answer_cents(books: Books, question: Question) -> int | None:
    """The one right answer in cents, or None when the sessions never gave what it needs."""
    entries = books.entries(question.account, question.as_of)
    if not entries:
        return None
    if question.kind == "voucher":
        found = [debit or credit for p, debit, credit in entries if p.voucher == question.voucher]
        return found[0] if found else None
    start = question.end[:8] + "01" if question.kind == "closing" else question.start
    if not books.covers(question.account, start, question.end):
        return None
    if question.kind == "closing":
        moved = sum(debit - credit for p, debit, credit in entries if p.date <= question.end)
        return books.opening(question.account) + moved
    debits = question.kind == "debits"
    return sum(debit if debits else credit for p, debit, credit in entries if question.start <= p.date <= question.end)


# --- rendering ----------------------------------------------------------------------


def render_table(ledger: MonthLedger) -> str:
    """The seed's table for one month, brought forward from the month's first day."""
    table = ledger.table
    rows = [HEADER, RULE, ROW.format(ledger.start, "", "Balance brought forward", "", "", "", money(table.opening))]
    for p in table.postings:
        debit, credit = (money(p.debit) if p.debit else ""), (money(p.credit) if p.credit else "")
        rows.append(ROW.format(p.date, p.voucher, p.narration, p.counterparty, debit, credit, money(p.balance)))
    title = LEDGER_TITLE.format(account=ledger.account.label, start=ledger.start, end=ledger.end)
    return title + "\n".join(rows) + "\n"


def ledger_session(date: str, ledger: MonthLedger) -> str:
    return SESSION_HEAD.format(date=date) + LEDGER_INTRO + render_table(ledger) + LEDGER_CLOSING


def correction_session(date: str, books: Books, fix: Correction) -> str:
    posting = next(
        p for g in books.ledgers if g.account == fix.account for p in g.table.postings if p.voucher == fix.voucher
    )
    side = "debit" if posting.debit else "credit"
    old = posting.debit or posting.credit
    change = REVERSED.format(date=fix.date) if fix.amount == 0 else AMENDED.format(side=side, new=money(fix.amount))
    body = CORRECTION.format(
        account=fix.account.label,
        date=fix.date,
        voucher=fix.voucher,
        posted=posting.date,
        narration=posting.narration,
        party=posting.counterparty,
        side=side,
        old=money(old),
        change=change,
    )
    return SESSION_HEAD.format(date=date) + body


def memo_session(date: str, stream: LedgerStream) -> str:
    return SESSION_HEAD.format(date=date) + MEMO.format(lines=_memo_lines(stream, stream.between(2, 4)))


def _memo_lines(stream: LedgerStream, count: int) -> str:
    return " ".join(stream.pick(MEMO_LINES).format(party=stream.pick(COUNTERPARTIES)) for _ in range(count))


def question_session(date: str, question: Question) -> str:
    return SESSION_HEAD.format(date=date) + QUESTION.format(question=question.text())


# --- drawing ledgers ----------------------------------------------------------------


def _month_dates(stream: LedgerStream, month: int) -> list[str]:
    last = calendar.monthrange(YEAR, month)[1]
    day, dates = stream.between(1, 4), []
    while day <= last - 1:
        dates.append(f"{YEAR}-{month:02d}-{day:02d}")
        day += stream.between(1, 4)
    return dates


def draw_month(
    stream: LedgerStream, account: Account, month: int, opening: int | None = None, first_voucher: int | None = None
) -> MonthLedger | None:
    """A month of entries from the ledger generator's walk.

    ``opening`` carries a previous month's closing, ``first_voucher`` its
    voucher numbering on (else a number is drawn).
    """
    dates = _month_dates(stream, month)[: stream.between(8, 13)]
    walk_opening, lines = walk_entries(stream, dates)
    drawn = stream.between(1000, 9900)
    first = drawn if first_voucher is None else first_voucher
    if first + len(lines) - 1 > LAST_VOUCHER:
        return None
    table = post_entries(walk_opening if opening is None else opening, first, lines)
    if any(p.balance < 0 for p in table.postings):
        return None
    return MonthLedger(account, month, table)


def _lookalike(stream: LedgerStream, base: MonthLedger, account: Account) -> MonthLedger:
    """The same month with a third or so of the amounts moved a little: similar figures, other answers."""
    lines: list[Line] = []
    for line in base.table.lines:
        if stream.chance(35) and (line.debit or line.credit):
            delta = stream.between(1_01, 499_99) * (1 if stream.chance(50) else -1)
            if line.debit:
                line = replace(line, debit=max(100_01, line.debit + delta))
            else:
                line = replace(line, credit=max(100_01, line.credit + delta))
        lines.append(line)
    opening = base.table.opening + stream.between(0, 1999_98) - 999_99
    return MonthLedger(account, base.month, post_entries(opening, base.table.first_voucher, tuple(lines)))


def hard_to_guess(cents: int) -> bool:
    """Four whole digits or more, and not round: no 0 cents, no whole hundreds of dollars."""
    return cents >= MIN_ANSWER_CENTS and cents % 100 != 0 and (cents // 100) % 100 != 0


# --- the case plans -------------------------------------------------------------------


@dataclass
class _Plan:
    """Sessions being laid out in date order, and the books they add up to."""

    stream: LedgerStream
    case_no: int
    version: int = 1
    clock: datetime.date = datetime.date(YEAR, 2, 1)
    prompts: list[str] = field(default_factory=list)
    ledgers: list[MonthLedger] = field(default_factory=list)
    corrections: list[Correction] = field(default_factory=list)
    slots: int = 0

    def account(self) -> Account:
        self.slots += 1
        return Account(f"{self.case_no:04d}-{self.slots:03d}", self.stream.pick(BRANCHES))

    def tick(self, low: int = 1, high: int = 6, *, not_before: datetime.date | None = None) -> str:
        self.clock += datetime.timedelta(days=self.stream.between(low, high))
        if not_before is not None and self.clock < not_before:
            self.clock = not_before + datetime.timedelta(days=self.stream.between(0, 3))
        return self.clock.isoformat()

    def show(self, ledger: MonthLedger) -> None:
        after_month = datetime.date.fromisoformat(ledger.end) + datetime.timedelta(days=1)
        self.ledgers.append(ledger)
        self.prompts.append(ledger_session(self.tick(not_before=after_month), ledger))

    def correct(self, ledger: MonthLedger, posting: Posting, amount: int) -> Correction:
        fix = Correction(ledger.account, posting.voucher, self.tick(2, 9), amount)
        self.corrections.append(fix)
        self.prompts.append(correction_session(fix.date, self.books, fix))
        return fix

    def memo(self) -> None:
        self.prompts.append(memo_session(self.tick(), self.stream))

    def month(self, account: Account, month: int, opening: int | None = None) -> MonthLedger | None:
        """A month of ``account``; from version 2 on, its vouchers go on from the account's earlier months."""
        shown = [g for g in self.ledgers if g.account == account]
        first = None
        if self.version >= 2 and shown:
            last = max(int(p.voucher.rsplit("-", 1)[1]) for g in shown for p in g.table.postings)
            first = last + self.stream.between(1, 40)
        drawn = draw_month(self.stream, account, month, opening, first)
        if self.version >= 2 and drawn is not None and any(not (p.debit or p.credit) for p in drawn.table.postings):
            return None  # a settlement of a zero balance: an entry with no amount, which no ledger prints
        return drawn

    @property
    def books(self) -> Books:
        return Books(tuple(self.ledgers), tuple(self.corrections))


Built = tuple[list[str], Question, Books]


def _pick_question(plan: _Plan, ledger: MonthLedger, kinds: tuple[str, ...]) -> Question:
    kind = plan.stream.pick(kinds)
    if kind == "voucher":
        big = [p for p in ledger.table.postings if hard_to_guess(p.debit or p.credit)]
        posting = big[plan.stream.below(len(big))] if big else ledger.table.postings[0]
        return Question("voucher", ledger.account, voucher=posting.voucher)
    return Question(kind, ledger.account, start=ledger.start, end=ledger.end)


def _multi_session_total(plan: _Plan) -> Built | None:
    account = plan.account()
    months = plan.stream.between(2, 4)
    opening: int | None = None
    for month in range(1, months + 1):
        ledger = plan.month(account, month, opening)
        if ledger is None:
            return None
        plan.show(ledger)
        opening = ledger.closing
    first, last = plan.ledgers[0], plan.ledgers[-1]
    question = Question(plan.stream.pick(("debits", "credits")), account, start=first.start, end=last.end)
    return plan.prompts, question, plan.books


def _corrected(plan: _Plan, *, as_of: bool) -> Built | None:
    account = plan.account()
    ledger = plan.month(account, plan.stream.between(1, 4))
    if ledger is None:
        return None
    plan.show(ledger)
    shown_at = plan.clock.isoformat()
    if plan.stream.chance(50):
        other = plan.month(plan.account(), plan.stream.between(1, ledger.month))
        if other is not None:
            plan.show(other)
    kind = plan.stream.pick(("debits", "credits", "closing"))
    side = "debit" if kind == "debits" else "credit" if kind == "credits" else ""
    # Distinct vouchers, so every notice can say truthfully what was first posted.
    fixable = [p for p in ledger.table.postings if not side or (p.debit if side == "debit" else p.credit)]
    fixes = []
    for _ in range(plan.stream.between(1, 2)):
        if not fixable:
            return None
        posting = fixable.pop(plan.stream.below(len(fixable)))
        old = posting.debit or posting.credit
        if plan.stream.chance(25):
            amount = 0
        else:
            delta = plan.stream.between(37_11, 2999_99)
            amount = old + delta if plan.stream.chance(50) or old - delta < 100_01 else old - delta
        fixes.append(plan.correct(ledger, posting, amount))
    when: str | None = None
    if as_of:
        # A date before the last correction that matters: the books as they stood then.
        target = fixes[plan.stream.below(len(fixes))]
        before = datetime.date.fromisoformat(target.date) - datetime.timedelta(days=1)
        floor = datetime.date.fromisoformat(shown_at)
        earlier = [f for f in fixes if f.date < target.date]
        if earlier:
            floor = max(floor, datetime.date.fromisoformat(earlier[-1].date))
        if before < floor:
            return None
        when = (floor + datetime.timedelta(days=plan.stream.below((before - floor).days + 1))).isoformat()
    if plan.stream.chance(40):
        plan.memo()
    question = Question(kind, account, start=ledger.start, end=ledger.end, as_of=when)
    books = plan.books
    # An update must change the figure asked about; an as-of figure must differ from today's.
    other_time = replace(question, as_of=None) if as_of else replace(question, as_of=shown_at)
    if answer_cents(books, question) == answer_cents(books, other_time):
        return None
    return plan.prompts, question, books


def _knowledge_update(plan: _Plan) -> Built | None:
    return _corrected(plan, as_of=False)


def _as_of(plan: _Plan) -> Built | None:
    return _corrected(plan, as_of=True)


def _interference(plan: _Plan) -> Built | None:
    month = plan.stream.between(1, 5)
    base = plan.month(plan.account(), month)
    if base is None:
        return None
    family = [base] + [_lookalike(plan.stream, base, plan.account()) for _ in range(plan.stream.between(2, 3))]
    if any(p.balance < 0 for g in family for p in g.table.postings):
        return None
    order = sorted(range(len(family)), key=lambda _: plan.stream.below(1000))
    for at in order:
        plan.show(family[at])
    target = family[plan.stream.below(len(family))]
    question = _pick_question(plan, target, ("debits", "credits", "closing", "voucher"))
    books = plan.books
    mine = answer_cents(books, question)
    for rival in family:
        if rival is not target and answer_cents(books, replace(question, account=rival.account)) == mine:
            return None
    return plan.prompts, question, books


def _distractor_sessions(plan: _Plan) -> Built | None:
    target = plan.month(plan.account(), plan.stream.between(1, 3))
    if target is None:
        return None
    plan.show(target)
    for _ in range(plan.stream.between(2, 6)):
        if plan.stream.chance(55):
            other = plan.month(plan.account(), plan.stream.between(1, 5))
            if other is None:
                return None
            plan.show(other)
        else:
            plan.memo()
    question = _pick_question(plan, target, ("debits", "credits", "closing", "voucher"))
    return plan.prompts, question, plan.books


def _abstention(plan: _Plan) -> Built | None:
    given = plan.month(plan.account(), plan.stream.between(1, 3))
    if given is None:
        return None
    plan.show(given)
    for _ in range(plan.stream.between(0, 2)):
        other = plan.month(plan.account(), plan.stream.between(1, 5))
        if other is None:
            return None
        plan.show(other)
    shape = plan.stream.pick(("account", "period", "voucher"))
    if shape == "account":
        never = plan.account()  # the next code of this case: close to the given ones, never shown
        question = Question(plan.stream.pick(("debits", "credits", "closing")), never, start=given.start, end=given.end)
    elif shape == "period":
        month = given.month + plan.stream.between(1, 3)
        end = f"{YEAR}-{month:02d}-{calendar.monthrange(YEAR, month)[1]:02d}"
        kind = plan.stream.pick(("debits", "credits", "closing"))
        question = Question(kind, given.account, start=f"{YEAR}-{month:02d}-01", end=end)
    else:
        taken = {p.voucher for g in plan.ledgers for p in g.table.postings}
        number = given.table.first_voucher + len(given.table.postings) + plan.stream.between(3, 60)
        voucher = f"AR-2026-{number:04d}"
        if voucher in taken:
            return None
        question = Question("voucher", given.account, voucher=voucher)
    return plan.prompts, question, plan.books


def _long_haystack(plan: _Plan, haystack_bytes: int) -> Built | None:
    month = plan.stream.between(1, 4)
    target = plan.month(plan.account(), month)
    if target is None:
        return None
    pieces: list[str] = []
    size = len(HAYSTACK_INTRO) + len(HAYSTACK_CLOSING) + len(render_table(target).encode())
    while size < haystack_bytes:
        if plan.stream.chance(75):
            other = plan.month(plan.account(), plan.stream.between(1, 5))
            if other is None:
                continue
            plan.ledgers.append(other)
            piece = render_table(other)
        else:
            piece = _memo_lines(plan.stream, plan.stream.between(3, 8)) + "\n"
        pieces.append(piece)
        size += len(piece.encode()) + 1
    pieces.insert(plan.stream.below(len(pieces) + 1), render_table(target))
    plan.ledgers.append(target)
    date = plan.tick(not_before=datetime.date(YEAR, 6, 2))
    plan.prompts.append(SESSION_HEAD.format(date=date) + HAYSTACK_INTRO + "\n".join(pieces) + HAYSTACK_CLOSING)
    question = _pick_question(plan, target, ("debits", "credits", "closing", "voucher"))
    return plan.prompts, question, plan.books


def repeated_vouchers(books: Books) -> set[tuple[Account, str]]:
    """(account, voucher) pairs that more than one entry of the same account carries."""
    seen: set[tuple[Account, str]] = set()
    repeated = set()
    for ledger in books.ledgers:
        for posting in ledger.table.postings:
            key = (ledger.account, posting.voucher)
            if key in seen:
                repeated.add(key)
            seen.add(key)
    return repeated


def asked_until(question: Question) -> datetime.date | None:
    """The last day of the period a question asks about, if it names one."""
    return datetime.date.fromisoformat(question.end) if question.end else None


def _rule_breach(question: Question, answer: int | None, category: str, prompts: list[str]) -> str | None:
    if category == "abstention":
        return None if answer is None else "an abstention question has an answer"
    if answer is None:
        return "the question has no answer"
    if not hard_to_guess(answer):
        return f"answer {plain_money(answer)} is short or round"
    if money(answer) in prompts[-1] or plain_money(answer) in prompts[-1]:
        return "the answer is printed in the question"
    return None


# --- the family ---------------------------------------------------------------------------


def generate(
    seed: int,
    count: int,
    *,
    suite: str = "abilities",
    haystack_bytes: int = DEFAULT_HAYSTACK_BYTES,
    version: int = VERSION,
) -> list[Case]:
    """The first ``count`` cases of ``seed``; a longer run only appends to a shorter one."""
    return list(iter_cases(seed, count, suite=suite, haystack_bytes=haystack_bytes, version=version))


def iter_cases(
    seed: int,
    count: int,
    *,
    suite: str = "abilities",
    haystack_bytes: int = DEFAULT_HAYSTACK_BYTES,
    version: int = VERSION,
) -> Iterator[Case]:
    if count < 0:
        raise ValueError(f"abilities suite: count must be 0 or more, not {count}")
    for index in range(count):
        yield generate_one(seed, index, suite=suite, haystack_bytes=haystack_bytes, version=version)


def generate_one(
    seed: int,
    index: int,
    *,
    suite: str = "abilities",
    haystack_bytes: int = DEFAULT_HAYSTACK_BYTES,
    version: int = VERSION,
) -> Case:
    """Case ``index`` (from 0) of ``seed``, built from those numbers alone; categories rotate."""
    if index < 0:
        raise ValueError(f"abilities suite: case index must be 0 or more, not {index}")
    if version not in VERSIONS:
        raise ValueError(f"abilities suite: version must be one of {', '.join(map(str, VERSIONS))}, not {version!r}")
    if not 1_000 <= haystack_bytes <= MAX_HAYSTACK_BYTES:
        raise ValueError(
            f"abilities suite: haystack_bytes must be from 1000 to {MAX_HAYSTACK_BYTES}, not {haystack_bytes}"
        )
    category = CATEGORIES[index % len(CATEGORIES)]
    source = f"abilities seed={seed} #{index}" if version == 1 else f"abilities v{version} seed={seed} #{index}"
    reason = "no attempt"
    for attempt in range(MAX_ATTEMPTS):
        parts = (seed, index, attempt, 0xAB) if version == 1 else (seed, index, attempt, 0xAB, version)
        plan = _Plan(LedgerStream(*parts), case_no=index + 1, version=version)
        built = _long_haystack(plan, haystack_bytes) if category == "long_haystack" else _BUILDERS[category](plan)
        if built is None:
            reason = "the draw could not carry the question"
            continue
        prompts, question, books = built
        if version >= 2 and repeated_vouchers(books):
            reason = "a voucher id repeats within an account"
            continue
        until = asked_until(question) if version >= 2 else None
        # From version 2 every question comes after its period ends: the date never says "not given yet".
        later = None if until is None else until + datetime.timedelta(days=1)
        prompts = [*prompts, question_session(plan.tick(not_before=later), question)]
        answer = answer_cents(books, question)
        breach = _rule_breach(question, answer, category, prompts)
        if breach is not None:
            reason = breach
            continue
        case_id = f"abilities_{index + 1:04d}"
        expected = {
            "id": case_id,
            "category": category,
            "answer": NOT_GIVEN if answer is None else plain_money(answer),
            "answer_kind": "abstain" if answer is None else "money",
        }
        return make_case(case_id=case_id, suite=suite, prompts=prompts, expected=expected, source=source)
    raise ValueError(f"{source}: no {category} case met the rules in {MAX_ATTEMPTS} attempts (last: {reason})")


_BUILDERS = {
    "multi_session_total": _multi_session_total,
    "knowledge_update": _knowledge_update,
    "as_of": _as_of,
    "interference": _interference,
    "distractor_sessions": _distractor_sessions,
    "abstention": _abstention,
}
