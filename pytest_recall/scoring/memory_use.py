"""Did the agent use its memory, and did the memory give it the answer? What the MCP tap saw, per case.

A score says whether the agent answered; these facts say why. A memory arm
whose agent never wrote in its earlier steps nor read in its last scores like
a forgetful memory, though its memory was never tried: such a case is
**unused**, and the run's figures give the score with and without those cases
(an admission gate, as harnesses that compare memories use).

Retrieval is told apart from reasoning where a case knows its evidence: the
texts that answer it (an imported question's evidence turns, kept as
``evidence_text`` in its answer file, or else the expected answer itself).
The last step's reads **retrieved** it when one of those texts, normalised
(case folded, punctuation and runs of white space made one space), stands in
what the reads returned, normalised the same way.
So a right answer with nothing retrieved was reasoned, guessed or known; a
wrong answer with the evidence retrieved is a reasoning failure; a wrong one
without it, a retrieval failure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_recall.cases import MemoryCall, StepRun
from pytest_recall.scoring.passing import scored_a_pass

# A token estimate for text a model reads: about four bytes a token for English text.
BYTES_PER_TOKEN = 4
# Latencies a record keeps per server: enough for a run's p50 and p95, bounded for a chatty agent.
LATENCIES_KEPT = 64
# Evidence shorter than this (after normalising) is too short to tell retrieval from chance ("1", "no").
SHORTEST_EVIDENCE = 3
_NOT_WORD = re.compile(r"[^\w]+")


@dataclass(frozen=True, slots=True)
class MemoryUse:
    """One case's memory calls, as the tap saw them: the record's ``memory_use`` group."""

    writes_before: int
    reads_last: int
    calls: int
    errors: int
    returned_bytes: int
    latency_ms: Mapping[str, tuple[float, ...]]
    # Whether the last step's reads returned the case's evidence; None when the case names none to look for.
    evidence_retrieved: bool | None = None
    # Why some step's calls could not be read (the counts then cover the readable steps only).
    fault: str | None = None
    # Servers the tap could not see (reached by URL): calls to them are unknown, so the case is never "unused".
    untapped: tuple[str, ...] = ()

    @property
    def unused(self) -> bool:
        """No write before the last step and no read in it, with every server seen: the memory was never tried."""
        return not self.untapped and self.writes_before == 0 and self.reads_last == 0

    @property
    def returned_tokens(self) -> int:
        return math.ceil(self.returned_bytes / BYTES_PER_TOKEN)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "writes_before": self.writes_before,
            "reads_last": self.reads_last,
            "calls": self.calls,
            "errors": self.errors,
            "returned_bytes": self.returned_bytes,
            "returned_tokens": self.returned_tokens,
            "unused": self.unused,
            "latency_ms": {server: list(values) for server, values in self.latency_ms.items()},
            "evidence_retrieved": self.evidence_retrieved,
        }
        if self.fault is not None:
            data["fault"] = self.fault
        if self.untapped:
            data["untapped"] = list(self.untapped)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemoryUse:
        latency = data.get("latency_ms") or {}
        return cls(
            writes_before=int(data.get("writes_before", 0)),
            reads_last=int(data.get("reads_last", 0)),
            calls=int(data.get("calls", 0)),
            errors=int(data.get("errors", 0)),
            returned_bytes=int(data.get("returned_bytes", 0)),
            latency_ms={str(server): tuple(float(v) for v in values) for server, values in latency.items()},
            evidence_retrieved=data.get("evidence_retrieved"),
            fault=data.get("fault"),
            untapped=tuple(str(server) for server in data.get("untapped") or ()),
        )


def case_memory_use(steps: Sequence[StepRun], evidence: Iterable[str], ingest_writes: int = 0) -> MemoryUse | None:
    """The case's memory use from its steps' tapped calls; None when no step had a tapped server.
    ``ingest_writes``: a question of a case group that shared another case's ingest was taught by that ingest's
    writes, which count before its last step as its own would have."""
    tapped = [step for step in steps if step.memory_calls is not None]
    if not tapped or not steps:
        return None
    last = steps[-1].memory_calls
    last_calls = last.calls if last is not None else ()
    earlier = [call for step in steps[:-1] if step.memory_calls is not None for call in step.memory_calls.calls]
    every = [*earlier, *last_calls]
    reads = [call for call in last_calls if call.kind == "read" and not call.is_error]
    faults = [step.memory_calls.fault for step in tapped if step.memory_calls and step.memory_calls.fault]
    return MemoryUse(
        writes_before=ingest_writes + sum(1 for call in earlier if call.kind == "write"),
        reads_last=sum(1 for call in last_calls if call.kind == "read"),
        calls=len(every),
        errors=sum(1 for call in every if call.is_error),
        returned_bytes=sum(call.text_bytes for call in reads),
        latency_ms=_latencies(every),
        evidence_retrieved=retrieved(evidence, reads),
        fault=faults[0] if faults else None,
        untapped=tuple(
            dict.fromkeys(server for step in tapped if step.memory_calls for server in step.memory_calls.untapped)
        ),
    )


def _latencies(calls: Iterable[MemoryCall]) -> dict[str, tuple[float, ...]]:
    by_server: dict[str, list[float]] = {}
    for call in calls:
        kept = by_server.setdefault(call.server, [])
        if len(kept) < LATENCIES_KEPT:
            kept.append(round(call.latency_ms, 1))
    return {server: tuple(values) for server, values in by_server.items()}


def normalised(text: str) -> str:
    return " ".join(_NOT_WORD.sub(" ", text.casefold()).split())


def retrieved(evidence: Iterable[str], reads: Iterable[MemoryCall]) -> bool | None:
    """Whether any evidence text stands in what the reads returned; None when there is no evidence to look for."""
    return holds_evidence(evidence, " ".join(call.text for call in reads))


def holds_evidence(evidence: Iterable[str], returned: str) -> bool | None:
    """Whether any evidence text, normalised, stands in ``returned`` normalised (whole words only); None when no
    evidence text is long enough to look for."""
    wanted = [text for text in (normalised(item) for item in evidence) if len(text) >= SHORTEST_EVIDENCE]
    if not wanted:
        return None
    padded = f" {normalised(returned)} "
    return any(f" {text} " in padded for text in wanted)


def evidence_of(expected: Any) -> list[str]:
    """What a case's answer file offers as evidence: its ``evidence_text`` (an import keeps the data set's evidence
    turns there), else its expected value."""
    if isinstance(expected, Mapping):
        listed = expected.get("evidence_text")
        if isinstance(listed, list) and all(isinstance(item, str) for item in listed) and listed:
            return list(listed)
        expected = expected.get("answer", expected.get("value"))
    if isinstance(expected, (str, int, float)) and not isinstance(expected, bool):
        return [str(expected)]
    if isinstance(expected, list):
        return [str(item) for item in expected if isinstance(item, (str, int, float)) and not isinstance(item, bool)]
    return []


def percentile(values: Sequence[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def memory_figures(
    cases: Iterable[tuple[MemoryUse, float | None, bool, str | None]],
) -> dict[str, Any] | None:
    """The run's memory figures from (use, score, control, category) of each case with a tapped memory.

    The memory arm: how many cases left their memory unused, which, and the
    mean score with and without them; the control: how many calls it made
    (it should make none); evidence recall per category and the 2x2 table of
    retrieval against a right answer; call latency p50 and p95 per server.
    """
    arm = [(use, score, category) for use, score, control, category in cases if not control]
    control_calls = sum(use.calls for use, _score, control, _category in cases if control)
    if not arm and not control_calls:
        return None
    scored = [(use, score, category) for use, score, category in arm if score is not None]
    used = [score for use, score, _category in scored if not use.unused]
    latencies: dict[str, list[float]] = {}
    for use, _score, _category in arm:
        for server, values in use.latency_ms.items():
            latencies.setdefault(server, []).extend(values)
    return {
        "cases": len(arm),
        "unused": sum(1 for use, _score, _category in arm if use.unused),
        "score_all": _mean([score for _use, score, _category in scored]),
        "score_used": _mean(used),
        "control_calls": control_calls,
        "returned_tokens_median": percentile([use.returned_tokens for use, _s, _c in arm], 0.5),
        "latency_ms": {
            server: {"p50": percentile(values, 0.5), "p95": percentile(values, 0.95), "calls": len(values)}
            for server, values in sorted(latencies.items())
        },
        **_untapped([use for use, _score, _category in arm]),
        **_retrieval(scored),
    }


def _untapped(uses: Sequence[MemoryUse]) -> dict[str, Any]:
    """The servers the tap could not see and how many of the arm's cases had one: their use is unknown."""
    servers = sorted({server for use in uses for server in use.untapped})
    if not servers:
        return {}
    return {"untapped_servers": servers, "untapped_cases": sum(1 for use in uses if use.untapped)}


def _retrieval(scored: Sequence[tuple[MemoryUse, float | None, str | None]]) -> dict[str, Any]:
    known = [(use, score, category) for use, score, category in scored if use.evidence_retrieved is not None]
    if not known:
        return {}
    table = {"retrieved_right": 0, "retrieved_wrong": 0, "missed_right": 0, "missed_wrong": 0}
    by_category: dict[str, list[bool]] = {}
    for use, score, category in known:
        right = scored_a_pass(score)
        got = bool(use.evidence_retrieved)
        table[f"{'retrieved' if got else 'missed'}_{'right' if right else 'wrong'}"] += 1
        by_category.setdefault(category or "uncategorised", []).append(got)
    recall = {name: sum(flags) / len(flags) for name, flags in sorted(by_category.items())}
    return {
        "evidence_recall": sum(1 for use, _s, _c in known if use.evidence_retrieved) / len(known),
        "evidence_recall_by_category": recall,
        "retrieval_table": table,
    }


def _mean(values: Sequence[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else None
