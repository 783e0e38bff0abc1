"""The per-case view every aggregate reads: a record's few scalars, by attribute.

The verdict, the statistics, the error lines, the progress line and the
report order read only these of a case; the full record stays on disk
(``reporting.spool``). It lives here, below the reporting layer, because the
scoring functions are its readers; ``reporting.spool`` makes it from a
``CaseRecord`` or from a record's JSON row. Slots, and a hex content hash
kept as its 32 bytes, keep a 100,000-case run's summaries small.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_recall.scoring.memory_use import MemoryUse

# A case run that ended so never answered (its agent could not start, the model refused it, the harness failed):
# it says nothing of memory, and counting it would blame the memory for a missing CLI.
NO_ANSWER_OUTCOMES = frozenset({"agent_failed", "rate_limited", "error"})


@dataclass(frozen=True, slots=True)
class CaseSummary:
    """One case run's scalars, as the record has them; ``reported`` only when it abstains (``NOT GIVEN``)."""

    id: str | None
    suite: str | None
    nodeid: str | None
    category: str | None
    answer_kind: str | None
    sessions_per_step: int | None
    score: Any
    reported: str | None
    error: str | None
    epoch: int | None
    control: bool | None
    duration_s: float | None
    cost_usd: float | None
    # The content hash as bytes when it is lower-case hex (half the memory), else as written.
    content_digest: bytes | str | None
    outcome: str | None
    tokens_in: int | None
    tokens_out: int | None
    memory_bytes: int | None
    workspace: str | None
    # The judge command's verdict without its reason: what the agreement figures read.
    llm_judge: dict[str, Any] | None
    # The HOME mode of the run, and the one-line account of an agent failure: derived from the record.
    run_home: str | None
    failure_text: str | None
    # The MCP tap's account (only on a --recall-mcp run): the record's object, read from a row's JSON once.
    memory_use: MemoryUse | None
    # With several judges: the judge whose verdict scores, and the case as a row of the judges table.
    judge_panel: tuple[str, Any] | None

    @property
    def answered(self) -> bool:
        """Whether the agent gave an answer: the memory figures, the lift and help and harm read only such runs."""
        return self.outcome not in NO_ANSWER_OUTCOMES

    @property
    def content_hash(self) -> str | None:
        digest = self.content_digest
        return digest.hex() if isinstance(digest, bytes) else digest
