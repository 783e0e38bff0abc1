"""Why a later step found no memory: what an earlier step left where, said in the case's reason.

The most natural first try at memory is a notes file in the working folder,
and every step gets a new one (or, with ``--recall-workdir=case``, the same
one emptied): the note is gone before the next session starts. The harness
saw it go, so it says so, rather than leave every case at "the value did not
survive into the new session". It looks at the working folder once a step,
before removing it, and only at the names at its top: one ``scandir``,
bounded, nothing read.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_recall.cases import StepRun
from pytest_recall.sessions.memory_listing import shown_path
from pytest_recall.sessions.rooms import Isolation

# The hint names this many of what a step left; the count says how many more there were.
NAMED_ENTRIES = 3
# A workdir's entries looked at, at most: an agent that left a million files is not read a million times.
SCAN_LIMIT = 1000
# A name longer than this is cut: the hint is one line of a failure, not a listing.
NAME_CHARS = 60


@dataclass(frozen=True, slots=True)
class Leftovers:
    """What one step left at the top of its working folder as it ended: some names, and how many there were."""

    step: int
    names: tuple[str, ...]
    count: int


def workdir_leftovers(step: int, workdir: Path) -> Leftovers | None:
    """The top of ``workdir`` as the step left it, or None when it left nothing there."""
    names: list[str] = []
    try:
        with os.scandir(workdir) as listing:
            for entry in listing:
                suffix = "/" if entry.is_dir(follow_symlinks=False) else ""
                names.append(_printable(shown_path(entry.name))[:NAME_CHARS] + suffix)
                if len(names) >= SCAN_LIMIT:
                    break
    except OSError:
        return None
    return Leftovers(step, tuple(sorted(names)), len(names)) if names else None


def lost_memory_hint(steps: Sequence[StepRun], leftovers: Sequence[Leftovers], isolation: Isolation) -> str | None:
    """Where an earlier step wrote and where memory must go, when no step before the last kept any; else None.

    Only the folders the memory listing covers count as kept: ``RECALL_SCOPE_DIR``, and HOME when it is the
    case's own (with ``--recall-home=user``, your HOME is not listed, and the hint names the scope alone).
    A step that left nothing in its working folder either gets no hint: an unanswerable step, an agent
    with nothing to keep, or one whose memory lives elsewhere, is not told it lost anything.
    """
    earlier = steps[:-1]
    if not earlier or any(step.memory_files for step in earlier) or any(step.result.failed for step in steps):
        return None
    own_home = isolation.home == "case"
    kept_nowhere = "RECALL_SCOPE_DIR or HOME" if own_home else "RECALL_SCOPE_DIR"
    must_go = "under $RECALL_SCOPE_DIR or $HOME" if own_home else "under $RECALL_SCOPE_DIR (or your HOME)"
    first = min(leftovers, key=lambda left: left.step, default=None)
    if first is None:
        return None  # it wrote nowhere the harness sees (or somewhere else it may remember): nothing to name
    shown = ", ".join(first.names[:NAMED_ENTRIES])
    more = f" and {first.count - NAMED_ENTRIES} more" if first.count > NAMED_ENTRIES else ""
    gone = "emptied before the next step" if isolation.workdir == "case" else "removed when the step ends"
    return (
        f"step {first.step} kept nothing in {kept_nowhere} but left {shown}{more} in its working folder, "
        f"which is {gone}: keep what the agent remembers {must_go}"
    )


def _printable(name: str) -> str:
    """A name the agent chose, safe on a terminal: a newline or an escape is shown as ``\\n`` or ``\\x1b``."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in name)
