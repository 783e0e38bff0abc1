"""How a live session talks to an agent's terminal: what a turn is, when the agent is ready, how it ends.

A REPL or a TUI is not a pipe. ``llm chat`` takes a line as a whole turn
unless the turn is framed with ``!multi`` … ``!end``; Claude Code and Codex
read their terminal raw and take a multi-line turn only as one bracketed
paste; each has its own way out, and Ctrl-D is not always it. So the way a
session's turns are typed is data a user can write down, in case.toml,
suite.toml, on the command line or through a preset, rather than guessed by
the harness.

Readiness and answers are read from the *rendered screen* (see
:class:`pytest_recall.sessions.render.LiveScreen`), not from the byte stream:
a TUI redraws its whole frame many times a turn, and only the screen says
what a person would read.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

PasteMode = Literal["typed", "bracketed"]
PASTE_MODES: tuple[str, ...] = get_args(PasteMode)
PROMPT_SLOT = "{prompt}"
DEFAULT_TURN_TEMPLATE = PROMPT_SLOT + "\n"
# What a terminal sends around pasted text once the program has asked for bracketed paste (DECSET 2004).
PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"
# The Enter key as a terminal sends it; the line discipline of a cooked terminal turns it into "\n".
ENTER = b"\r"
# The settings of this module, as case.toml and suite.toml name them.
PROTOCOL_KEYS = ("turn_template", "paste", "quit", "ready_pattern", "ready_idle", "answer_pattern")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "e": "\x1b", "\\": "\\", "0": "\0"}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|.)", re.DOTALL)


class ProtocolError(ValueError):
    """A live-session setting that cannot work; the message says which and why."""


@dataclass(frozen=True, slots=True)
class LiveProtocol:
    """The turn protocol of one live session.

    ``turn_template`` is what is typed for a turn, ``{prompt}`` standing for
    the step's prompt (its final newline dropped, so the template decides how
    the turn ends). ``paste = "bracketed"`` sends the turn as one bracketed
    paste and then Enter, the way a terminal delivers pasted text to a TUI.
    ``quit`` is sent after the last answer; None sends the terminal's
    end-of-file character (Ctrl-D). ``ready_pattern`` is a regular expression
    (multi-line mode) searched on the screen lines changed since the turn was
    sent; the agent is ready when it shows and the screen has then been still
    for ``ready_idle_s`` (a short settle by default). Without a pattern, the
    agent is ready after ``ready_idle_s`` of quiet. ``answer_pattern``, for
    TUIs that frame the assistant's message, picks the answer out of what
    the turn showed: its last match's first group, or, for a pattern without
    groups, everything after its last match; the answer is then dedented.
    """

    turn_template: str = DEFAULT_TURN_TEMPLATE
    paste: PasteMode = "typed"
    quit: str | None = None
    ready_pattern: str | None = None
    ready_idle_s: float | None = None
    answer_pattern: str | None = None

    def turn_text(self, prompt: str) -> str:
        return self.turn_template.replace(PROMPT_SLOT, prompt.removesuffix("\n"))

    def turn_keys(self, prompt: str) -> tuple[bytes, ...]:
        """The key presses of one turn, in parts sent one after another, with a pause between.

        A pasted turn's Enter goes on its own: TUIs that time their paste
        detection would otherwise take the Enter as part of the paste.
        """
        text = self.turn_text(prompt).encode("utf-8")
        if self.paste == "bracketed":
            return (PASTE_START + text.rstrip(b"\r\n") + PASTE_END, ENTER)
        return (text,)

    def quit_keys(self, eof: bytes) -> bytes:
        return eof if self.quit is None else self.quit.encode("utf-8")

    @property
    def typed(self) -> bool:
        return self.paste == "typed"


# The protocol of a case that says nothing of it: typed turns, Ctrl-D at the end, ready after quiet.
DEFAULT_PROTOCOL = LiveProtocol()
# The two fields that say when the agent is ready; they are set, and replaced, as a pair.
READINESS_FIELDS = ("ready_pattern", "ready_idle_s")


def layer_protocol(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over``'s protocol fields laid over ``base``'s: a preset under the flags, a case under the run.

    Readiness is one rule: a pattern and its settle belong together, so an
    ``over`` that names either half replaces ``base``'s pair as a whole.
    """
    layered = dict(base)
    if any(name in over for name in READINESS_FIELDS):
        for name in READINESS_FIELDS:
            layered.pop(name, None)
    layered.update(over)
    return layered


def laid_over(protocol: LiveProtocol, over: Mapping[str, Any]) -> LiveProtocol:
    """A case's protocol with the run-wide fields laid over it (see :func:`layer_protocol`)."""
    if not over:
        return protocol
    return LiveProtocol(**layer_protocol(dataclasses.asdict(protocol), over))


def decode_escapes(text: str) -> str:
    r"""``\n``, ``\r``, ``\t``, ``\e`` (escape), ``\0``, ``\\`` and ``\xHH`` in a value from a flag or an ini file.

    TOML has escapes of its own; a shell argument does not, and keys such as
    Enter (``\r``) or Ctrl-C (``\x03``) cannot be typed into one otherwise.
    """

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code.startswith("x") and len(code) == 3:
            return chr(int(code[1:], 16))
        return _ESCAPES.get(code, match.group(0))

    return _ESCAPE.sub(one, text)


def protocol_fields(settings: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The :class:`LiveProtocol` fields given in ``settings`` (case.toml, suite.toml, flags), checked.

    Only the keys present are returned, so that each layer overrides just
    what it names. ``ready_idle`` arrives in seconds, already parsed.
    """
    fields: dict[str, Any] = {}
    if "turn_template" in settings:
        template = str(settings["turn_template"])
        if PROMPT_SLOT not in template:
            raise ProtocolError(f"{source}: turn_template must hold {PROMPT_SLOT}, where the step's prompt goes")
        fields["turn_template"] = template
    if "paste" in settings:
        paste = str(settings["paste"])
        if paste not in PASTE_MODES:
            raise ProtocolError(f"{source}: paste must be one of {', '.join(PASTE_MODES)}, not {paste!r}")
        fields["paste"] = paste
    if "quit" in settings:
        fields["quit"] = None if settings["quit"] is None else str(settings["quit"])
    for key in ("ready_pattern", "answer_pattern"):
        if key in settings and settings[key] is not None:
            pattern = str(settings[key])
            try:
                re.compile(pattern, re.MULTILINE)
            except re.error as exc:
                raise ProtocolError(f"{source}: {key} is not a valid regular expression ({exc})") from None
            fields[key] = pattern
    if "ready_idle" in settings:
        fields["ready_idle_s"] = settings["ready_idle"]
    return fields


def parse_exit_codes(value: Any, source: str) -> tuple[int, ...]:
    """``ok_exit_codes``: a list of integers (TOML) or a comma-separated string (flag, ini)."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items:
        raise ProtocolError(f"{source}: ok_exit_codes must be a list of exit codes, such as [0, 130]")
    codes = []
    for item in items:
        try:
            code = int(str(item).strip()) if not isinstance(item, bool) else -1
        except ValueError:
            code = -1
        if not 0 <= code <= 255:
            raise ProtocolError(f"{source}: ok_exit_codes holds {item!r}, which is not an exit code from 0 to 255")
        codes.append(code)
    return tuple(sorted(set(codes)))
