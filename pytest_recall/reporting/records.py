"""Case records: the one account of a case that the report, the run log and the JUnit file give.

Per-case data travels from the process that ran the case to the one that
reports it as plain scalars in ``report.user_properties`` (the full record
as one JSON string), exactly as pytest's own JUnit writer gathers results:
that is what crosses xdist intact.
"""

from __future__ import annotations

import collections
import json
import operator
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from pytest_recall.cases.model import Case
from pytest_recall.cases.runs import CaseRun, StepRun
from pytest_recall.cases.traptask import TASK_KEY
from pytest_recall.reporting.judge_section import judge_case_properties, llm_judge_field
from pytest_recall.reporting.transcripts import prompt_field
from pytest_recall.scoring.verdict import Verdict, scored_a_pass

RECORD_PROPERTY = "recall_record"
# Transcripts in records keep this many characters from the end of each stream.
RECORD_TEXT_CHARS = 4000
# A node id's "[epochN]" suffix: how a lost record still says which epoch it was.
_EPOCH_IN_NODEID = re.compile(r"\[epoch(\d+)\]$")


# The user property that carries a trap-task case's grader entry to the controller.
ENTRY_PROPERTY = "recall_task_entry"


def _tail(text: str, limit: int = RECORD_TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[-limit:]


@dataclass(frozen=True, slots=True)
class CaseRecord:
    """The one record of a case: what the report, the run log, the summary and the JUnit file say of it.

    A fresh run, a resumed one and a lost one (its process vanished) are all
    this shape, so every reader sees the same keys. JSON (:meth:`as_json`) is
    the form on disk and over the wire; ``report.schema.json`` describes the
    same fields, and a test holds the two together.
    """

    id: str
    suite: str | None
    nodeid: str
    category: str | None
    answer_kind: str | None
    expected: Any
    score: float | None
    reason: str | None
    reported: Any
    n_candidates: int | None
    error: str | None
    outcome: str
    epoch: int
    control: bool
    attempts: int
    duration_s: float | None
    cost_usd: float | None
    tokens_in: int | None
    tokens_out: int | None
    # What the agent kept for the last session: its memory after the step before it.
    memory_bytes: int | None
    content_hash: str | None
    command: str
    # How the run was made where that changes what is measured (sandbox, HOME, workdir, prompt
    # delivery, environment): resume reuses a record only for the same mode.
    run_mode: Mapping[str, Any]
    # Only for a case with a workspace, and for a files verdict: left out of the JSON when None.
    workspace: str | None = None
    checks_passed: int | None = None
    checks_total: int | None = None
    # Only for an imported public-benchmark case (and a case of a case group): what sets its result beside
    # the published tables, and how its haystack was fed.
    metric: str | None = None
    question_id: str | None = None
    question_type: str | None = None
    sample_id: str | None = None
    locomo_category: int | None = None
    sessions_per_step: int | None = None
    group: str | None = None
    # Only when a judge command (--recall-judge-cmd) judged the last answer: its verdict and cost.
    llm_judge: Mapping[str, Any] | None = None
    steps: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def of_run(
        cls,
        run: CaseRun,
        verdict: Verdict,
        *,
        nodeid: str,
        command: str,
        run_mode: Mapping[str, Any] | None = None,
        full_prompts: bool = False,
    ) -> CaseRecord:
        """A case that ran, or could not start. Prompts go by reference (``reporting.transcripts``)
        unless ``full_prompts``."""
        case = run.case
        costs = [step.cost_usd for step in run.steps if step.cost_usd is not None]
        if run.earlier_cost_usd is not None:
            # Every attempt was paid for: a retried case costs its earlier attempts too.
            costs.append(run.earlier_cost_usd)
        listed = [step for step in run.steps if step.memory is not None]
        return cls(
            id=case.case_id,
            suite=case.suite,
            nodeid=nodeid,
            category=case.category,
            answer_kind=case.answer_kind,
            expected=case.expected.get("answer"),
            score=verdict.score,
            reason=verdict.reason,
            reported=verdict.details.get("reported"),
            n_candidates=verdict.details.get("n_candidates"),
            error=verdict.error,
            outcome=verdict.outcome,
            epoch=run.epoch,
            control=run.control,
            attempts=run.attempts,
            duration_s=round(run.duration_s, 4),
            cost_usd=round(sum(costs), 6) if costs else None,
            tokens_in=_total(step.tokens_in for step in run.steps),
            tokens_out=_total(step.tokens_out for step in run.steps),
            memory_bytes=listed[-1].memory_bytes if listed else None,
            content_hash=case.content_hash,
            command=command,
            run_mode=dict(run_mode or {}),
            workspace=case.workspace_mode if case.workspace is not None or case.workspace_mode != "fresh" else None,
            checks_passed=verdict.details.get("checks_passed"),
            checks_total=verdict.details.get("checks_total"),
            metric=verdict.details.get("metric"),
            question_id=case.expected.get("question_id"),
            question_type=case.expected.get("question_type"),
            sample_id=case.expected.get("sample_id"),
            locomo_category=case.expected.get("locomo_category"),
            sessions_per_step=case.expected.get("sessions_per_step"),
            group=case.group,
            llm_judge=llm_judge_field(run.llm_judge, verdict),
            steps=tuple(_step_fields(step, full_prompts) for step in run.steps),
        )

    @classmethod
    def lost(cls, nodeid: str, reason: str, command: str, run_mode: Mapping[str, Any] | None = None) -> CaseRecord:
        """A case whose process vanished (a crashed worker): an error, never a silent zero."""
        case_part = nodeid.split("::")[0].rstrip("/")
        return cls(
            id=case_part.rsplit("/", 1)[-1],
            suite=None,
            nodeid=nodeid,
            category=None,
            answer_kind=None,
            expected=None,
            score=None,
            reason=reason,
            reported=None,
            n_candidates=None,
            error=reason,
            outcome="error",
            epoch=int(match.group(1)) if (match := _EPOCH_IN_NODEID.search(nodeid)) else 1,
            control="::control" in nodeid,
            attempts=1,
            duration_s=None,
            cost_usd=None,
            tokens_in=None,
            tokens_out=None,
            memory_bytes=None,
            content_hash=None,
            command=command,
            run_mode=dict(run_mode or {}),
        )

    @property
    def passed(self) -> bool:
        """See :func:`record_passed`."""
        return scored_a_pass(self.score, self.error)

    def as_json(self) -> dict[str, Any]:
        """The record as JSON data, keys in the report's order; the optional keys only when set."""
        data = dict(zip(_JSON_FIELDS, _json_values(self), strict=True))
        for name in OPTIONAL_FIELDS:
            if data[name] is None:
                del data[name]
        data["run_mode"] = dict(self.run_mode)
        data["steps"] = [dict(step) for step in self.steps]
        return data


_JSON_FIELDS = tuple(f.name for f in fields(CaseRecord))
# Every field's value in one call, not one getattr a field.
_json_values = operator.attrgetter(*_JSON_FIELDS)
# Keys a record carries only when they apply (a workspace case, a files verdict).
OPTIONAL_FIELDS = (
    "workspace",
    "checks_passed",
    "checks_total",
    "metric",
    "question_id",
    "question_type",
    "sample_id",
    "locomo_category",
    "sessions_per_step",
    "group",
    "llm_judge",
)
# Scalar properties every case's JUnit testcase carries, from its record.
JUNIT_CASE_FIELDS = ("score", "category", "reason", "reported", "duration_s", "cost_usd", "epoch", "control")


def record_passed(record: Mapping[str, Any]) -> bool:
    """Whether a run of a case passed, read off its JSON record; see :func:`scored_a_pass`."""
    return scored_a_pass(record.get("score"), record.get("error"))


def record_fails_item(record: Mapping[str, Any]) -> bool:
    """Whether the pytest item fails: a wrong answer does; a control run or an error (reported as such) does not."""
    return not record.get("error") and not record.get("control") and not record_passed(record)


def _step_fields(step: StepRun, full_prompts: bool) -> dict[str, Any]:
    return {
        "step": step.number,
        "exit_code": step.result.exit_code,
        "signal": step.result.signal,
        "timed_out": step.result.timed_out,
        "duration_s": round(step.result.duration_s, 4),
        "prompt": prompt_field(step.prompt, full=full_prompts),
        "stdout": _tail(step.stdout),
        "stderr": _tail(step.stderr),
        "stdout_bytes": step.result.stdout_bytes,
        "stderr_bytes": step.result.stderr_bytes,
        "truncated": step.result.truncated,
        "killed_leftovers": step.result.killed_leftovers,
        "cost_usd": step.cost_usd,
        "tokens_in": step.tokens_in,
        "tokens_out": step.tokens_out,
        **_memory_fields(step),
        **({"terminal": _tail(step.terminal)} if step.terminal is not None else {}),
    }


def _total(values: Iterable[int | None]) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def _memory_fields(step: StepRun) -> dict[str, Any]:
    """The memory listing after a step: paths, sizes and digests, never contents; none after the last step."""
    if step.memory is None:
        return {"memory": None, "memory_files": None, "memory_bytes": None}
    return {
        "memory": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in step.memory],
        "memory_files": step.memory_files,
        "memory_bytes": step.memory_bytes,
    }


def property_text(value: Any) -> str | None:
    """A value as CI tools read it: ``true``/``false`` for booleans, None (no property) for a missing value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def case_properties(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The JUnit-visible fields of a record, named ``recall_*``; a missing value has no property."""
    given = [(f"recall_{name}", record.get(name)) for name in JUNIT_CASE_FIELDS] + judge_case_properties(record)
    return [(name, text) for name, value in given if (text := property_text(value)) is not None]


# Records published in this process, by the id of their JSON text (which is kept, so the id stays its own):
# the recorder of a run without xdist takes the record itself instead of parsing the text again. Bounded,
# since under xdist the text travels to the controller and the entry here is never taken.
_PUBLISHED: collections.OrderedDict[int, tuple[str, dict[str, Any]]] = collections.OrderedDict()
_PUBLISHED_KEPT = 64


def record_properties(record: Mapping[str, Any]) -> list[tuple[str, object]]:
    """Scalars for ``user_properties``: the JUnit-visible fields, then the whole record (as JSON, for xdist)."""
    scalars: list[tuple[str, object]] = list(case_properties(record))
    # One compact line: the spool writes this very text, so the record is serialised once a case.
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    _PUBLISHED[id(text)] = (text, dict(record))
    while len(_PUBLISHED) > _PUBLISHED_KEPT:
        _PUBLISHED.popitem(last=False)
    scalars.append((RECORD_PROPERTY, text))
    return scalars


def published_record(properties: Iterable[tuple[str, object]]) -> tuple[dict[str, Any], str] | None:
    """The record a report carries (the one published in this process when it is, else its JSON parsed),
    and its JSON text as it travelled: one compact line, which the spool writes as it is."""
    for name, value in properties:
        if name == RECORD_PROPERTY and isinstance(value, str):
            published = _PUBLISHED.pop(id(value), None)
            if published is not None and published[0] is value:
                return published[1], value
            loaded: dict[str, Any] = json.loads(value)
            return loaded, value
    return None


def lost_record(nodeid: str, reason: str, command: str) -> dict[str, Any]:
    """The JSON of :meth:`CaseRecord.lost`."""
    return CaseRecord.lost(nodeid, reason, command).as_json()


def task_properties(case: Case, record: Mapping[str, Any], verdict: Verdict) -> list[tuple[str, object]]:
    """The grader's entry for one run of a trap-task case, as a user property; none for other cases.

    Control runs are left out, as they are from our own verdict.
    """
    task = case.extra.get(TASK_KEY)
    if task is None or record.get("control"):
        return []
    entry = {
        "task": task,
        "id": case.case_id,
        "metrics": None if verdict.error else verdict.as_dict(),
        "duration": record.get("duration_s"),
        "cost": {"cost_usd": record.get("cost_usd")},
    }
    return [(ENTRY_PROPERTY, json.dumps(entry, ensure_ascii=False))]
