"""Terminal output as text: decoded without fail, and cleaned of terminal noise.

Every layer that shows or judges what an agent printed uses these, so there is
one idea of what an escape sequence is. Terminal noise (colours, cursor moves, spinners that
rewrite a line with CR, the pty's CRLF) is removed from the judged text,
because the agent's answer is what a person would read on the screen.
"""

from __future__ import annotations

import re


def decode(data: bytes) -> str:
    """Bytes to text that never fails: invalid UTF-8 becomes U+FFFD."""
    return data.decode("utf-8", errors="replace")


_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\|\Z)"  # OSC: titles, hyperlinks (cut off at the end, too)
    r"|\x1b[PX^_][^\x1b]*\x1b\\"  # DCS, SOS, PM, APC strings
    r"|\x1b[()*+][0-9A-Za-z]"  # charset selection
    r"|\x1b[@-Z\\-_=>78]"  # two-byte escapes
)
_CR_BEFORE_NEWLINE = re.compile(r"\r+\n")
_BACKSPACED = re.compile(r"[^\n\x08]\x08")
_INVISIBLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def strip_escapes(text: str) -> str:
    """Text without terminal escape sequences (colours, cursor moves, titles, clipboard writes)."""
    return _ESCAPE_SEQUENCE.sub("", text)


def clean_terminal_text(text: str) -> str:
    """What a terminal would show, line by line, as plain text."""
    text = strip_escapes(text)
    text = _CR_BEFORE_NEWLINE.sub("\n", text)
    while "\x08" in text:
        reduced = _BACKSPACED.sub("", text)
        if reduced == text:
            break
        text = reduced
    if "\r" in text:
        text = "\n".join(_last_rewrite(line) for line in text.split("\n"))
    return _INVISIBLE.sub("", text)


def _last_rewrite(line: str) -> str:
    """A line rewritten with CR shows its last non-empty version."""
    if "\r" not in line:
        return line
    for version in reversed(line.split("\r")):
        if version:
            return version
    return ""
