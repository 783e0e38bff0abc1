"""Drive a real interactive agent CLI by hand, in a pty, against the fake model: a dev tool for presets.

``python tests/live_probe.py claude --mode memory`` spawns the CLI's TUI in a
24x200 pty (the harness's terminal size) with a fresh HOME and a fresh empty
working directory, wired to :class:`pytest_recall.testing.FakeModelServer`,
feeds everything it prints to ``pyte``, and plays the two steps of one seed
case as turns: wait until the ready pattern shows on the rendered screen and
the screen has settled, send the turn (typed or as a bracketed paste, then
``\\r``), wait again, and quit. It prints the screen at each stage, the
requests the model got, and the exit status, which is what a preset's values
(``turn_template``, ``paste``, ``quit``, ``ready_pattern``, ``ready_idle_s``,
``ok_exit_codes``) are read from.

It is a probe, not the harness: it may use pexpect and pyte directly, and it
answers no terminal queries, as the harness does not either. The CLIs are the
pinned ones (``RECALL_<CLI>_BIN``, see ``.ci/install-clis``); by default the
live launchers (``recall-claude --live`` ...) seed HOME, ``--raw`` runs the CLI
itself so the start-up screens can be seen.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pexpect
import pyte

from pytest_recall.testing import FakeModelServer

ROOT = Path(__file__).resolve().parent.parent
TERMINAL_SIZE = (24, 200)
SEED_CASE = ROOT / "cases" / "session-memory-recall" / "case_01"
BRACKETED = ("\x1b[200~", "\x1b[201~")
# The ready patterns found with this probe (MULTILINE, on the rendered screen, lines right-stripped).
# Each match starts below the last answer, so the text before it ends with the answer.
# llm chat: its "> " prompt is the last thing on the screen (in !multi mode it shows no prompt).
LLM_READY = r"^>\s*\Z"
# Claude Code: the empty input box ("❯" and a no-break space between two rules) with the idle
# footer; busy, the footer says "esc to interrupt", or briefly lacks "(shift+tab to cycle)".
CLAUDE_READY = (
    r"^─.*\n❯[ \xa0]*\n─.*\n[ \t]*⏵⏵ bypass permissions on \(shift\+tab to cycle\)(?:(?!esc to interrupt).)*$"
)
# Codex: the composer with the footer that shows once start-up is done ("← for agents"), and above
# it a line that is not the "Working (… esc to interrupt)" status.
CODEX_READY = (
    r"^(?![^\n]*esc to interrupt)[^\n]*\S[^\n]*\n(?:[ \t]*\n)*› [^\n]*\n(?:[ \t]*\n)*[^\n]*\n"
    r"[ \t]*← for agents · \? for shortcuts"
)


@dataclass(frozen=True)
class Probe:
    """What to run and how to talk to it: one preset candidate."""

    argv: tuple[str, ...]
    env: dict[str, str]
    turn_template: str
    paste: str  # "typed" or "bracketed"
    quit: str
    ready_pattern: str
    settle_s: float


def scripts_dir() -> Path:
    return Path(sys.executable).parent


def claude_probe(base_url: str, home: Path, raw: bool) -> Probe:
    cli = os.environ.get("RECALL_CLAUDE_BIN") or "claude"
    argv = (cli,) if raw else (str(scripts_dir() / "recall-claude"), "--live")
    env = {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-fake"}
    return Probe(argv, env, "{prompt}", "bracketed", "/exit\r", CLAUDE_READY, 1.0)


def codex_probe(base_url: str, home: Path, raw: bool) -> Probe:
    cli = os.environ.get("RECALL_CODEX_BIN") or "codex"
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'model = "fake"\nmodel_provider = "fake"\ncheck_for_update_on_startup = false\n\n'
        f'[model_providers.fake]\nname = "fake"\nbase_url = "{base_url}/v1"\nwire_api = "responses"\n\n'
        "[analytics]\nenabled = false\n",
        encoding="utf-8",
    )
    argv = (cli,) if raw else (str(scripts_dir() / "recall-codex"), "--live")
    return Probe(argv, {}, "{prompt}", "bracketed", "\x04", CODEX_READY, 1.0)


def llm_probe(base_url: str, home: Path, raw: bool) -> Probe:
    cli = os.environ.get("RECALL_LLM_BIN") or "llm"
    models = home / ".config" / "io.datasette.llm" / "extra-openai-models.yaml"
    models.parent.mkdir(parents=True, exist_ok=True)
    models.write_text(f"- model_id: fake\n  model_name: fake\n  api_base: {base_url}/v1\n", encoding="utf-8")
    argv = (cli, "chat", "-m", "fake") if raw else (str(scripts_dir() / "recall-llm"), "--live", "-m", "fake")
    return Probe(argv, {}, "!multi\n{prompt}\n!end\n", "typed", "quit\r", LLM_READY, 0.5)


PROBES = {"claude": claude_probe, "codex": codex_probe, "llm": llm_probe}


class Terminal:
    """A pty of the harness's size, and the screen pyte renders from it."""

    def __init__(self, argv: tuple[str, ...], env: dict[str, str], cwd: Path, transcript: Path) -> None:
        rows, columns = TERMINAL_SIZE
        self.screen = pyte.Screen(columns, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.transcript = transcript.open("wb")
        self.child = pexpect.spawn(argv[0], list(argv[1:]), env=env, cwd=str(cwd), dimensions=TERMINAL_SIZE)
        self.changed_at = time.monotonic()

    def pump(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            try:
                chunk = self.child.read_nonblocking(65536, timeout=min(left, 0.05))
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                return
            self.transcript.write(chunk)
            self.transcript.flush()
            before = self.text()
            self.stream.feed(chunk)
            if self.text() != before:
                self.changed_at = time.monotonic()

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display).rstrip("\n")

    def wait_ready(self, pattern: str, settle_s: float, timeout_s: float, trace: bool = False) -> float | None:
        """Seconds until the pattern shows on a screen unchanged for ``settle_s``; None on timeout or exit."""
        start = time.monotonic()
        regex = re.compile(pattern, re.MULTILINE)
        shown = ""
        while time.monotonic() - start < timeout_s:
            self.pump(0.1)
            if trace and self.text() != shown:
                shown = self.text()
                lines = [line for line in shown.splitlines() if line.strip()]
                show(f"trace t={time.monotonic() - start:.2f} ready={bool(regex.search(shown))}", "\n".join(lines[-8:]))
            settled = time.monotonic() - self.changed_at >= settle_s
            if settled and regex.search(self.text()):
                return time.monotonic() - start
            if not self.child.isalive():
                self.pump(0.2)
                return None
        return None

    def send(self, data: str) -> None:
        self.child.send(data.encode("utf-8"))

    def close(self) -> int | None:
        self.pump(0.5)
        deadline = time.monotonic() + 10
        while self.child.isalive() and time.monotonic() < deadline:
            self.pump(0.2)
        alive = self.child.isalive()
        if alive:
            self.child.terminate(force=True)
        self.child.close()
        self.transcript.close()
        return None if alive else self.child.exitstatus


def show(title: str, text: str) -> None:
    print(f"----- {title} " + "-" * max(0, 60 - len(title)))
    print(text)


def send_turn(term: Terminal, probe: Probe, prompt: str, gap_s: float) -> None:
    turn = probe.turn_template.format(prompt=prompt.rstrip("\n"))
    if probe.paste == "bracketed":
        pasted = BRACKETED[0] + turn + BRACKETED[1]
        if gap_s <= 0:
            term.send(pasted + "\r")  # one write, as a harness that does not wait would send it
            return
        term.send(pasted)
        term.pump(gap_s)
        term.send("\r")
    else:
        # A terminal turns the Enter key into "\r"; the turn's own newlines are Enter presses.
        term.send(turn.replace("\n", "\r"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cli", choices=sorted(PROBES))
    parser.add_argument("--mode", default="memory", choices=["plain", "memory", "native"])
    parser.add_argument("--raw", action="store_true", help="run the CLI itself, not its live launcher")
    parser.add_argument("--paste", choices=["typed", "bracketed"])
    parser.add_argument("--quit", help="keys after the last answer, Python escapes allowed")
    parser.add_argument("--ready", help="ready pattern on the rendered screen (MULTILINE)")
    parser.add_argument("--settle", type=float)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--gap", type=float, default=0.3, help="seconds between a paste and its \\r; 0: one write")
    parser.add_argument("--trace", action="store_true", help="print every distinct screen while a turn runs")
    parser.add_argument("--keep", action="store_true", help="keep HOME, cwd and the transcript")
    parser.add_argument("--case", type=Path, default=SEED_CASE)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="live-probe-"))
    home, cwd = scratch / "home", scratch / "cwd"
    home.mkdir()
    cwd.mkdir()
    log = scratch / "model.jsonl"
    with FakeModelServer(args.mode, log_path=log) as server:
        probe = PROBES[args.cli](server.base_url, home, args.raw)
        probe = Probe(
            probe.argv,
            probe.env,
            probe.turn_template,
            args.paste or probe.paste,
            args.quit.encode().decode("unicode_escape") if args.quit else probe.quit,
            args.ready or probe.ready_pattern,
            args.settle if args.settle is not None else probe.settle_s,
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env |= {"HOME": str(home), "TERM": "xterm-256color", "NO_PROXY": "127.0.0.1,localhost"} | probe.env
        print(f"argv: {probe.argv}\nhome: {home}\ncwd: {cwd}")
        term = Terminal(probe.argv, env, cwd, scratch / "transcript.bin")
        steps = sorted(args.case.glob("step*.txt"))
        for number, step in enumerate(steps, 1):
            took = term.wait_ready(probe.ready_pattern, probe.settle_s, args.timeout)
            show(f"ready before turn {number} after {took}s", term.text())
            if took is None:
                break
            sent = time.monotonic()
            send_turn(term, probe, step.read_text(encoding="utf-8"), args.gap)
            term.pump(1.0)
            show(f"1 s after turn {number} was sent", term.text())
            took = term.wait_ready(probe.ready_pattern, probe.settle_s, args.timeout, args.trace)
            show(f"turn {number} answered: ready after {time.monotonic() - sent:.1f}s ({took})", term.text())
        term.send(probe.quit)
        status = term.close()
        show(f"after quit {probe.quit!r}: exit status {status}", term.text())
    requests = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    print(f"----- {len(requests)} requests")
    for entry in requests:
        print(
            f"{entry['path']} kind={entry['kind']} after_tool={entry['after_tool']} tool={entry['tool']}"
            f" prompt={entry['prompt'][:70]!r} reply={entry['reply'][:60]!r}"
        )
    if args.keep:
        print(f"kept {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
