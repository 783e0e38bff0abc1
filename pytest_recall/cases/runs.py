"""What running a case produced: its sessions, its steps and the whole run, as plain values.

These live beside the case model, below every layer that runs, scores or
reports a case, so that scoring and reporting read a run without knowing how
it was run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_recall.cases.model import Case
from pytest_recall.cases.workspace_tree import WorkspaceSnapshot


@dataclass(frozen=True, slots=True)
class TurnResult:
    """One turn of a live session: the prompt sent, and the answer read back.

    The answer is the output from the send until the agent looked ready for
    more, without the ready prompt itself; ``finished`` is False for a turn
    the session ended in (exit or timeout) before the agent looked ready.
    """

    prompt: str
    answer: bytes
    duration_s: float
    finished: bool


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


@dataclass(frozen=True, slots=True)
class StepRun:
    number: int
    prompt: str
    result: SessionResult
    stdout: str
    stderr: str
    cost_usd: float | None


@dataclass(frozen=True, slots=True)
class CaseRun:
    """What happened when a case ran: its steps, or why it could not run."""

    case: Case
    steps: tuple[StepRun, ...] = ()
    error: str | None = None
    control: bool = False
    epoch: int = 1
    duration_s: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)
    # What the last step left in its workdir, for the ``files`` judge; None for every other kind.
    workspace_snapshot: WorkspaceSnapshot | None = None

    @property
    def judged_stdout(self) -> str:
        """Only the last session's stdout is ever judged."""
        return self.steps[-1].stdout if self.steps else ""
