"""The agent-supermemory suite, version 2: the same families, rules and judge, without version 1's tells.

In version 1, part 1 gave the transfer question away: its project and field
carried the trail's one injection, its one imported summary and most of its
non-user events, the rehearsal asked the same field, alias events and code
names appeared only in alias cases, and a null answer scored 0.156. Version 2
builds every trail from one grid of projects and fields, and treats every
cell of it alike:

- Every cell gets a chain of user events drawn from the same mixture of the
  eight family patterns; the asked cell's chain is its family's pattern, the
  others are draws. So the asked cell is one of 24 look-alikes.
- Every cell gets its own decorations (unconfirmed suggestions, imported
  summaries, injections that cite a suggestion made before them), drawn the
  same way whether it is asked or not, nearly always one after its last user
  event, so "the latest event" is seldom the answer.
- Two of the four projects have code names tied by an alias event, in every
  family, and their events use either name.
- The rehearsal asks about another cell, of any field, current or as of a date.
- Within a family, answers vary by a fixed cycle of 16 slots: a few cases ask
  the family's null question (nothing decided, or retracted), most do not,
  so no answer is a safe guess. See ``NEVER_DECIDED``, ``RETRACTED`` and
  ``NULL_FLOOR``.

Version 3 keeps all of that and removes two things a guesser could still
use: an imported summary sat on more than half of all cells, the asked one
included, so "the cell with an import" pointed at the answer as often as not;
now imports are rarer (on about a quarter of cells), and the asked cell gets
one no more often than any other. And the null answer no longer earns more
than 0.10 in any family (``no_confirmed_decision`` has one null slot of 16,
not two), so a bundled suite of whole cycles keeps every guesser under 0.10
per family. Version 2 stays, byte for byte, with ``version = 2``.

Everything is drawn from splitmix64 seeded by ``(version, split, index)``, so a
case depends on nothing but those numbers, on every machine and Python
version. The answers come from replaying the drafted events by the rules; the
tests check them against an oracle that reads only the rendered text.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_recall.cases import Case
from pytest_recall.suites.audit import (
    ACTOR_OF_KIND,
    CODE_NAMES,
    EVENT_NOTES,
    FAMILIES,
    FIELDS,
    MAX_SIZE,
    PROJECTS,
    SPLITS,
    SUITE,
    Draft,
    DraftBuilder,
    build_case,
    check_index,
    check_size,
    interleave_chains,
    stamp,
    value_question,
)
from pytest_recall.suites.audit import (
    generate as generate_v1,
)
from pytest_recall.suites.rng import SplitMix64

VERSION = 3
VERSIONS = (2, 3)
# The whole audit suite as a suite file and a verifiers environment name it: every version, the first
# generator's 1 included, and the first generator's splits and size bound.
AUDIT_VERSIONS = (1, *VERSIONS)
AUDIT_SPLITS = SPLITS
AUDIT_MAX_SIZE = MAX_SIZE
PROJECTS_PER_TRAIL = 4
ALIASED_PER_TRAIL = 2
FIELDS_PER_TRAIL = 6
SLOTS = 16  # a family's cases cycle through its variants in this many slots
_SPLIT_CODE = {"train": 0x7472, "eval": 0x6576}
_DECIDES = frozenset({"user_statement", "confirmation", "correction", "retraction"})
# The slots of each family whose transfer answer is null ({"value": null, "evidence": []}): 1 in 16 cases or
# a few more, never a whole family.
NEVER_DECIDED: dict[str, tuple[int, ...]] = {"as_of_before_correction": (7,), "no_confirmed_decision": (3, 11)}
RETRACTED = {"retraction": (1, 9, 5, 13), "reconfirmation_after_retraction": (14,)}  # null, citing the retraction
# Version 3: one never-decided slot in no_confirmed_decision, so no family gives the null answer more than 1 in 16.
NEVER_DECIDED_V3: dict[str, tuple[int, ...]] = {"as_of_before_correction": (7,), "no_confirmed_decision": (3,)}


def never_decided(version: int) -> dict[str, tuple[int, ...]]:
    return NEVER_DECIDED if version == 2 else NEVER_DECIDED_V3


def null_floor(version: int) -> float:
    """The null answer's expected score over whole cycles: 1.0 where nothing was decided, 0.25 citing a retraction."""
    nulls = sum(map(len, never_decided(version).values())) + 0.25 * sum(map(len, RETRACTED.values()))
    return nulls / (SLOTS * len(FAMILIES))


def family_null_floor(version: int, family: str) -> float:
    """The same, within one family: what a bundled suite of whole cycles gives the null answer there."""
    return (len(never_decided(version).get(family, ())) + 0.25 * len(RETRACTED.get(family, ()))) / SLOTS


NULL_FLOOR = null_floor(2)
_ATTEMPTS = 64


@dataclass(frozen=True, slots=True)
class _Mark:
    """Where a cell's as-of question would split its chain; one per cell that has one."""

    cell: int


@dataclass(frozen=True, slots=True)
class _Cell:
    """One project's field: its chain of events in time order, and the name a question calls it by."""

    project: str
    field: str
    ask_name: str
    chain: tuple[Draft | _Mark, ...]


Known = tuple[str | None, tuple[Draft, ...]]


class _Patterns:
    """The family patterns, each a chain of user events for one cell, drafted with the v1 builder."""

    def __init__(
        self, b: DraftBuilder, rng: SplitMix64, names: tuple[str, ...], field: str, mark: _Mark, version: int = 2
    ) -> None:
        self.b, self.rng, self.names, self.field, self.mark = b, rng, names, field, mark
        self.never_decided = never_decided(version)
        self.values = rng.shuffled(FIELDS[field])

    def name(self) -> str:
        return self.rng.choice(self.names)

    def said(self, value: str) -> list[Draft]:
        return self.b.decision(self.name(), self.field, value)

    def then(self, kind: str, value: str | None, ref: Draft, note: str | None = None) -> Draft:
        return self.b.event(self.name(), self.field, kind, value, ref, note)

    def maybe_corrected(self) -> list[Draft]:
        chain = self.said(self.values[0])
        if self.rng.chance():
            chain.append(self.then("correction", self.values[1], chain[-1]))
        return chain

    def suggestion(self, value: str) -> Draft:
        return self.b.event(self.name(), self.field, "assistant_suggestion", value)

    def build(self, family: str, slot: int) -> tuple[list[Draft | _Mark], str]:
        """The chain for ``family`` in ``slot``, and the name a question about it uses."""
        v, mark = self.values, self.mark
        chain: list[Draft | _Mark]
        if family == "alias_resolution":
            asked, other = self.rng.shuffled(self.names)
            if self.rng.chance():
                first = self.b.decision(asked, self.field, v[0])
                chain = [*first, self.b.event(other, self.field, "correction", v[1], first[-1])]
            else:
                chain = [*self.b.decision(other, self.field, v[0])]
            return [*chain, mark] if slot % 4 == 1 else chain, asked
        # Each other family's chain is built by the method of its name, below.
        chain = getattr(self, f"_{family}")(slot)
        return chain, self.name()

    def _explicit_correction(self, slot: int) -> list[Draft | _Mark]:
        v, mark = self.values, self.mark
        chain: list[Draft | _Mark]
        said = self.said(v[0])
        corrected = self.then("correction", v[1], said[-1])
        chain = [*said, corrected]
        if self.rng.chance():
            chain.append(self.then("correction", v[2], corrected))
        chain = [*chain, mark] if slot % 2 else chain
        return chain

    def _as_of_before_correction(self, slot: int) -> list[Draft | _Mark]:
        v, mark = self.values, self.mark
        chain: list[Draft | _Mark]
        if slot in self.never_decided["as_of_before_correction"]:
            said = self.said(v[0])
            chain = [mark, *said, self.then("correction", v[1], said[-1])]
        else:
            before = self.maybe_corrected()
            chain = [*before, mark]
            last = before[-1]
            for n in range(1 + slot % 3):  # one, two or three later user events
                final = n == slot % 3 and slot % 2 == 1
                last = self.then("retraction" if final else "correction", None if final else v[2 + n % 2], last)
                chain.append(last)
        return chain

    def _retraction(self, slot: int) -> list[Draft | _Mark]:
        v, mark = self.values, self.mark
        chain: list[Draft | _Mark]
        before = self.maybe_corrected()
        withdrawn = self.then("retraction", None, before[-1])
        if slot in RETRACTED["retraction"][:2]:
            chain = [*before, withdrawn]
        elif slot in RETRACTED["retraction"]:
            chain = [*before, withdrawn, mark, *self.said(v[2])]
        else:
            chain = [*before, withdrawn, *self.said(v[2])]
            chain = [*chain, mark] if slot % 4 == 2 else chain
        return chain

    def _no_confirmed_decision(self, slot: int) -> list[Draft | _Mark]:
        v, mark = self.values, self.mark
        chain: list[Draft | _Mark]
        nulls = self.never_decided["no_confirmed_decision"]
        current_null, as_of_null = nulls[0], nulls[1] if len(nulls) > 1 else None
        if slot == current_null:
            chain = [self.suggestion(v[0]), self.suggestion(v[1])]
        elif slot == as_of_null:
            chain = [self.suggestion(v[0]), mark, *self.said(v[1])]
        elif slot % 3 == 0:
            offered = self.suggestion(v[0])
            chain = [
                offered,
                self.suggestion(v[1]),
                self.then("confirmation", v[0], offered),
                self.suggestion(v[2]),
            ]
        else:
            chain = [*self.maybe_corrected(), self.suggestion(v[2])]
            if self.rng.chance():
                chain.append(self.suggestion(v[3]))
            chain = [*chain, mark] if slot % 4 == 2 else chain
        return chain

    def _reconfirmation_after_retraction(self, slot: int) -> list[Draft | _Mark]:
        mark = self.mark
        chain: list[Draft | _Mark]
        before = self.maybe_corrected()
        withdrawn = self.then("retraction", None, before[-1])
        again = self.then("confirmation", before[-1].value, before[-1], "user: it stands again")
        if slot in RETRACTED["reconfirmation_after_retraction"]:
            chain = [*before, withdrawn, mark, again]
        else:
            chain = [*before, withdrawn, again]
            chain = [*chain, mark] if slot % 4 == 3 else chain
        return chain

    def _retraction_after_as_of(self, slot: int) -> list[Draft | _Mark]:
        v, mark = self.values, self.mark
        chain: list[Draft | _Mark]
        before = self.maybe_corrected()
        chain = [*before, mark, self.then("retraction", None, before[-1])]
        if slot % 2:
            chain.extend(self.said(v[2]))
        return chain

    def _cross_field_decoy(self, slot: int) -> list[Draft | _Mark]:
        """The chain is plain; the generator checks siblings change later."""
        mark = self.mark
        chain: list[Draft | _Mark]
        chain = [*self.maybe_corrected()]
        chain = [*chain, mark] if slot % 4 == 1 else chain
        return chain


def _decorated(
    b: DraftBuilder, rng: SplitMix64, p: _Patterns, chain: list[Draft | _Mark], version: int = 2
) -> list[Draft | _Mark]:
    """The chain with decorations: nearly always a suggestion or an import after everything, more anywhere before.

    A cell ends up with two to four non-user events whatever its pattern
    brought, so no pattern stands out by its decorations. An injection cites a
    suggestion made before it, on its own cell, and dictates that suggestion's
    value, which no user of the cell ever set.
    """
    spare = p.values[4:]
    out = list(chain)
    wanted = rng.between(2, 4) - sum(isinstance(d, Draft) and d.kind == "assistant_suggestion" for d in chain)
    tail = rng.between(0, 31) != 0 or version >= 3
    # Version 3 imports and injects rarely (a tail import 1 in 5; inserted: an import 1 in 10, an injection 1 in 5),
    # so each lands on a third of cells or fewer, the asked one no more often than any other.
    suggested_up_to, imported_up_to = (3, 6) if version == 2 else (6, 7)
    if tail:
        value = rng.choice(spare)
        if version == 2:
            out.append(p.suggestion(value) if rng.chance() else b.event(p.name(), p.field, "imported_summary", value))
        else:
            # Under the name the cell's last decision used: the latest event under no name is that decision.
            deciding = [d for d in chain if isinstance(d, Draft) and d.kind in _DECIDES]
            name = deciding[-1].project if deciding else p.name()
            decoration = "assistant_suggestion" if rng.between(0, 4) != 0 else "imported_summary"
            out.append(b.event(name, p.field, decoration, value))
        wanted -= 1
    while wanted > 0:
        last = len(out) - 1 if tail else len(out)  # nothing goes after the tail
        where, kind = rng.between(0, last), rng.between(0, 9)
        if kind <= suggested_up_to:
            out.insert(where, p.suggestion(rng.choice(spare)))
        elif kind <= imported_up_to:
            out.insert(where, b.event(p.name(), p.field, "imported_summary", rng.choice(spare)))
        else:
            cited = p.suggestion(rng.choice(spare))
            note = rng.choice(EVENT_NOTES["tool_output"]).format(value=cited.value)
            out.insert(where, cited)
            out.insert(rng.between(where + 1, last + 1), b.event(p.name(), p.field, "tool_output", None, cited, note))
            wanted -= 1
        wanted -= 1
    return out


def _grid(
    rng: SplitMix64, b: DraftBuilder, family: str, slot: int, version: int = 2
) -> tuple[list[_Cell], int, list[Draft]]:
    """Every cell of a trail, which of them the transfer question asks about, and the alias events."""
    projects = rng.shuffled(PROJECTS)[:PROJECTS_PER_TRAIL]
    fields = rng.shuffled(list(FIELDS))[:FIELDS_PER_TRAIL]
    codes = rng.shuffled(CODE_NAMES)[:ALIASED_PER_TRAIL]
    names: dict[str, tuple[str, ...]] = {p: (p,) for p in projects}
    links = []
    for project, code in zip(projects, codes, strict=False):
        alias = f"{code}-{rng.between(2, 99)}"
        names[project] = (project, alias)
        links.append(
            b.event(project, "-", "alias", alias, note=f"user: {alias} is our internal code name for {project}")
        )
    grid = [(p, f) for p in projects for f in fields]
    eligible = [n for n, (p, _) in enumerate(grid) if family != "alias_resolution" or len(names[p]) > 1]
    asked = rng.choice(eligible)
    cells = []
    for n, (project, field) in enumerate(grid):
        patterns = _Patterns(b, rng, names[project], field, _Mark(n), version)
        if n == asked:
            cell_family, cell_slot = family, slot
        else:
            cell_family, cell_slot = rng.choice(FAMILIES), rng.between(0, SLOTS - 1)
            while cell_family == "alias_resolution" and len(names[project]) == 1:
                cell_family = rng.choice(FAMILIES)
        chain, ask_name = patterns.build(cell_family, cell_slot)
        cells.append(_Cell(project, field, ask_name, tuple(_decorated(b, rng, patterns, chain, version))))
    return cells, asked, links


def _known(
    timed: Sequence[tuple[Draft, dt.datetime]], cell: _Cell, as_of: dt.date | None, links: Sequence[Draft]
) -> Known:
    """The answer by the rules: the last user event of the cell's project, any name, up to the date."""
    names = _names(cell.project, links)
    deciding = [
        draft
        for draft, when in timed
        if draft.kind in _DECIDES
        and draft.field == cell.field
        and draft.project in names
        and (as_of is None or when.date() <= as_of)
    ]
    if not deciding:
        return None, ()
    last = deciding[-1]
    via = tuple(link for link in links if link.project == cell.project) if last.project != cell.ask_name else ()
    return (None if last.kind == "retraction" else last.value), (last, *via)


def _non_user_count(cell: _Cell) -> int:
    return sum(isinstance(d, Draft) and ACTOR_OF_KIND[d.kind] != "user" for d in cell.chain)


def _outdecorated(rng: SplitMix64, b: DraftBuilder, cells: list[_Cell], asked: int) -> list[_Cell]:
    """The cells with the asked one never topping its trail's count of non-user events (version 3).

    Decorations are drawn alike for every cell, so the asked cell would top
    the count as often as a typical cell, about one trail in six, and a reader
    who keeps only the most decorated cell would earn that much. So while it
    tops it, the busiest other cell gets one more unconfirmed suggestion,
    somewhere before its last event. The asked cell's own decorations stay as
    drawn, so it is no less decorated than a typical cell either.
    """
    cells = list(cells)
    while True:
        others = [n for n in range(len(cells)) if n != asked]
        busiest = max(others, key=lambda n: _non_user_count(cells[n]))
        if _non_user_count(cells[busiest]) > _non_user_count(cells[asked]):
            return cells
        cell = cells[busiest]
        shown = {d.value for d in cell.chain if isinstance(d, Draft)}
        value = rng.choice([v for v in FIELDS[cell.field] if v not in shown])
        drafts = [d for d in cell.chain if isinstance(d, Draft)]
        name = rng.choice(sorted({d.project for d in drafts}))
        chain = list(cell.chain)
        chain.insert(rng.between(0, len(chain) - 1), b.event(name, cell.field, "assistant_suggestion", value))
        cells[busiest] = _Cell(cell.project, cell.field, cell.ask_name, tuple(chain))


def _names(project: str, links: Sequence[Draft]) -> set[str]:
    return {project} | {link.value for link in links if link.project == project and link.value}


def _clash(transfer: Known, rehearsal: Known) -> bool:
    """Whether the rehearsal's ground truth would give away any part of the transfer answer."""
    (t_value, t_cited), (r_value, r_cited) = transfer, rehearsal
    same = t_value == r_value and {d.key for d in t_cited} == {d.key for d in r_cited}
    shown = t_value is not None and r_value is not None and (t_value in r_value or r_value in t_value)
    return same or shown or bool({d.key for d in t_cited} & {d.key for d in r_cited})


def _siblings_change_later(
    timed: Sequence[tuple[Draft, dt.datetime]], cell: _Cell, known: Known, links: Sequence[Draft]
) -> bool:
    """cross_field_decoy: two other fields of the asked project get a correction or retraction afterwards."""
    _, cited = known
    decided = next((when for draft, when in timed if cited and draft.key == cited[0].key), None)
    if decided is None:
        return False
    names = _names(cell.project, links)
    changed = {
        draft.field
        for draft, when in timed
        if when > decided
        and draft.kind in ("correction", "retraction")
        and draft.field not in (cell.field, "-")
        and draft.project in names
    }
    return len(changed) >= 2


def generate(split: str, size: int, *, suite: str = SUITE, version: int = VERSION) -> list[Case]:
    """The first ``size`` cases of a split; a larger size only appends cases."""
    __tracebackhide__ = True
    check_size(split, size)
    return [generate_one(split, index, suite=suite, version=version) for index in range(size)]


def audit_cases(split: str, size: int, version: int) -> list[Case]:
    """The first ``size`` cases of a split at any version: 1 is the first generator's, the later ones this one's."""
    return generate_v1(split, size) if version == 1 else generate(split, size, version=version)


def generate_one(split: str, index: int, *, suite: str = SUITE, version: int = VERSION) -> Case:
    """Case ``index`` of a split; it depends on nothing but ``(version, split, index)``."""
    __tracebackhide__ = True
    check_index(split, index)
    if version not in VERSIONS:
        raise ValueError(f"audit suite: this generator makes versions {VERSIONS}, not {version!r}")
    rng = SplitMix64.from_parts(version, _SPLIT_CODE[split], index)
    family = FAMILIES[index % len(FAMILIES)]
    slot = (index // len(FAMILIES)) % SLOTS
    for _ in range(_ATTEMPTS):
        built = _attempt(rng, family, slot, version)
        if built is not None:
            timed, transfer, rehearsal = built
            extra = {"version": version}
            return build_case(
                rng, split, index, suite, family, timed, rehearsal=rehearsal, transfer=transfer, extra=extra
            )
    raise AssertionError(f"{split}[{index}]: no trail met the family's conditions in {_ATTEMPTS} attempts")


def _attempt(
    rng: SplitMix64, family: str, slot: int, version: int = 2
) -> tuple[list[tuple[Draft, dt.datetime]], tuple[str, Known], tuple[str, Known]] | None:
    """One try at a trail; None when it misses a condition, and the next try draws on from the same stream."""
    b = DraftBuilder(rng)
    cells, asked, links = _grid(rng, b, family, slot, version)
    if version >= 3:
        cells = _outdecorated(rng, b, cells, asked)
    timed, dates = stamp(rng, interleave_chains(rng, [*(c.chain for c in cells), *([link] for link in links)]))
    cell = cells[asked]
    as_of = dates.get(_Mark(asked))
    transfer = _known(timed, cell, as_of, links)
    if family == "cross_field_decoy" and not _siblings_change_later(timed, cell, transfer, links):
        return None
    for other in rng.shuffled([n for n in range(len(cells)) if n != asked]):
        r_as_of = dates.get(_Mark(other))
        rehearsal = _known(timed, cells[other], r_as_of, links)
        if not _clash(transfer, rehearsal):
            r_cell = cells[other]
            return (
                timed,
                (value_question(cell.field, cell.ask_name, as_of), transfer),
                (value_question(r_cell.field, r_cell.ask_name, r_as_of), rehearsal),
            )
    return None
