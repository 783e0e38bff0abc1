"""A TUI agent for the live-session tests: the notebook's answers, drawn the way Claude Code and Codex draw.

It reads its terminal raw, asks for bracketed paste, and submits on Enter,
so a turn typed line by line is submitted at its first line, cut in two. It
keeps a frame at the bottom (an input box and a footer) that it erases and
redraws many times a second while it "thinks", animating a spinner, and
writes each finished exchange above the frame, as ``❯ <first line of the
turn>`` and ``● <answer>``. So a turn's answer can only be read right from
the rendered screen: the byte stream holds every spinner frame and every
redraw. It remembers in RAM only. Flags:

    --think SECONDS     spin this long before each answer (default 0.5)
    --quit TEXT         the line that ends it (default "/exit"); Ctrl-D does nothing
    --exit-code N       exit status after the quit line (default 0)
    --crash-at-start    print a start-up error and exit 1 before drawing anything
    --log FILE          append one JSON line per submitted turn

The file is not named test_*, so pytest never collects it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import termios
import time
import tty
from pathlib import Path

from pytest_recall.agents.notebook import Notebook, respond

PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
WIDTH = 60


def write(text: str) -> None:
    os.write(1, text.encode("utf-8"))


class Frame:
    """The bottom frame: erased and redrawn in place, as Ink and ratatui do."""

    def __init__(self) -> None:
        self.drawn = 0

    def erase(self) -> None:
        if self.drawn:
            write(f"\x1b[{self.drawn - 1}A\r\x1b[J" if self.drawn > 1 else "\r\x1b[J")
        self.drawn = 0

    def draw(self, box: str, footer: str) -> None:
        self.erase()
        rows = ["─" * WIDTH, f"❯ {box}", "─" * WIDTH, f"  {footer}"]
        write("\r\n".join(rows))
        self.drawn = len(rows)

    def above(self, lines: list[str]) -> None:
        """Lines for the history above the frame, which then scroll up with the screen."""
        self.erase()
        write("".join(line + "\r\n" for line in lines))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--think", type=float, default=0.5)
    parser.add_argument("--quit", default="/exit")
    parser.add_argument("--exit-code", type=int, default=0)
    parser.add_argument("--crash-at-start", action="store_true")
    parser.add_argument("--log", type=Path)
    args = parser.parse_args()
    if args.crash_at_start:
        write("Unable to connect to the model service: check your network.\r\n")
        time.sleep(0.2)
        return 1
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    notebook = Notebook(None)
    frame = Frame()
    write("\x1b[?2004h" + "Welcome to fake-tui\r\n\r\n")
    frame.draw("", "? for shortcuts")
    buffer = b""
    typed = b""
    try:
        while True:
            data = os.read(0, 1 << 16)
            if not data:
                return 0
            buffer += data
            while buffer:
                if buffer.startswith(PASTE_START):
                    end = buffer.find(PASTE_END)
                    if end == -1:
                        break  # the rest of the paste is still on its way
                    typed += buffer[len(PASTE_START) : end]
                    buffer = buffer[end + len(PASTE_END) :]
                    lines = typed.decode("utf-8", "replace").count("\n") + 1
                    frame.draw(f"[Pasted text #1 +{lines} lines]", "? for shortcuts")
                    continue
                key, buffer = buffer[:1], buffer[1:]
                if key != b"\r":
                    typed += key
                    continue
                turn, typed = typed.decode("utf-8", "replace").replace("\r", "\n"), b""
                if turn.strip() == args.quit:
                    frame.erase()
                    write("Goodbye\r\n")
                    return args.exit_code
                if args.log is not None:
                    with args.log.open("a", encoding="utf-8") as log:
                        log.write(json.dumps({"turn": turn}) + "\n")
                frame.above([f"❯ {turn.splitlines()[0] if turn.strip() else ''}", ""])
                started = time.monotonic()
                tick = 0
                while time.monotonic() - started < args.think:
                    frame.draw("", f"{SPINNER[tick % len(SPINNER)]} Thinking… ({tick}) · esc to interrupt")
                    tick += 1
                    time.sleep(0.05)
                answer = respond(turn, notebook).splitlines() or [""]
                frame.above([f"● {answer[0]}", *(f"  {line}" for line in answer[1:]), ""])
                frame.draw("", "? for shortcuts")
    finally:
        write("\x1b[?2004l")
        termios.tcsetattr(0, termios.TCSADRAIN, saved)
        sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main())
