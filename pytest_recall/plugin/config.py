"""The run configuration: small frozen groups, built once from pytest's options and passed whole.

Like httpx's ``Timeout`` and ``Limits``, each group holds one concern, and
code takes the group it needs rather than a copy of its fields. The groups a
session reads are defined beside the code that uses them
(:mod:`pytest_recall.sessions.settings`, :class:`~pytest_recall.sessions.rooms.Isolation`,
:class:`~pytest_recall.sessions.sandbox.SandboxSettings`); the ones only the
glue reads are here. :mod:`pytest_recall.plugin.configure` builds a
:class:`RunConfig` at configure time and checks every value then, even one
used only at the end of the run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from pytest_recall.cases import READINESS_FIELDS
from pytest_recall.reporting import DEFAULT_TRANSCRIPTS, Gate, TranscriptMode
from pytest_recall.scoring import DEFAULT_THRESHOLD, AnswerJudgeName, RepeatPlan
from pytest_recall.sessions import (
    DEFAULT_RATE_LIMIT_ATTEMPTS,
    AgentCommand,
    Isolation,
    LiveSettings,
    LlmJudgeSettings,
    SandboxSettings,
    SessionLimits,
    SessionSettings,
    Wrapper,
)

# --recall-stop: 'never' runs every case; 'decided' stops starting them once the score gate is decided (plugin/stop.py).
StopMode = Literal["never", "decided"]
# The first retry's delay; rate limits usually lift within seconds.
DEFAULT_RETRY_DELAY_S = 5.0


@dataclass(frozen=True, slots=True)
class EpochChoice:
    """--recall-epochs-from: the earlier report that chose which cases repeat, read once at the start: the choice
    and the hash the protocol block gives come from the same reading, even if the file changes during the run."""

    path: Path
    report_sha256: str
    # (suite, case id) of the cases its epochs found stable: each runs once.
    settled: frozenset[tuple[str, str]]
    # --recall-ci-width: the half-width asked for, and each baseline case's runs that the baseline says reach it.
    ci_width: float | None = None
    plan: RepeatPlan | None = None

    def runs_of(self, case: tuple[str, str], epochs: int) -> int:
        """How many times a case runs: as planned for the width, else once when settled, else every epoch."""
        if self.plan is not None:
            return self.plan.runs.get(case, epochs)
        return 1 if case in self.settled else epochs


@dataclass(frozen=True, slots=True)
class ScaleOut:
    """How the run's cases are spread: at once, repeated, controlled, retried, sharded, resumed."""

    concurrency: int = 1
    epochs: int = 1
    epochs_from: EpochChoice | None = None
    control: bool = False
    retries: int = 0
    retry_delay_s: float = DEFAULT_RETRY_DELAY_S
    # Runs of a case the model refuses for a rate limit before it ends as ``rate_limited``.
    rate_limit_attempts: int = DEFAULT_RATE_LIMIT_ATTEMPTS
    # No case starts once this process's reported spend (every attempt's) reaches it; None is no limit.
    max_cost_usd: float | None = None
    shard: tuple[int, int] | None = None
    shard_durations_path: Path | None = None
    resume_path: Path | None = None
    # --recall-stop: 'decided' stops starting cases once the score gate is decided.
    stop: StopMode = "never"


@dataclass(frozen=True, slots=True)
class Outputs:
    """What the run writes and how it is judged as a whole.

    ``created_outside`` holds one line per output whose missing folders will
    be made outside the working tree, shown in the header.
    """

    threshold: float = DEFAULT_THRESHOLD
    gate: Gate = "cases"
    report_path: Path | None = None
    html_path: Path | None = None
    log_path: Path | None = None
    transcripts: TranscriptMode = DEFAULT_TRANSCRIPTS
    # With --collect-only: an earlier report whose median cost and time per session price this run.
    estimate_from: Path | None = None
    # ``--recall-answer-judge``: each case's last answer judged as an answer, or only searched for the gold.
    answer_judge: AnswerJudgeName = "answer"
    created_outside: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Every ``--recall-*`` setting of one run, checked, in groups."""

    command: AgentCommand = field(default_factory=AgentCommand)
    limits: SessionLimits = field(default_factory=SessionLimits)
    isolation: Isolation = field(default_factory=Isolation)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    live: LiveSettings = field(default_factory=LiveSettings)
    scale_out: ScaleOut = field(default_factory=ScaleOut)
    outputs: Outputs = field(default_factory=Outputs)
    llm_judge: LlmJudgeSettings = field(default_factory=LlmJudgeSettings)
    preflight: bool = False

    def sessions(self, base_env: Mapping[str, str], wrap_argv: Wrapper | None) -> SessionSettings:
        """What every session of this run shares: the session groups, whole, with the process's additions."""
        return SessionSettings(self.command, self.limits, self.isolation, self.live, base_env, wrap_argv)

    def named_files(self) -> Iterator[Path]:
        """Every file a setting names (report, HTML, log, resume, durations, estimate): all hold expected answers."""
        outputs, scale_out = self.outputs, self.scale_out
        for path in (
            outputs.report_path,
            outputs.html_path,
            outputs.log_path,
            scale_out.resume_path,
            scale_out.shard_durations_path,
            scale_out.epochs_from.path if scale_out.epochs_from is not None else None,
            outputs.estimate_from,
        ):
            if path is not None:
                yield path

    def run_mode(self) -> dict[str, Any]:
        """How this run makes its sessions, where that changes what is measured; every record states it."""
        isolation, live = self.isolation, self.live
        return {
            "sandbox": self.sandbox.mode,
            "sandbox_binds": [str(path) for path in self.sandbox.binds],
            "sandbox_net": self.sandbox.network if self.sandbox.on else None,
            "home": isolation.home,
            "home_copy": [f"{copy.source}:{copy.dest}" for copy in isolation.home_copy],
            "workdir": isolation.workdir,
            "prompt": self.command.prompt,
            "env": [f"-{name}" if value is None else f"{name}={value}" for name, value in isolation.env],
            "session": live.session,
            "ready_pattern": live.protocol.get("ready_pattern"),
            "ready_idle_s": live.protocol.get("ready_idle_s"),
            "live_preset": live.preset,
            "turn_protocol": {k: v for k, v in live.protocol.items() if k not in READINESS_FIELDS} or None,
            "ok_exit_codes": None if live.ok_exit_codes is None else list(live.ok_exit_codes),
            "scope": isolation.scope,
            # Only when set, so a run without them keeps the mode key older run logs resume by.
            **({"mcp_servers": sorted(isolation.mcp_servers)} if isolation.mcp_servers else {}),
            **({"answer_judge": self.outputs.answer_judge} if self.outputs.answer_judge != "answer" else {}),
            **self.llm_judge.run_mode(),
        }


CONFIG_KEY = pytest.StashKey[RunConfig]()
