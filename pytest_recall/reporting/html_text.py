"""Text for the HTML page: hostile agent output made safe, and numbers in the units a person reads.

Shared by the page's server-drawn sections (``reporting.html``) and the case
rows it hands to its script as data (``reporting.html_cases``): both must
clean agent output the same way, whether it is escaped into markup here or
placed with ``textContent`` by the script.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup, escape

from pytest_recall.scoring import scored_a_pass
from pytest_recall.terminal_text import strip_escapes

# Colour escapes from terminal agents would otherwise show up as junk like "␛[31m".
# Characters HTML forbids. The astral noncharacters (U+1FFFE ...) make a slow class,
# so they get their own pattern, run only on text that has astral characters at all.
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_ASTRAL_NONCHARACTERS = re.compile(
    "[" + "".join(chr(plane + low) for plane in range(0x10000, 0x110000, 0x10000) for low in (0xFFFE, 0xFFFF)) + "]"
)
# Terminal output ends lines with CR LF, and progress bars redraw with a bare CR.
_CARRIAGE_RETURN = re.compile("\r\n?")
# Outcome labels, worst first: the page's case tables sort by this rank.
# The order is the script's (``LABELS`` and ``TONES`` in html_script.SCRIPT): worst first, unmeasured last.
STATUS_LABELS = ("ERROR", "FAIL", "PARTIAL", "PASS", "NO GOLD", "RATE LIMITED")


def clean_text(value: Any) -> str:
    """Text with escapes stripped and forbidden characters made visible; not yet escaped for markup."""
    if value is None:
        return ""
    if isinstance(value, str) and value.isascii() and value.isprintable():
        return value  # the common case, and nothing to clean: no escape, no control character, no CR
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    text = _FORBIDDEN.sub(_visible, _CARRIAGE_RETURN.sub("\n", strip_escapes(text)))
    if _ASTRAL.search(text):
        text = _ASTRAL_NONCHARACTERS.sub("\ufffd", text)
    return text


def clean(value: Any) -> Markup:
    """Text safe to place anywhere in the page: forbidden characters made visible, then escaped."""
    return Markup("") if value is None else escape(clean_text(value))


def _visible(match: re.Match[str]) -> str:
    """A NUL or other control byte shows as ``\\x00``, so evidence of junk output is kept, not hidden."""
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0x9F else "\ufffd"


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def percent(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{100 * value:.{digits}f}%"


def seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f} s"


def usd(value: float | None, missing: str = "not reported") -> str:
    return missing if value is None else f"${value:.4f}"


def byte_size(value: Any) -> str:
    """What an agent kept between sessions, in the unit a person reads at a glance."""
    if not isinstance(value, int) or isinstance(value, bool):
        return "–"
    if value < 1024:
        return f"{value} B"
    return f"{value / 1024:.1f} KB" if value < 1 << 20 else f"{value / (1 << 20):.1f} MB"


def status(score: float | None, error: Any, outcome: Any = None) -> tuple[str, str]:
    """A label that says the outcome in words (colour alone is not enough), and its CSS tone. A case the
    model's rate limit stopped was never measured: it is not dressed as forgetting."""
    if outcome == "rate_limited":
        return ("RATE LIMITED", "muted")
    if score is None:
        return ("ERROR", "bad") if error else ("NO GOLD", "muted")
    if scored_a_pass(score):
        return ("PASS", "good")
    return ("PARTIAL", "warn") if score > 0 else ("FAIL", "bad")


def table_row(cell: str, contents: Sequence[Markup | str]) -> Markup:
    """A table row; a plain string among the contents is escaped, markup is kept."""
    cells = Markup("").join(Markup("<{0}>{1}</{0}>").format(cell, content) for content in contents)
    return Markup("<tr>{}</tr>\n").format(cells)
