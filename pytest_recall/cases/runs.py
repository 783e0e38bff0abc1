"""What running a case produced: its sessions, its steps and the whole run, as plain values.

These live beside the case model, below every layer that runs, scores or
reports a case, so that scoring and reporting read a run without knowing how
it was run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_recall.cases.model import Case
from pytest_recall.cases.rate_limit import RATE_LIMITED_EXIT, RATE_LIMITED_MARK
from pytest_recall.cases.workspace_tree import WorkspaceSnapshot


@dataclass(frozen=True, slots=True)
class TurnResult:
    """One turn of a live session: the prompt sent, and the answer read back.

    The answer is the output from the send until the agent looked ready for
    more, without the ready prompt itself; ``finished`` is False for a turn
    the session ended in (exit or timeout) before the agent looked ready.
    ``sent`` is False for the turn the session ended before sending: its
    answer is then what the agent showed while the harness waited for it to
    look ready (a start-up error, say), so that output is never lost.
    """

    prompt: str
    answer: bytes
    duration_s: float
    finished: bool
    sent: bool = True
    # When the turn was sent, on the host's monotonic clock; None for a turn never sent.
    sent_at: float | None = None


@dataclass(frozen=True, slots=True)
class SessionResult:
    """What one session did. Output is raw bytes, already capped."""

    exit_code: int | None
    signal: int | None
    timed_out: bool
    duration_s: float
    stdout: bytes
    stderr: bytes
    stdout_bytes: int
    stderr_bytes: int
    truncated: bool
    start_error: str | None = None
    killed_leftovers: int = 0
    turns: tuple[TurnResult, ...] = field(default_factory=tuple)
    # The exit statuses that mean the session ended well (``ok_exit_codes``; 0 unless a case says more).
    ok_exit_codes: tuple[int, ...] = (0,)

    @property
    def failed(self) -> bool:
        """Timed out, killed or exited badly: a case stops here, may be retried, and is no memory result."""
        return (
            self.timed_out
            or self.signal is not None
            or (self.exit_code is not None and self.exit_code not in self.ok_exit_codes)
        )

    def rate_limit_wait(self) -> float | None:
        """When an adapter said the model refused it for a rate limit: the seconds it was told to wait
        (0.0 when not told); else None. Both the exit status and the marker line must be there."""
        if self.exit_code != RATE_LIMITED_EXIT or RATE_LIMITED_MARK.encode() not in self.stderr:
            return None
        found = _RETRY_AFTER.search(self.stderr)
        return float(found.group(1)) if found else 0.0


_RETRY_AFTER = re.compile(rb"recall-rate-limited:.*?retry-after=([0-9]+(?:\.[0-9]+)?)")


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """One file an agent kept in its memory scope between sessions: named and measured, never read out."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class MemoryCall:
    """One ``tools/call`` to an MCP server, as the tap between the agent's CLI and the server saw it."""

    server: str
    tool: str
    # "read" or "write" by the tool's annotations or name; "other" when neither says.
    kind: str
    argument_bytes: int
    # The text the result put before the model (its size in full; ``text`` cut to the tap's bound).
    text_bytes: int
    text: str
    is_error: bool
    latency_ms: float
    # When the server was asked, on the host's monotonic clock (the tap's); None from a log that does not say.
    at: float | None = None


@dataclass(frozen=True, slots=True)
class MemoryCalls:
    """What a step's MCP servers were asked: the tools they offered and every call, from the tap's log.

    ``fault`` says why the log could not be read whole (the step's memory use
    is then unknown, never the agent's failure: the log is the harness's).
    """

    offered: tuple[str, ...] = ()
    calls: tuple[MemoryCall, ...] = ()
    fault: str | None = None
    # Servers of the step the tap could not see (reached by URL): their calls are unknown, not absent.
    untapped: tuple[str, ...] = ()

    @property
    def reads(self) -> int:
        return sum(1 for call in self.calls if call.kind == "read")

    @property
    def writes(self) -> int:
        return sum(1 for call in self.calls if call.kind == "write")


@dataclass(frozen=True, slots=True)
class StepRun:
    """One step: its prompt, its session, its judged text, what it cost, and what memory it left.

    ``memory`` lists the scope after the step (None after the last step,
    whose memory nobody reads); ``memory_files`` and ``memory_bytes`` count
    all of it, past the listing's limit too.
    """

    number: int
    prompt: str
    result: SessionResult
    stdout: str
    stderr: str
    cost_usd: float | None
    tokens_in: int | None = None
    tokens_out: int | None = None
    memory: tuple[MemoryFile, ...] | None = None
    memory_files: int = 0
    memory_bytes: int = 0
    # A live session's raw terminal output (escapes kept), on its last step: the answers come
    # from the rendered screen, and this shows what that screen was made of.
    terminal: str | None = None
    # The step's MCP memory calls, seen by the tap; None when the step had no --recall-mcp server.
    memory_calls: MemoryCalls | None = None


@dataclass(frozen=True, slots=True)
class LlmJudgement:
    """What the judge command (``--recall-judge-cmd``) said of a run's last answer, and what that cost.

    ``score`` is None when it gave no verdict (``error`` says why: a timeout,
    a non-zero exit, an unreadable reply), a judge error and never the
    agent's failure. ``decides`` is whether this verdict is the case's score.
    A ``cached`` verdict was given earlier in the run for the same request:
    it cost nothing this time. ``key`` names the request (see
    ``scoring.judge_scope.judge_cache_key``); ``prompt_sha256`` the prompt the
    judge says it asked under (``recall-judge`` does), None when it does not say.
    """

    score: float | None
    reason: str | None = None
    error: str | None = None
    decides: bool = False
    attempts: int = 1
    duration_s: float = 0.0
    cost_usd: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cached: bool = False
    key: str = ""
    prompt_sha256: str | None = None
    # --recall-judge-samples: each sample's score (None for a judge error), the verdict their majority, and
    # whether the samples that gave a verdict disagree; () and None when the judge was asked once.
    samples: tuple[float | None, ...] = ()
    flipped: bool | None = None


@dataclass(frozen=True, slots=True)
class CaseRun:
    """What happened when a case ran: its steps, or why it could not run."""

    case: Case
    steps: tuple[StepRun, ...] = ()
    error: str | None = None
    control: bool = False
    epoch: int = 1
    duration_s: float = 0.0
    # How many times the case ran: more than 1 when --recall-retries ran it again after an agent failure.
    attempts: int = 1
    # What the attempts before this one cost (--recall-retries): the spend is every attempt's, not the last one's.
    earlier_cost_usd: float | None = None
    # A case of a group that shared another case's ingest: the memory writes that ingest's steps made (the tap's).
    ingest_writes: int = 0
    # What the last step left in its workdir, for the ``files`` judge; None for every other kind.
    workspace_snapshot: WorkspaceSnapshot | None = None
    # What the agent left (in its scope, HOME, workdir or cost file) that the harness could not handle
    # plainly: a tree too deep, a FIFO, a swapped link. The agent's doing: the case scores 0 for it.
    agent_fault: str | None = None
    # The judge command's verdict on the last answer, when --recall-judge-cmd applies to this case.
    llm_judge: LlmJudgement | None = None
    # The other judge commands' verdicts on it, by name, when --recall-judge-cmd was given more than once.
    other_judges: tuple[tuple[str, LlmJudgement], ...] = ()
    # Why a later step found no memory, when no earlier step kept any (see sessions/lost_memory.py): said
    # in the reason of a case that did not pass.
    memory_hint: str | None = None

    @property
    def judged_stdout(self) -> str:
        """Only the last session's stdout is ever judged."""
        return self.steps[-1].stdout if self.steps else ""
