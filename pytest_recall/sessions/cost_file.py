"""Reading ``$RECALL_COST_FILE``: an agent's own word on what a step cost, read as something the agent made.

The agent writes the file, so it may be anything: a FIFO (an ``open`` that
blocks until someone writes, which would hang the whole run), a link to
``/dev/zero`` (a read that never ends) or to a file of the host (whose number
would land in the report), a hard link to one, or JSON nested 100,000 levels
deep. So the file is opened with ``O_NOFOLLOW | O_NONBLOCK``, must be a
regular file with one link (``fstat`` on the open descriptor, so nothing can
be swapped in between), is read up to :data:`MAX_COST_FILE_BYTES`, and its
JSON may nest only a few levels. Its amounts are bounded (:data:`BOUNDS`)
before anything adds them up: a 400-digit dollar figure would overflow the
float it becomes, and 1e308 at two steps would sum to infinity, which no
report can hold. Anything else is a fault of the agent, said in one line:
the case scores 0 for it, the way a failed step does.

A missing file is no fault: many agents report no cost.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_recall.sessions.agent_file import read_agent_file
from pytest_recall.sessions.memory_listing import shown_path

MAX_COST_FILE_BYTES = 64 * 1024
# {"cost_usd": 1.0} is one level; a cost file has no reason to nest deeper than this.
MAX_COST_NESTING = 8
# What one session may report: no agent session spends $1,000 or a billion tokens, and bounded steps keep every
# sum of them (a case's, a run's, --recall-max-cost's) a finite float that JSON can write.
MAX_SESSION_COST_USD = 1000.0
MAX_SESSION_TOKENS = 10**9
_SHA256 = re.compile(r"[0-9a-f]{64}")
BOUNDS = {"cost_usd": MAX_SESSION_COST_USD, "tokens_in": MAX_SESSION_TOKENS, "tokens_out": MAX_SESSION_TOKENS}


@dataclass(frozen=True, slots=True)
class StepCost:
    """What an agent said a step cost, in its cost file: dollars, tokens, or both."""

    cost_usd: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    # A judge's, not an agent's: the SHA-256 of the prompt it asked its model (recall-judge writes it).
    prompt_sha256: str | None = None


def read_cost(cost_file: Path) -> tuple[StepCost, str | None]:
    """The step's cost, and the agent's fault when the file is not a small regular file of ours (else None).

    Unparsable JSON and values that are no amounts (a string, NaN, a negative number) count as no report, not
    as a fault; an amount above its bound (:data:`BOUNDS`, infinity among them) is a fault.
    """
    name = f"RECALL_COST_FILE ({shown_path(cost_file.name)})"
    data, fault = read_agent_file(cost_file, name, MAX_COST_FILE_BYTES)
    if fault is not None or not data:
        return StepCost(), fault
    if _nesting(data) > MAX_COST_NESTING:
        return StepCost(), f"{name} nests more than {MAX_COST_NESTING} levels deep"
    try:
        parsed = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return StepCost(), None
    return _cost_of(parsed, name)


def _cost_of(data: Any, name: str) -> tuple[StepCost, str | None]:
    """The amounts in the parsed file, or the agent's fault when one is more than a session spends."""
    if not isinstance(data, dict):
        return StepCost(), None
    amounts: dict[str, float | None] = dict.fromkeys(BOUNDS)
    for key, bound in BOUNDS.items():
        value = _amount(data.get(key))
        if value is None:
            continue
        # An int of any length compares with a float exactly, with no overflow; infinity is above every bound.
        if not value <= bound:
            return StepCost(), f"{name} says {key} {_shown(value)}, more than one session spends (at most {bound:,.0f})"
        amounts[key] = float(value)
    tokens_in, tokens_out = amounts["tokens_in"], amounts["tokens_out"]
    return StepCost(
        cost_usd=amounts["cost_usd"],
        tokens_in=None if tokens_in is None else int(tokens_in),
        tokens_out=None if tokens_out is None else int(tokens_out),
        prompt_sha256=_sha256(data.get("prompt_sha256")),
    ), None


def _sha256(value: object) -> str | None:
    """A hex SHA-256, or None for anything else: a report holds no free text from this file."""
    return value if isinstance(value, str) and _SHA256.fullmatch(value) else None


def _amount(value: object) -> int | float | None:
    """The number, or None for what is no amount (a string, a bool, null, NaN, a negative number): no report."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if (isinstance(value, float) and math.isnan(value)) or value < 0:
        return None
    return value


def _shown(value: float) -> str:
    """A number as a reason shows it: a 4000-digit integer by its first digits and its length."""
    if isinstance(value, int):
        digits = str(value)
        return digits if len(digits) <= 20 else f"{digits[:12]}… ({len(digits)} digits)"
    return f"{value:g}"


def _nesting(data: bytes) -> int:
    """How deep JSON's brackets nest, those inside strings left out; checked before parsing, which recurses."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif byte in b"]}":
            depth -= 1
    return deepest
