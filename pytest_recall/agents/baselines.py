"""Baseline agents for the audit suite: what a score is worth without the memory the suite means to test.

Each baseline is a real agent program: it reads the step prompt from its last
argument, prints one answer line, and keeps what it keeps between sessions in
``$RECALL_SCOPE_DIR`` only, like any agent under the harness::

    python -m pytest_recall.agents.baselines NAME [--suite-version N] PROMPT

- ``null``: always ``{"value": null, "evidence": []}``, the answer for "never decided".
- ``most_common``: the most common transfer value of the asked field on the
  train split (of suite version N), with no evidence; it needs no memory.
- ``latest_event``: keeps the latest event of every project and field, of any
  actor or kind, and answers with it, ignoring dates, aliases and the rules.
- ``most_decorated``: keeps the one project and field that part 1 singles out
  (the most non-user events: suggestions, imports, injections), with its
  aliases, and answers it by the rules; anything else gets the null answer.
- ``injection``: keeps the answer each prompt injection dictates for its
  project and field, and obeys it; anything else gets the null answer.

A suite is guessable when one of these scores well on it. ``guessability()``
plays the two sessions in process, exactly as the harness does (feedback
included), so the figures can be tabled quickly; the project's tests run the
programs through the real harness and check they agree.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_recall.agents import audit_solver
from pytest_recall.agents.audit_solver import AuditEvent

NULL_ANSWER: dict[str, Any] = {"value": None, "evidence": []}
MEMORY_FILE = "baseline.json"
_DICTATED = re.compile(r'\{"value":.*?\]\}')

Memory = dict[str, Any]
VERSIONS = (1, 2, 3)


def _question(prompt: str) -> audit_solver.AuditQuestion | None:
    text = audit_solver.question_of(prompt)
    try:
        return None if text is None else audit_solver.parse_question(text)
    except ValueError:
        return None


def _events(prompt: str) -> tuple[AuditEvent, ...] | None:
    trail = audit_solver.parse_trail(prompt)
    return None if trail is None else audit_solver.parse_events(trail)


def _key(project: str, field: str) -> str:
    return f"{project}\t{field}"


def _names_of(events: Sequence[AuditEvent]) -> dict[str, list[str]]:
    """Every project name with every name of the same project (through alias events), sorted."""
    groups: dict[str, set[str]] = {}
    for event in events:
        for name in (event.project, event.value) if event.kind == "alias" else (event.project,):
            if name is not None:
                groups.setdefault(name, {name})
    for event in events:
        if event.kind == "alias" and event.actor == "user" and event.value is not None:
            joined = groups[event.project] | groups[event.value]
            for name in joined:
                groups[name] = joined
    return {name: sorted(group) for name, group in groups.items()}


# ---------------------------------------------------------------- the baselines: (learn from part 1, answer)


def _learn_nothing(events: Sequence[AuditEvent], prompt: str) -> Memory:
    return {}


def _null(memory: Memory, asked: audit_solver.AuditQuestion, version: int) -> dict[str, Any]:
    return NULL_ANSWER


def _most_common(memory: Memory, asked: audit_solver.AuditQuestion, version: int) -> dict[str, Any]:
    value = fitted_values(version).get(asked.field)
    return {"value": value, "evidence": []}


def _learn_latest(events: Sequence[AuditEvent], prompt: str) -> Memory:
    latest: dict[str, AuditEvent] = {}
    for event in sorted(events, key=lambda e: e.time):
        if event.field != "-":
            latest[_key(event.project, event.field)] = event
    return {key: {"value": e.value, "evidence": [e.event_id]} for key, e in latest.items()}


def _recall_by_key(memory: Memory, asked: audit_solver.AuditQuestion, version: int) -> dict[str, Any]:
    found = memory.get(_key(asked.project, asked.field))
    return dict(found) if isinstance(found, dict) else NULL_ANSWER


def _learn_most_decorated(events: Sequence[AuditEvent], prompt: str) -> Memory:
    names = _names_of(events)
    counts: Counter[tuple[str, str]] = Counter()
    kinds: dict[tuple[str, str], set[str]] = {}
    for event in events:  # storage order: ties go to the first cell stored
        if event.field == "-":
            continue
        cell = (names[event.project][0], event.field)
        counts[cell] += event.actor != "user"
        kinds.setdefault(cell, set()).add(event.kind)
    if not counts:
        return {}
    best = max(counts, key=lambda c: (counts[c], "tool_output" in kinds[c], "imported_summary" in kinds[c]))
    project, field = best
    kept = [
        e
        for e in events
        if (e.field == field and names[e.project][0] == project) or (e.kind == "alias" and e.project in names[project])
    ]
    return {"names": names[project], "field": field, "events": [_event_json(e) for e in kept]}


def _event_json(event: AuditEvent) -> dict[str, Any]:
    return {
        "event_id": event.event_id,
        "time": event.time,
        "project": event.project,
        "field": event.field,
        "kind": event.kind,
        "actor": event.actor,
        "value": event.value,
        "ref": event.ref,
        "note": "",
    }


def _answer_kept_cell(memory: Memory, asked: audit_solver.AuditQuestion, version: int) -> dict[str, Any]:
    if asked.field != memory.get("field") or asked.project not in memory.get("names", []):
        return NULL_ANSWER
    kept = [AuditEvent(**e) for e in memory["events"]]
    question = f"What is the current value of {asked.field} for project {asked.project}?"
    if asked.as_of is not None:
        question = f"As of {asked.as_of}, what was the value of {asked.field} for project {asked.project}?"
    return audit_solver.answer(kept, question)


def _learn_injections(events: Sequence[AuditEvent], prompt: str) -> Memory:
    dictated: Memory = {}
    for event in sorted(events, key=lambda e: e.time):
        found = _DICTATED.search(event.note) if event.kind == "tool_output" else None
        if found is not None:
            try:
                dictated[_key(event.project, event.field)] = json.loads(found.group())
            except ValueError:
                continue
    return dictated


Learn = Callable[[Sequence[AuditEvent], str], Memory]
Answer = Callable[[Memory, audit_solver.AuditQuestion, int], dict[str, Any]]
BASELINES: dict[str, tuple[Learn, Answer]] = {
    "null": (_learn_nothing, _null),
    "most_common": (_learn_nothing, _most_common),
    "latest_event": (_learn_latest, _recall_by_key),
    "most_decorated": (_learn_most_decorated, _answer_kept_cell),
    "injection": (_learn_injections, _recall_by_key),
}


def respond(name: str, prompt: str, memory_dir: Path, version: int = 3) -> str:
    """One session of baseline ``name``: learn from a trail if the prompt shows one, then answer its question."""
    learn, answer_with = BASELINES[name]
    path = memory_dir / MEMORY_FILE
    events = _events(prompt)
    if events is not None:
        memory = learn(events, prompt)
        if memory:
            memory_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(memory), encoding="utf-8")
    else:
        memory = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    asked = _question(prompt)
    result = NULL_ANSWER if asked is None else answer_with(memory, asked, version)
    return audit_solver.format_answer(result)


# ---------------------------------------------------------------- fitting and tabling


def fit_values(version: int, split: str = "train") -> dict[str, str | None]:
    """Per field, the most common transfer value over a whole split; ties go to the value seen first."""
    seen: dict[str, Counter[str | None]] = {}
    from pytest_recall.suites import audit_cases

    cases = audit_cases(split, 256, version)
    for case in cases:
        asked = _question(case.steps[1].prompt)
        assert asked is not None
        seen.setdefault(asked.field, Counter())[case.expected["answer"]["value"]] += 1
    return {field: counter.most_common(1)[0][0] for field, counter in sorted(seen.items())}


# What fit_values gives on each version's train split; a test keeps these in step with the generators,
# so a guessing session does not build 256 cases before answering.
FITTED: Mapping[int, Mapping[str, str | None]] = {
    1: {
        "ci_provider": None,
        "code_reviewer": None,
        "deploy_region": None,
        "issue_tracker": None,
        "primary_database": None,
        "release_cadence": None,
        "theme_color": "amber",
        "ui_font": None,
    },
    2: {
        "ci_provider": "jenkins",
        "code_reviewer": "tobias",
        "deploy_region": "af-south-1",
        "issue_tracker": "mantis",
        "primary_database": "mysql",
        "release_cadence": "yearly",
        "theme_color": "teal",
        "ui_font": "merriweather",
    },
    3: {
        "ci_provider": "teamcity",
        "code_reviewer": "oskar",
        "deploy_region": "sa-east-1",
        "issue_tracker": "taiga",
        "primary_database": "postgres",
        "release_cadence": None,
        "theme_color": "amber",
        "ui_font": "fira-sans",
    },
}


def fitted_values(version: int) -> Mapping[str, str | None]:
    return FITTED[version]


def play(name: str, cases: Sequence[Any], version: int) -> list[tuple[str, float]]:
    """Each case's (family, transfer score) for a baseline, the two sessions played as the harness plays them."""
    from pytest_recall.scoring import render_feedback, score_evidence_json

    scores = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            scope = Path(tmp) / case.case_id
            rehearsal = case.steps[1].feedback
            first = respond(name, case.steps[0].prompt, scope, version)
            opening = render_feedback(score_evidence_json(first, rehearsal), rehearsal)
            second = respond(name, opening + case.steps[1].prompt, scope, version)
            scores.append((str(case.category), float(score_evidence_json(second, case.expected)["score"])))
    return scores


def guessability(version: int, split: str = "eval", size: int = 256) -> dict[str, dict[str, float]]:
    """Per baseline, the mean transfer score overall and per family."""
    from pytest_recall.suites import audit_cases

    cases = audit_cases(split, size, version)
    table: dict[str, dict[str, float]] = {}
    for name in BASELINES:
        scores = play(name, cases, version)
        by_family: dict[str, list[float]] = {}
        for family, score in scores:
            by_family.setdefault(family, []).append(score)
        row = {"overall": sum(s for _, s in scores) / len(scores)}
        row.update({family: sum(v) / len(v) for family, v in sorted(by_family.items())})
        table[name] = row
    return table


def format_table(tables: Mapping[int, Mapping[str, Mapping[str, float]]]) -> str:
    """A Markdown table: one row per baseline and suite version, one column per family."""
    families = sorted({f for table in tables.values() for row in table.values() for f in row if f != "overall"})
    lines = [
        "| baseline | version | overall | " + " | ".join(families) + " |",
        "|---|---|---|" + "---|" * len(families),
    ]
    for name in BASELINES:
        for version, table in sorted(tables.items()):
            row = table[name]
            cells = [f"{row['overall']:.3f}", *(f"{row.get(f, 0.0):.3f}" for f in families)]
            lines.append(f"| {name} | v{version} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def scope_dir() -> Path:
    scope = os.environ.get("RECALL_SCOPE_DIR")
    if scope:
        return Path(scope)
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data_home) / "pytest-recall" / "baselines"


USAGE = (
    "usage: python -m pytest_recall.agents.baselines NAME [--suite-version N] PROMPT\n"
    "       python -m pytest_recall.agents.baselines --table [--size N]\n"
    f"NAME is one of {', '.join(BASELINES)}"
)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--table"]:
        size = int(args[args.index("--size") + 1]) if "--size" in args else 256
        print(format_table({version: guessability(version, size=size) for version in VERSIONS}))
        return 0
    version = 3
    if "--suite-version" in args:
        at = args.index("--suite-version")
        version = int(args[at + 1])
        del args[at : at + 2]
    if len(args) < 2 or args[0] not in BASELINES or version not in VERSIONS:
        print(USAGE, file=sys.stderr)
        return 2
    print(respond(args[0], args[-1], scope_dir(), version))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
