"""Reading ``$RECALL_COST_FILE``: an agent's own word on what a step cost, read as something the agent made.

The agent writes the file, so it may be anything: a FIFO (an ``open`` that
blocks until someone writes, which would hang the whole run), a link to
``/dev/zero`` (a read that never ends) or to a file of the host (whose number
would land in the report), a hard link to one, or JSON nested 100,000 levels
deep. So the file is opened with ``O_NOFOLLOW | O_NONBLOCK``, must be a
regular file with one link (``fstat`` on the open descriptor, so nothing can
be swapped in between), is read up to :data:`MAX_COST_FILE_BYTES`, and its
JSON may nest only a few levels. Anything else is a fault of the agent, said
in one line: the case scores 0 for it, the way a failed step does.

A missing file is no fault: many agents report no cost.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_recall.sessions.agent_file import read_agent_file
from pytest_recall.sessions.memory_listing import shown_path

MAX_COST_FILE_BYTES = 64 * 1024
# {"cost_usd": 1.0} is one level; a cost file has no reason to nest deeper than this.
MAX_COST_NESTING = 8


@dataclass(frozen=True, slots=True)
class StepCost:
    """What an agent said a step cost, in its cost file: dollars, tokens, or both."""

    cost_usd: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None


def read_cost(cost_file: Path) -> tuple[StepCost, str | None]:
    """The step's cost, and the agent's fault when the file is not a small regular file of ours (else None).

    Unparsable JSON and values that are no amounts count as no report, not as a fault.
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
    return _cost_of(parsed), None


def _cost_of(data: Any) -> StepCost:
    if not isinstance(data, dict):
        return StepCost()
    cost, tokens_in, tokens_out = (_amount(data.get(key)) for key in ("cost_usd", "tokens_in", "tokens_out"))
    return StepCost(
        cost_usd=cost,
        tokens_in=None if tokens_in is None else int(tokens_in),
        tokens_out=None if tokens_out is None else int(tokens_out),
    )


def _amount(value: Any) -> float | None:
    """A finite, non-negative number, or None: NaN and negative costs are no report."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


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
