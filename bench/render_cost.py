"""Render cost: what judging the screen (pyte) instead of the stripped text costs per session.

Three outputs, each judged both ways in this process, best of ``--repeat``:

- plain: 2 KB of lines and colours, no cursor move, as most agents print;
  it takes the stripping path, so the two must cost the same;
- streamed: an answer of 40 lines streamed aider-style, four fragments a
  line, each redrawing the last six lines after a cursor move up and an
  erase (about 40 KB raw);
- worst: a full 8 MiB capture of one-character lines that each erase to
  their end; only the last 256 KiB is rendered, so this is the most a
  session can cost.

Goal: the streamed session under 50 ms; the worst case under 2 s.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable

from _common import ROOT, Row, ms, parse_args, print_table, ratio_of

sys.path.insert(0, str(ROOT))
from pytest_recall.sessions.capture import DEFAULT_MAX_OUTPUT_BYTES
from pytest_recall.sessions.render import render_terminal
from pytest_recall.terminal_text import clean_terminal_text

GOALS_S = {"streamed": 0.05, "worst": 2.0}


def plain_output() -> str:
    return "".join(f"\x1b[32mline {n}\x1b[0m: some words of an answer\r\n" for n in range(60)) + "1234.56\r\n"


def streamed_output(lines: int = 40, frames_per_line: int = 4, window: int = 6) -> str:
    """Each new fragment redraws the last ``window`` lines of the reply, as aider's markdown stream does."""
    text = [f"Line {n} of the reply, with a few words in it." for n in range(lines)] + ["1234.56"]
    out, drawn = [], 0
    for upto in range(1, len(text) + 1):
        for frame in range(1, frames_per_line + 1):
            tail = text[max(0, upto - window) : upto - 1]
            shown = [*tail, text[upto - 1][: len(text[upto - 1]) * frame // frames_per_line]]
            if drawn:
                out.append(f"\x1b[{drawn}A\r\x1b[J")
            out.append("\r\n".join(shown) + "\r\n")
            drawn = len(shown)
    return "".join(out)


def worst_output() -> str:
    line = "x\x1b[K\r\n"  # short lines: the emulator's cost is mostly per line
    return line * (DEFAULT_MAX_OUTPUT_BYTES // len(line)) + "1234.56\r\n"


def best_of(action: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeat=5)
    outputs = {"plain": plain_output(), "streamed": streamed_output(), "worst": worst_output()}
    rows = []
    for name, text in outputs.items():
        rendered = best_of(functools.partial(render_terminal, text), args.repeat)
        stripped = best_of(functools.partial(clean_terminal_text, text), args.repeat)
        assert render_terminal(text).rstrip().endswith("1234.56"), name
        goal = GOALS_S.get(name)
        rows.append(
            Row(
                what=f"{name} ({len(text) / 1000:.0f} KB)",
                harness=ms(rendered),
                baselines=(ms(stripped),),
                ratio_name="rendered / stripped",
                ratio=ratio_of(rendered, stripped),
                goal="" if goal is None else f"< {ms(goal)} {'met' if rendered < goal else 'NOT MET'}",
            )
        )
    print_table("judging the screen: render cost per session", ["stripped"], rows)


if __name__ == "__main__":
    main()
