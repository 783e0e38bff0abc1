"""The run's report as one frozen object: built once from the summaries, JSON only at its edges.

:func:`pytest_recall.reporting.document.build_report` makes it, the grader's
verdict and every aggregate of ``scoring/`` in their places; the terminal
summary, the HTML page, the JUnit properties, the card, compare and merge read
its attributes. Its JSON is made by :meth:`RunReport.as_json` where bytes
leave the process (the report file, the public ``pytest_recall_modify_report``
hook), and read back by :meth:`RunReport.from_json` from a report file, the
way pytest's ``TestReport`` crosses xdist by ``_to_json`` and ``_from_json``.

A field's name is its key in the report and the fields' order is the keys'
order, so the file's bytes are what the dict it replaced wrote. The blocks
are kept as the JSON-ready values the aggregates make (each is documented in
``report.schema.json``); a field in :data:`OPTIONAL_KEYS` is left out of the
JSON when it is None, every other one is always written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

# Blocks a run may not have (no protocol for a run without an agent, no judge command, no stop gate...):
# left out of the JSON when None, where the other keys are written with a null.
OPTIONAL_KEYS = frozenset(
    {
        "protocol",
        "memory",
        "llm_judge",
        "judges",
        "run_mode",
        "n_planned",
        "max_cost",
        "n_collection_errors",
        "stop",
        "rate_limits",
    }
)


@dataclass(frozen=True, slots=True)
class RateLimits:
    """What the run's pause folder says of the model's rate limits, for the ``rate_limits`` block."""

    n_refused: int
    paused_s: float
    attempts: int
    pause_budget_s: float  # the most the run may pause in all, however often a claim comes
    budget_spent: bool

    def block(self, by_outcome: Mapping[str, int] | None) -> dict[str, Any]:
        return {
            "n_refused": self.n_refused,
            "paused_s": round(self.paused_s, 1),
            # The runs (not the control) still refused when their budget of attempts was spent.
            "n_rate_limited": int((by_outcome or {}).get("rate_limited", 0)),
            "attempts": self.attempts,
            "pause_budget_s": self.pause_budget_s,
            "budget_spent": self.budget_spent,
        }


@dataclass(frozen=True, slots=True)
class RunEnding:
    """What the run's end knows beside the case summaries, for the blocks after the cases and for ``passed``."""

    n_planned: int | None = None  # an interrupted run's planned runs
    max_cost: Mapping[str, Any] | None = None  # what --recall-max-cost kept from starting
    n_collection_errors: int = 0
    stop: Mapping[str, Any] | None = None  # the stop gate's block
    rate_limits: RateLimits | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunReport:
    """The report of one run (or of merged shards): the verdict first, then how far to trust it, the cases,
    then what the run's end added (planned runs of an interrupted run, the cost cap, the stop gate...)."""

    schema_version: int
    protocol: Mapping[str, Any] | None = None
    passed: bool
    score: float
    n_passed: int
    n_total: int
    n_scored: int | None = None
    n_skipped_no_gold: int | None = None
    n_errors: int | None = None
    threshold: float
    by_category: Mapping[str, float] | None = None
    latency_ms_median: float
    latency_ms_p95: float
    latency_ms_total: float
    cost_usd_total: float | None = None
    epochs: int | None = None
    confidence: Mapping[str, Any] | None = None
    by_category_confidence: Mapping[str, Any] | None = None
    pass_at_k: float | None = None
    pass_all_k: float | None = None
    per_case: Sequence[Mapping[str, Any]] | None = None
    control: Mapping[str, Any] | None = None
    false_abstention_rate: float | None = None
    by_outcome: Mapping[str, int] | None = None
    tokens_in_total: int | None = None
    tokens_out_total: int | None = None
    memory_bytes_median: float | None = None
    memory: Mapping[str, Any] | None = None
    help_harm: Mapping[str, Any] | None = None
    by_workspace: Mapping[str, Any] | None = None
    llm_judge: Mapping[str, Any] | None = None
    judges: Mapping[str, Any] | None = None
    command: str | None = None
    interrupted: bool = False
    run_mode: Mapping[str, Any] | None = None
    step_defaults: Mapping[str, Any] | None = None
    cases: Sequence[Any]  # summaries as built, records streamed from the spool when written, rows when read
    n_planned: int | None = None
    max_cost: Mapping[str, Any] | None = None
    n_collection_errors: int | None = None
    stop: Mapping[str, Any] | None = None
    rate_limits: Mapping[str, Any] | None = None
    # Keys other plugins add through ``pytest_recall_modify_report`` (a trap task's grader's), after the rest.
    added: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def as_json(self) -> dict[str, Any]:
        """The report's JSON document, its keys in the fields' order, then what plugins added; ``cases`` as they
        are (the writer streams them)."""
        document: dict[str, Any] = {}
        for spec in fields(self):
            name = spec.name
            value = getattr(self, name)
            if name == "added" or (value is None and name in OPTIONAL_KEYS):
                continue
            document[name] = value
        document.update(self.added)
        return document

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> RunReport:
        """A report read from its JSON (checked against the schema by the caller): keys it does not know are
        kept in ``added``."""
        known = {spec.name for spec in fields(cls)} - {"added"}
        given = {key: value for key, value in document.items() if key in known}
        added = {key: value for key, value in document.items() if key not in known}
        given.setdefault("interrupted", False)
        return cls(**given, added=MappingProxyType(added))
