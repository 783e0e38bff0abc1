"""Live-session presets: how to drive each adapter's CLI as a REPL or TUI, one turn per step.

``--recall-live-preset=NAME`` runs every case live (``session = "continue"``)
with the preset's command, unless ``--recall-cmd`` names another, and its turn
protocol (:class:`~pytest_recall.cases.live_protocol.LiveProtocol`); any
protocol flag given as well wins over the preset's value. Each value was
found by driving the pinned CLI against the fake model server, and
``tests/test_live_clis.py`` holds them to it.

The commands are the adapters' ``--live`` launchers: each seeds what its CLI
needs to start unattended in a fresh HOME and working folder (Claude Code's
onboarding and folder trust, say), then becomes the CLI on the same terminal.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_recall.cases.live_protocol import LiveProtocol


@dataclass(frozen=True, slots=True)
class LivePreset:
    """One CLI's live launcher, turn protocol and the exit statuses it ends well with."""

    name: str
    command: tuple[str, ...]
    protocol: LiveProtocol
    ok_exit_codes: tuple[int, ...] = (0,)
    about: str = ""


PRESETS: dict[str, LivePreset] = {
    preset.name: preset
    for preset in (
        LivePreset(
            name="llm-chat",
            command=("recall-llm", "--live"),
            # llm chat takes each line as a turn; !multi ... !end makes the whole step one turn.
            protocol=LiveProtocol(
                turn_template="!multi\n{prompt}\n!end\n",
                quit="exit\n",
                ready_pattern=r"^> $",
            ),
            about="llm chat; a step is framed with !multi/!end and the session ends with 'exit'",
        ),
        LivePreset(
            name="claude",
            command=("recall-claude", "--live"),
            protocol=LiveProtocol(paste="bracketed", quit="/exit\r", ready_pattern=r"^\s*>\s*$"),
            about="Claude Code's TUI; a step is one bracketed paste, and /exit ends the session",
        ),
        LivePreset(
            name="codex",
            command=("recall-codex", "--live"),
            protocol=LiveProtocol(paste="bracketed", quit="/quit\r", ready_pattern=r"^\s*›\s*$"),
            about="Codex's TUI; a step is one bracketed paste, and /quit ends the session",
        ),
    )
}
