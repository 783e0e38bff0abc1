"""The judged text is what the terminal screen showed: cursor moves, erases and redraws applied."""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_recall.scoring.judge import judge_answer
from pytest_recall.sessions.render import RENDER_TAIL_CHARS, render_terminal
from pytest_recall.terminal_text import clean_terminal_text

HOSTILE_DIR = Path(__file__).resolve().parent / "hostile"
EXPECTED = {"answer": "12345.67", "answer_kind": "money"}


def redraw_agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("redraw", HOSTILE_DIR / "redraw.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("Thinking...\r\n\x1b[1A\x1b[2K\rthe answer is 42\r\n", "the answer is 42\n"),
        ("one\r\ntwo\r\nthree\r\n\x1b[2A\r\x1b[Jfinal\r\n", "one\nfinal\n"),
        ("12,000.00\x1b[10D\x1b[K12,345.67", "12,345.67"),
        ("draft 1\x1b7\r\nmore\x1b8\x1b[K\r\x1b[2Kkept", "kept\nmore"),
        ("\x1b[2J\x1b[H\x1b[3;5Hmoved\r\n", "    moved\n"),
        ("\x1b[31mred\x1b[0m \x1b[1Kx\r\n", "    x\n"),
        ("ab\x1b[Dé 中文 ok\x1b[K\r\n", "aé 中文 ok\n"),
    ],
)
def test_cursor_moves_and_erases_are_applied_not_stripped(raw: str, shown: str) -> None:
    assert render_terminal(raw) == shown


@pytest.mark.parametrize(
    "raw",
    [
        "| working\r/ working\r- working\r27436.42\n",
        "Working... 10%\rWorking... 100%\r\x1b[K27436.42",
        "\x1b[31m27436.42\x1b[0m",
        "2743X\b6.42",
        "Ledger — résumé 第二\n\tindented\n27436.42\n",
        "a\x00b\x07c\x0b\x0c\x7fd\te\n",
    ],
)
def test_output_that_never_moves_the_cursor_is_judged_exactly_as_before(raw: str) -> None:
    assert render_terminal(raw) == clean_terminal_text(raw)


def test_a_line_longer_than_the_terminal_is_not_broken_at_its_width() -> None:
    long_line = "word " * 100 + "12,345.67"
    assert render_terminal(f"{long_line}\r\n\x1b[K") == long_line
    assert render_terminal(f"{'x' * 400}\r\nend\x1b[K\r\n", size=(24, 200)) == "x" * 400 + "\nend\n"


def test_output_longer_than_one_screen_keeps_its_scrollback_in_order() -> None:
    lines = [f"line {n}" for n in range(500)]
    raw = "\r\n".join(lines) + "\r\n\x1b[1A\x1b[2Klast\r\n"
    assert render_terminal(raw).splitlines() == [*lines[:-1], "last"]


def test_only_the_tail_is_rendered() -> None:
    head = "early 11,111.11\r\n" * (RENDER_TAIL_CHARS // 16)
    shown = render_terminal(head + "\x1b[Kanswer 12,345.67\r\n")
    assert shown.endswith("answer 12,345.67\n")
    assert len(shown) <= RENDER_TAIL_CHARS


def test_the_redraw_agent_scores_on_the_screen_but_would_score_zero_stripped() -> None:
    raw = redraw_agent().stream("12,345.67").decode()
    shown = render_terminal(raw)
    assert shown.splitlines()[-1] == "12,345.67"
    assert "99,999.99" not in shown and "55,555.55" not in shown and "Looking at\n" not in shown
    assert judge_answer(shown, EXPECTED)["score"] == 1.0
    # The same bytes with escapes merely stripped: the erased status line's figure is the last word.
    assert judge_answer(clean_terminal_text(raw), EXPECTED)["score"] == 0.0


def test_a_redrawing_agent_is_judged_on_what_its_screen_showed(recall_suite: Any) -> None:
    recall_suite.add("redraw", ["remember 12345.67", "what was the closing balance?"], "12345.67")
    command = shlex.join([sys.executable, str(HOSTILE_DIR / "redraw.py")])
    result = recall_suite.run(command=command)
    result.assert_outcomes(passed=1)
    step = recall_suite.records()["redraw"]["steps"][-1]
    assert step["stdout"].splitlines() == [
        "Looking at my notes from the first session.",
        "The closing balance was:",
        "12345.67",
    ]
    # The raw capture is kept as it was: its size counts every redraw.
    assert step["stdout_bytes"] > len(step["stdout"])
