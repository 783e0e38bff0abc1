"""Case records: the one account of a case that the report, the run log and the JUnit file give.

A :class:`CaseRecord` is made once per run of a case and travels as that
object to everything in the process that reads it (the recorder, the spool,
the JUnit properties, the failure text). It becomes JSON only where bytes
leave the process: the report and log files, and the xdist wire
(:mod:`pytest_recall.plugin.xdist_handoff`); :meth:`CaseRecord.from_json`
is the one way back, for every schema version.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from pytest_recall.cases import TASK_KEY, Case, CaseRun, StepRun
from pytest_recall.reporting.document import with_shared
from pytest_recall.reporting.failure import verdict_report
from pytest_recall.reporting.judge_section import judge_case_properties, llm_judge_field, other_judges_field
from pytest_recall.reporting.transcripts import prompt_field
from pytest_recall.scoring import MemoryUse, Verdict, case_memory_use, evidence_of, kept_request, scored_a_pass

# Transcripts in records keep this many characters from the end of each stream.
RECORD_TEXT_CHARS = 4000
# A node id's "[epochN]" suffix: how a lost record still says which epoch it was.
_EPOCH_IN_NODEID = re.compile(r"\[epoch(\d+)\]$")


# The user property that carries a trap-task case's grader entry to the controller.
ENTRY_PROPERTY = "recall_task_entry"


def _tail(text: str, limit: int = RECORD_TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[-limit:]


@dataclass(frozen=True, slots=True)
class BenchmarkFacts:
    """What sets an imported public-benchmark case (LongMemEval, LoCoMo) beside the published tables, and how
    its haystack was fed: one optional group, since no other case has any of it.

    On disk the fields stay at the record's top level, each only when set, as they always were.
    """

    metric: str | None = None
    question_id: str | None = None
    question_type: str | None = None
    sample_id: str | None = None
    locomo_category: int | None = None
    sessions_per_step: int | None = None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> BenchmarkFacts | None:
        """The facts ``data`` (a case's expectation, or a record's JSON) holds; None when it holds none."""
        facts = cls(*(data.get(name) for name in BENCHMARK_FIELDS))
        return None if facts == _NO_FACTS else facts

    def as_json(self) -> dict[str, Any]:
        return {
            name: value
            for name, value in zip(BENCHMARK_FIELDS, _benchmark_values(self), strict=True)
            if value is not None
        }


BENCHMARK_FIELDS = tuple(f.name for f in fields(BenchmarkFacts))
_benchmark_values = operator.attrgetter(*BENCHMARK_FIELDS)
_NO_FACTS = BenchmarkFacts()


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
    benchmark: BenchmarkFacts | None = None
    group: str | None = None
    # Only when a judge command (--recall-judge-cmd) judged the last answer: its verdict and cost.
    llm_judge: Mapping[str, Any] | None = None
    # Only when several judge commands judged it: the verdicts of those that do not score, by name.
    llm_judges: Mapping[str, Any] | None = None
    # Only for a case a judge command could take (judge_scope.kept_request): the request it reads, answer
    # included, so ``pytest-recall rejudge`` can ask other judges without running the agent again.
    judge_request: Mapping[str, Any] | None = None
    # Only on a --recall-mcp run: what the tap between the agent and its MCP servers saw (scoring/memory_use.py).
    memory_use: MemoryUse | None = None
    steps: tuple[Mapping[str, Any], ...] = ()
    # Keys the JSON this record was read from lacked (an older version's log): written back without them,
    # so a resumed or merged record stands in the report as it was stored.
    absent: frozenset[str] = frozenset()

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
            benchmark=BenchmarkFacts.of({**case.expected, "metric": verdict.details.get("metric")}),
            group=case.group,
            llm_judge=llm_judge_field(run.llm_judge, verdict),
            llm_judges=other_judges_field(run.other_judges, verdict),
            judge_request=kept_request(run, both=judges_both(run_mode)),
            memory_use=case_memory_use(run.steps, evidence_of(case.expected), run.ingest_writes),
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
    def fails_item(self) -> bool:
        """Whether the pytest item fails: a wrong answer does; a control run or an error (reported as such) does
        not. The one place that says so; whether a run passed is :func:`~pytest_recall.scoring.passing.scored_a_pass`.
        """
        return not self.error and not self.control and not scored_a_pass(self.score, self.error)

    def as_json(self) -> dict[str, Any]:
        """The record as JSON data, keys in the report's order; the optional keys only when set."""
        data: dict[str, Any] = {}
        for name, value in zip(_FIELD_NAMES, _field_values(self), strict=True):
            if name == "benchmark":
                if value is not None:
                    data.update(value.as_json())
            elif name == "memory_use":
                if value is not None:
                    data[name] = value.as_json()
            elif (value is not None or name not in OPTIONAL_FIELDS) and name not in self.absent:
                data[name] = value
        if "run_mode" in data:
            data["run_mode"] = dict(self.run_mode)
        if "steps" in data:
            data["steps"] = [dict(step) for step in self.steps]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], shared: Mapping[str, Any] | None = None) -> CaseRecord:
        """A record as written by any schema version; ``shared`` is the top of its report (version 2 on),
        whose values every case shares unless it says otherwise. Keys no field holds are dropped."""
        whole = with_shared(dict(data), shared) if shared else data
        values: dict[str, Any] = {name: whole.get(name) for name in _PLAIN_FIELDS}
        return cls(
            **values,
            run_mode=dict(whole.get("run_mode") or {}),
            benchmark=BenchmarkFacts.of(whole),
            memory_use=MemoryUse.from_json(used) if isinstance(used := whole.get("memory_use"), Mapping) else None,
            steps=tuple(whole.get("steps") or ()),
            absent=frozenset(name for name in _ALWAYS_WRITTEN if name not in whole),
        )

    def failure_text(self, *, title: str, compact: bool) -> str:
        """What a failed item shows: the verdict, the expectation, and the tail of each step."""
        shown = {"score": self.score, "reason": self.reason, "reported": self.reported}
        expected = {"answer": self.expected, "category": self.category}
        return verdict_report(shown, expected, self.steps, title=title, compact=compact)

    def junit_properties(self) -> list[tuple[str, str]]:
        """The JUnit-visible fields, named ``recall_*``; a missing value has no property."""
        given = [(f"recall_{name}", getattr(self, name)) for name in JUNIT_CASE_FIELDS]
        given += judge_case_properties(self.llm_judge, self.llm_judges)
        if self.memory_use is not None:
            use = self.memory_use
            given += [
                ("recall_memory_writes_before", use.writes_before),
                ("recall_memory_reads_last", use.reads_last),
                ("recall_memory_unused", use.unused),
                ("recall_memory_evidence_retrieved", use.evidence_retrieved),
            ]
        return [(name, text) for name, value in given if (text := property_text(value)) is not None]


_FIELD_NAMES = tuple(f.name for f in fields(CaseRecord) if f.name != "absent")
# Every field's value in one call, not one getattr a field.
_field_values = operator.attrgetter(*_FIELD_NAMES)
# Fields read from JSON as they are; the others are rebuilt (a mapping, a group, a tuple).
_PLAIN_FIELDS = tuple(name for name in _FIELD_NAMES if name not in ("run_mode", "benchmark", "memory_use", "steps"))
# Keys a record carries only when they apply (a workspace case, a files verdict).
OPTIONAL_FIELDS = (
    "workspace",
    "checks_passed",
    "checks_total",
    *BENCHMARK_FIELDS,
    "group",
    "llm_judge",
    "llm_judges",
    "judge_request",
    "memory_use",
)
# Keys every record this version writes holds, set or not.
_ALWAYS_WRITTEN = frozenset(_FIELD_NAMES) - {"benchmark", *OPTIONAL_FIELDS}
# Scalar properties every case's JUnit testcase carries, from its record.
JUNIT_CASE_FIELDS = ("score", "category", "reason", "reported", "duration_s", "cost_usd", "epoch", "control")


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


def judges_both(run_mode: Mapping[str, Any] | None) -> bool:
    """Whether the run's judge command takes every text gold (``--recall-judge-both``), as its run mode says."""
    judge = (run_mode or {}).get("llm_judge")
    return isinstance(judge, Mapping) and bool(judge.get("both"))


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


def task_entry(case: Case, record: CaseRecord, verdict: Verdict) -> dict[str, Any] | None:
    """The grader's entry for one run of a trap-task case; None for other cases.

    Control runs are left out, as they are from our own verdict.
    """
    task = case.extra.get(TASK_KEY)
    if task is None or record.control:
        return None
    return {
        "task": task,
        "id": case.case_id,
        "metrics": None if verdict.error else verdict.as_dict(),
        "duration": record.duration_s,
        "cost": {"cost_usd": record.cost_usd},
    }
