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

from pytest_recall.cases import LiveProtocol


@dataclass(frozen=True, slots=True)
class LivePreset:
    """One CLI's live launcher, turn protocol and the exit statuses it ends well with."""

    name: str
    command: tuple[str, ...]
    protocol: LiveProtocol
    ok_exit_codes: tuple[int, ...] = (0,)
    about: str = ""


# Claude Code's idle screen: the empty input box, its top rule first (the answer is what comes before it),
# and the footer without "esc to interrupt", which it shows while a turn runs.
_CLAUDE_IDLE = (
    r"^─.*\n❯[ \xa0]*\n─.*\n[ \t]*⏵⏵ bypass permissions on \(shift\+tab to cycle\)(?:(?!esc to interrupt).)*$"
)
# Its messages start with "● ", continued on lines indented by two; the last one is the answer.
_CLAUDE_MESSAGE = r"^● (.*(?:\n  .*)*)"

# Codex's idle screen: its composer ("› " and whatever placeholder) over the footer it shows once start-up
# is done ("← for agents"; before that a turn's Enter is lost). The line above the composer comes first (the
# answer is what comes before it): after a turn "Worked for 1s", never the "◦ Working (… esc to interrupt)"
# status it shows while a turn runs, nor an answer's "• " line.
_CODEX_IDLE = (
    r"^(?![^\n]*esc to interrupt)(?![◦•] )[^\n]*\S[^\n]*\n(?:[ \t]*\n)*› [^\n]*\n(?:[ \t]*\n)*[^\n]*\n"
    r"[ \t]*← for agents · \? for shortcuts"
)
# Its messages start with "• " (a tool call's too), continued on lines indented by two; the last one is the answer.
_CODEX_MESSAGE = r"^• (.*(?:\n  .*)*)"

PRESETS: dict[str, LivePreset] = {
    preset.name: preset
    for preset in (
        LivePreset(
            name="llm-chat",
            command=("recall-llm", "--live"),
            # llm chat takes each line as a turn; !multi ... !end makes the whole step one turn.
            protocol=LiveProtocol(turn_template="!multi\n{prompt}\n!end\n", quit="quit\r", ready_pattern=r"^>\s*\Z"),
            about="llm chat; each step is framed with !multi/!end, and 'quit' ends the session",
        ),
        LivePreset(
            name="claude",
            command=("recall-claude", "--live"),
            protocol=LiveProtocol(
                paste="bracketed",
                quit="/exit\r",
                ready_pattern=_CLAUDE_IDLE,
                ready_idle_s=1.0,
                answer_pattern=_CLAUDE_MESSAGE,
            ),
            about="Claude Code's TUI; each step is one bracketed paste, and /exit ends the session",
        ),
        LivePreset(
            name="codex",
            command=("recall-codex", "--live"),
            # Codex takes keys typed in a burst as a paste, so "/quit\r" sent at once leaves "/quit" in the
            # composer; Ctrl-D on the empty composer quits, exit 0.
            protocol=LiveProtocol(
                paste="bracketed",
                quit="\x04",
                ready_pattern=_CODEX_IDLE,
                ready_idle_s=1.0,
                answer_pattern=_CODEX_MESSAGE,
            ),
            about="Codex's TUI; each step is one bracketed paste, and Ctrl-D ends the session",
        ),
    )
}
