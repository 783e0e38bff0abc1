"""SIGTERM and SIGHUP end a run the way Ctrl-C does.

A CI job that is cancelled, or a terminal that is closed, sends one of these
rather than SIGINT. By default either kills pytest on the spot: its agents,
and whatever they double-forked, go on running, the case scopes (the agents'
memory) stay in ``/tmp``, and no report is written. Raising
:class:`KeyboardInterrupt` from the handler puts the run on pytest's own
interrupt path instead, where the executor kills every session and every
case removes its directories, and the report is written as interrupted.
The exit status then says which signal ended the run (128 + its number, as
a shell reports it). A second signal does not wait for any of that.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

HANDLED = (signal.SIGTERM, signal.SIGHUP)


class TerminatedBySignal(KeyboardInterrupt):
    """Raised in the main thread on the first SIGTERM or SIGHUP."""


class TerminationSignals:
    """A plugin that owns the handlers while a recall run is under way, and restores them after."""

    def __init__(self, *, forward_to_children: Callable[[], bool] = lambda: False) -> None:
        self.received: signal.Signals | None = None
        # An xdist controller runs no agent: its workers do, and they are its children. Ctrl-C reaches
        # them all through the terminal; a signal sent to the controller alone is passed on to them.
        self.forward_to_children = forward_to_children
        self._previous: dict[signal.Signals, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in HANDLED:
            # A handler someone else set (or SIG_IGN, as under nohup) is theirs to keep.
            if signal.getsignal(signum) is signal.SIG_DFL:
                self._previous[signum] = signal.signal(signum, self._on_signal)

    def restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            os._exit(128 + signum)
        self.received = signal.Signals(signum)
        if self.forward_to_children():
            for child in child_pids():
                with contextlib.suppress(OSError):
                    os.kill(child, signum)
        raise TerminatedBySignal(f"pytest-recall: stopped by {self.received.name}; the running agents were killed")

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """The signal's own frame only: pytest renders an interrupt's whole traceback (parsing each frame's
        source file) for a summary line that says no more, which took seconds of a run's exit on a busy host."""
        if isinstance(excinfo.value, TerminatedBySignal):
            excinfo.traceback = excinfo.traceback[-1:]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.received is not None:
            session.exitstatus = 128 + self.received

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.restore()


def child_pids() -> list[int]:
    """This process's direct children, from ``/proc`` (each ``stat`` names its parent)."""
    me = os.getpid()
    children = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == me:
            children.append(int(entry.name))
    return children
