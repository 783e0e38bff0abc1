"""A progress line for long runs, through pytest's terminal reporter.

A 256-case run of a 60-second agent shows only dots for hours. Between
them this writes how far the run is: runs done of all, running, failed, the
score so far and an ETA. "Running" counts the cases in flight in the whole
run: each process's, as its latest case ended, and under xdist every
worker's, added up on the controller from a field its reports carry. On a terminal it writes one when at least
``TTY_EVERY_S`` seconds passed since the last; in a log that is not a
terminal, one every N finished runs (a tenth of the run, at least
``LOG_EVERY_MIN``), so a CI log grows by about ten lines, and none for a run
of fewer than ``LOG_MIN_RUNS``. Under ``-q`` it stays quiet. Fast runs, such
as the Quickstart, never print one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Any

import pytest

from pytest_recall.plugin.recorder import Recorder
from pytest_recall.scoring import scored_a_pass

TTY_EVERY_S = 10.0
LOG_EVERY_MIN = 10
LOG_MIN_RUNS = 50


def _recall_runs(nodeids: Iterable[str]) -> int:
    return sum(1 for nodeid in nodeids if nodeid.rsplit("::", 1)[-1].startswith(("recall", "control")))


def eta_text(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class ProgressLine:
    """Controller only: counts finished runs from the recorder's records and writes the line."""

    def __init__(self, config: pytest.Config, recorder: Recorder) -> None:
        self.config = config
        self.recorder = recorder
        self.total = 0
        self.finished: set[str] = set()
        # Cases in flight in each process (xdist's worker id; "" for a plain run), as of its latest report.
        self.in_flight: dict[str, int] = {}
        # Under xdist, pytest writes a worker's letters (the dots) with no line of its own to end: whether one
        # is open, so the progress line can start a new line rather than join the dots.
        self.dots_open = False
        self.dots = config.get_verbosity() <= 0  # verbose output ends its own lines
        self.start = time.monotonic()
        self.last_line_at = self.start
        self.last_line_done = 0

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = _recall_runs(item.nodeid for item in session.items)
        self.start = self.last_line_at = time.monotonic()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.total = _recall_runs(ids)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker that is done runs nothing more, whatever its last report said."""
        self.in_flight.pop(str(getattr(node, "workerinput", {}).get("workerid", "")), None)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.dots and not self.dots_open and hasattr(report, "worker_id"):
            status = self.config.hook.pytest_report_teststatus(report=report, config=self.config)
            self.dots_open = bool(status and status[1])
        if report.when != "teardown" or report.nodeid not in self.recorder.records:
            return
        in_flight = getattr(report, "recall_in_flight", None)
        if isinstance(in_flight, int):
            self.in_flight[str(getattr(report, "worker_id", ""))] = in_flight
        self.finished.add(report.nodeid)
        if self.due():
            self.write(self.line())

    def due(self) -> bool:
        done = len(self.finished)
        if done >= self.total:
            return False  # the summary follows at once
        if self.tty():
            return time.monotonic() - self.last_line_at >= TTY_EVERY_S
        if self.total < LOG_MIN_RUNS:
            return False
        every = max(LOG_EVERY_MIN, math.ceil(self.total / 10))
        return done - self.last_line_done >= every

    def tty(self) -> bool:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        return bool(getattr(reporter, "isatty", False))

    def line(self) -> str:
        main = [r for r in self.recorder.records.values() if not r.control]
        scored = [float(r.score) for r in main if r.score is not None]
        failed = sum(1 for r in main if not scored_a_pass(r.score))
        done = len(self.finished)
        running = sum(self.in_flight.values())
        elapsed = time.monotonic() - self.start
        eta = eta_text(elapsed / done * (self.total - done)) if done else "?"
        score = f"{sum(scored) / len(scored):.3f}" if scored else "-"
        return (
            f"recall progress: {done}/{self.total} runs done, {running} running, {failed} failed, "
            f"score so far {score}, ETA {eta}"
        )

    def write(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        if self.dots_open:
            reporter.write("\n")
            self.dots_open = False
        reporter.write_line(line, cyan=True)
        self.last_line_at = time.monotonic()
        self.last_line_done = len(self.finished)


def register_progress(config: pytest.Config, recorder: Recorder) -> None:
    """Only where a person or a log reads the terminal: not under -q (the caller keeps it out of workers)."""
    if config.get_verbosity() < 0:
        return
    config.pluginmanager.register(ProgressLine(config, recorder), "recall-progress")
