"""One runner for the CLIs driven in print mode: each such adapter is a row, :class:`PrintRun`, and a reader.

Every print-mode adapter does the same steps in the same order: refuse ``--recall-mcp`` when it does not
pass the servers on, lay its variables under (or over) the environment, refuse a model on loopback that
refuses connections, split the arguments, run the CLI once, read what it printed and finish. The row says
only what differs between CLIs: the command, how the prompt reaches the CLI, the variables, where the
model's URL is named, and the reader, which stays a function of the CLI's own module (``read_events``,
``read_json``, ...), since that is where a CLI's quirks are mended. A new CLI is one ``Adapter``, one
``PrintRun`` with ``main = ROW.main``, its console script, and one wiring in the tests.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from types import MappingProxyType

from pytest_recall.agents.adapters.common import (
    Adapter,
    Outcome,
    exec_cli,
    find_cli,
    finish,
    live_args,
    refuse_dead_loopback_model,
    refuse_mcp,
    run_cli,
    split_args,
)

# How the prompt reaches the CLI: the arguments that follow the extra ones, and the text on its stdin.
PromptWay = Callable[[str], tuple[list[str], "str | None"]]
# What a reader gets: the CLI's stdout; what it gives: the outcome ``finish`` reports.
Reader = Callable[[str], Outcome]
# One step planned around the CLI's run: its command line, the text on its stdin, and the reader of its stdout.
StepPlan = tuple[list[str], "str | None", Reader]
# A step that needs something of its own around the run (a folder for a prompt, usage or settings file, a lock
# folder to clear after): given the CLI, the extra args, the prompt and the environment, which it may add
# variables to, it yields the plan while the CLI runs and cleans up once it has been read.
Step = Callable[[str, Sequence[str], str, dict[str, str]], AbstractContextManager[StepPlan]]


def on_stdin(prompt: str) -> tuple[list[str], str | None]:
    """The prompt whole on stdin, where no argument parser can re-quote it or take it for an option."""
    return [], prompt


def after(*flags: str) -> PromptWay:
    """The prompt as the argument after ``flags`` (``--``, ``--message``), at the end of the command."""
    return lambda prompt: ([*flags, prompt], None)


def joined(flag: str) -> PromptWay:
    """The prompt glued to ``flag`` (``--prompt=``), so that a prompt starting with ``-`` is never an option."""
    return lambda prompt: ([f"{flag}{prompt}"], None)


@dataclass(frozen=True, slots=True)
class ModelAt:
    """Where a CLI's model URL is named, for the loopback check: the variable or file the error names, and how
    to find the URL (the variable ``named_by`` itself when no ``find`` is given)."""

    named_by: str
    find: Callable[[Sequence[str], Mapping[str, str]], str | None] | None = None

    def url(self, extra: Sequence[str], env: Mapping[str, str]) -> str | None:
        return env.get(self.named_by) if self.find is None else self.find(extra, env)


@dataclass(frozen=True, slots=True)
class PrintRun:
    """One CLI driven in print mode, one process a step: its row in the runner's table.

    The CLI runs as ``[cli, *flags, *extra, *prompt's arguments]`` (``command`` replaces the first three
    for a CLI whose flags depend on the extra arguments), with ``env_under`` under the user's environment
    and ``env_over`` over it, and ``reader`` turns its stdout into the outcome.
    """

    adapter: Adapter  # the name, the CLI, its variable, its MCP refusal: what ``pytest-recall agents`` lists
    reader: Reader | None  # the CLI's stdout to the outcome; None only with ``reader_for`` or ``step``
    flags: Sequence[str] = ()  # what makes the CLI run once, unattended, and print what the reader reads
    prompt: PromptWay = on_stdin
    env_under: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # the user's env wins
    env_over: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # these win
    model: ModelAt | None = None  # where the model's URL is named, for the loopback check
    # ``recall-<cli> --live``: the interactive command the adapter becomes, for a CLI with a live mode.
    live: Callable[[str, Sequence[str]], list[str]] | None = None
    # The CLI's path and the extra args to its argv, prompt aside, when ``flags`` alone cannot say it.
    command: Callable[[str, Sequence[str]], list[str]] | None = None
    # For a CLI whose answer is not its stdout (aider's chat history): the reader of this run, made before it.
    reader_for: Callable[[Sequence[str]], Reader] | None = None
    # For a CLI whose stderr buries what went wrong (Cline's SDK warnings): what of it the transcript keeps.
    stderr_filter: Callable[[str], str] | None = None
    # For a CLI that takes a file of the step's own (Hermes Agent's usage file, OpenClaw's prompt file, Cline's
    # MCP settings): the step that plans its command line, stdin and reader; ``flags``, ``prompt`` and
    # ``command`` go unused.
    step: Step | None = None

    def __post_init__(self) -> None:
        if sum(way is not None for way in (self.reader, self.reader_for, self.step)) != 1:
            raise ValueError(f"{self.adapter.script}: give a print-mode row one of reader, reader_for and step")
        if self.step is not None and (self.flags or self.command is not None or self.prompt is not on_stdin):
            raise ValueError(
                f"{self.adapter.script}: a row's step makes its command: give it no flags, command or prompt"
            )

    def argv(self, cli: str, extra: Sequence[str]) -> list[str]:
        """The CLI's command line before the prompt's own arguments."""
        return self.command(cli, extra) if self.command is not None else [cli, *self.flags, *extra]

    def main(self, argv: Sequence[str] | None = None) -> int:
        """``recall-<cli> [EXTRA ARGS...] PROMPT``: the console script of every print-mode adapter."""
        refuse_mcp(self.adapter)
        env = {**self.env_under, **os.environ, **self.env_over}
        live_extra = live_args(argv) if self.live is not None else None
        if self.live is not None and live_extra is not None:
            exec_cli(self.live(find_cli(self.adapter), live_extra), env)
        args = list(sys.argv[1:] if argv is None else argv)
        if self.model is not None:
            refuse_dead_loopback_model(self.adapter, self.model.url(args[:-1], env), self.model.named_by)
        extra, prompt = split_args(args)
        with self.planned(find_cli(self.adapter), extra, prompt, env) as (command, stdin_text, read):
            done = run_cli(command, env, stdin_text=stdin_text, stderr_filter=self.stderr_filter)
            outcome = read(done.stdout)
        return finish(outcome, done.returncode)

    def planned(
        self, cli: str, extra: Sequence[str], prompt: str, env: dict[str, str]
    ) -> AbstractContextManager[StepPlan]:
        """The row's own step, or the plan its fields make, which needs nothing around the run."""
        if self.step is not None:
            return self.step(cli, extra, prompt, env)
        read = self.reader_for(extra) if self.reader_for is not None else self.reader
        assert read is not None  # __post_init__ holds it
        tail, stdin_text = self.prompt(prompt)
        return nullcontext(([*self.argv(cli, extra), *tail], stdin_text, read))
