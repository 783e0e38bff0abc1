"""The run-wide settings a session reads, as small frozen groups, and the one object that carries them.

The run configuration (``pytest_recall.plugin.config.RunConfig``) is built
once from pytest's options. The groups sessions need are defined here and in
the modules that use them (:class:`~pytest_recall.sessions.rooms.Isolation`),
and :class:`SessionSettings` takes them whole, the way httpx passes its
``Timeout`` and ``Limits``: no field is copied from one object to another.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_recall.cases import SessionMode
from pytest_recall.sessions.capture import DEFAULT_MAX_OUTPUT_BYTES
from pytest_recall.sessions.rooms import Isolation, SessionRooms

DEFAULT_TIMEOUT_S = 300.0
DEFAULT_GRACE_S = 3.0

# How a step's prompt reaches the agent: its last argument, its stdin, or a file named in its environment.
PromptMode = Literal["argv", "stdin", "file"]
# A sandbox's hand in every session: the argv to run instead, for the argv and rooms of one session.
Wrapper = Callable[[list[str], SessionRooms], list[str]]


@dataclass(frozen=True, slots=True)
class AgentCommand:
    """The agent under test: the command as given, its words (relative paths made absolute), and how it is prompted.

    ``resolved_paths`` pairs each relative path of the command, as written,
    with the absolute path it runs as, so the run can say so once.
    """

    text: str | None = None
    argv: tuple[str, ...] = ()
    prompt: PromptMode = "argv"
    resolved_paths: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """How long a session may run and how much of its output is kept.

    ``timeout_s`` given run-wide wins over every case's own; None lets each
    case's timeout, or the default, apply.
    """

    timeout_s: float | None = None
    grace_s: float = DEFAULT_GRACE_S
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES


@dataclass(frozen=True, slots=True)
class LiveSettings:
    """Run-wide live-session settings, from a preset, flags or ini, laid over each case's own.

    ``session`` forces every case into that mode. ``protocol`` holds the
    :class:`~pytest_recall.cases.live_protocol.LiveProtocol` fields given
    run-wide, in the order they were given (records state them so).
    """

    session: SessionMode | None = None
    protocol: Mapping[str, Any] = field(default_factory=dict)
    preset: str | None = None
    ok_exit_codes: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """What every session of a run shares: the run configuration's session groups, whole, and what the process adds.

    ``base_env`` is the harness's environment, cleaned; ``wrap_argv`` the
    sandbox's hand; ``shared_scope`` the one memory of ``--recall-scope=suite``.
    """

    command: AgentCommand
    limits: SessionLimits
    isolation: Isolation
    live: LiveSettings
    base_env: Mapping[str, str]
    wrap_argv: Wrapper | None = None
    shared_scope: Path | None = None
