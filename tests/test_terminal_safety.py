"""An agent's stderr reaches the user's terminal only as plain text (issue 14, item 13)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

HOSTILE_DIR = Path(__file__).resolve().parent / "hostile"


def test_agent_stderr_escape_sequences_never_reach_the_terminal_or_the_report(recall_suite: Any) -> None:
    recall_suite.add("painter", ["say 1.00", "say 12345.67"], "12345.67")
    painter = shlex.join([sys.executable, str(HOSTILE_DIR / "painter.py")])
    result = recall_suite.run("-rA", command=painter)
    result.assert_outcomes(failed=1)
    shown = result.stdout.str() + result.stderr.str()
    assert "\x1b" not in shown and "\x07" not in shown
    # The text itself is still shown, as a person would have read it on a terminal.
    result.stdout.fnmatch_lines(["*stderr*", "*8 passed in 0.01s*"])
    stderr = recall_suite.records()["painter"]["steps"][-1]["stderr"]
    assert "\x1b" not in stderr and "8 passed in 0.01s" in stderr
