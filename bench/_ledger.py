"""A pytest plugin for ``breakdown.py``: each part of a case's run, timed by the CPU clock of its own thread.

cProfile inflates every call it sees, a small one most, and sees no kernel
time, so its parts can only be compared with each other. This plugin wraps a
few dozen of the harness's own functions instead, each part a handful, and
adds up ``time.thread_time_ns`` (user and kernel time of the thread that
runs it) spent in each part, exclusive of any part nested in it. The cost of
a part is then in real milliseconds of CPU, the same unit as ``overhead.py``'s
figures, and what no part covers shows up whole: pytest's own work for an
item on the main thread, and whatever runs on other threads. Each wrapper
costs about a microsecond a call, a few dozen calls a case, which lands in
the part that called it.

Loaded with ``-p _ledger`` (``bench`` on ``PYTHONPATH``); it writes its
figures as JSON, in nanoseconds, to ``$RECALL_LEDGER_OUT`` when the run ends.
A checkout that lacks a function simply has no figure for it: the file names
the ones it did not find.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import inspect
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

# Each part of a session, with the functions it is made of ("module:qualified name").
PARTS: dict[str, tuple[str, ...]] = {
    "case files read and checked": ("cases.model:load_case_dir", "cases.model:folder_digests"),
    "step and case folders": (
        "sessions.rooms:CaseArea.__init__",
        "sessions.rooms:CaseArea.open_step",
        "sessions.rooms:CaseArea.close_step",
        "sessions.rooms:CaseArea.close",
    ),
    "environment": ("sessions.rooms:CaseArea.environment", "sessions.case_flow:agent_environment"),
    "memory listing": ("sessions.memory_listing:holds_nothing", "sessions.memory_listing:list_small_memory"),
    "spawn, run loop's thread": (
        "sessions.spawn:spawn_agent",
        "sessions.spawn:AgentProcess.__init__",
        "sessions.seccomp:run_confined",
    ),
    "spawn, spawning thread": ("sessions.spawn:_posix_spawn_on_terminal", "sessions.spawn:_inheritable_fds"),
    "session's output and end": (
        "sessions.session:RunningSession.__init__",
        "sessions.session:RunningSession.read_stdout",
        "sessions.session:RunningSession.finish",
        "sessions.spawn:AgentProcess.close",
    ),
    "cgroup and leftover sweep": (
        "sessions.cgroup:SessionCgroup.create",
        "sessions.cgroup:SessionCgroup.pids",
        "sessions.cgroup:SessionCgroup.remove",
        "sessions.reaper:kill_tagged_processes",
    ),
    "event loop": ("sessions.driver:SessionDriver.start", "sessions.driver:SessionDriver.step"),
    "case flow and executor": ("plugin.executor:CaseExecutor.run", "plugin.executor:CaseExecutor._submit"),
    "judge": ("scoring.evidence:case_verdict", "plugin.executor:CaseExecutor.verdict"),
    "record and report": (
        "plugin.items:CaseItem._record_verdict",
        "plugin.items:CaseItem._publish",
        "reporting.records:CaseRecord.of_run",
        "reporting.records:CaseRecord.as_json",
        "plugin.xdist_handoff:record_property",
        "reporting.spool:RecordSpool.add",
        "plugin.executor:CaseExecutor.finished",
    ),
}
# The rows worked out from the totals, not timed.
REST_OF_MAIN = "pytest, and the rest of the main thread"
OTHER_THREADS = "other threads, beyond the parts"
RUNNER = "the runner, all"
AGENTS = "the agents (and helper processes)"

_spent: dict[str, int] = {}
_spent_on_main: list[int] = [0]
_where = threading.local()
_missing: list[str] = []


def _timed(part: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        stack = getattr(_where, "stack", None)
        if stack is None:
            stack = _where.stack = []
        now = time.thread_time_ns()
        if stack:
            _charge(stack[-1], now - _where.mark)
        stack.append(part)
        _where.mark = now
        try:
            return function(*args, **kwargs)
        finally:
            now = time.thread_time_ns()
            _charge(stack.pop(), now - _where.mark)
            _where.mark = now

    return timed


def _charge(part: str, spent: int) -> None:
    _spent[part] = _spent.get(part, 0) + spent
    if threading.current_thread() is threading.main_thread():
        _spent_on_main[0] += spent


def _install() -> None:
    for part, targets in PARTS.items():
        for target in targets:
            if not _wrap(part, target):
                _missing.append(target)


def _wrap(part: str, target: str) -> bool:
    module_name, _, qualified = target.partition(":")
    try:
        module = importlib.import_module(f"pytest_recall.{module_name}")
    except ImportError:
        return False
    *outer, name = qualified.split(".")
    owner: Any = module
    for step in outer:
        owner = getattr(owner, step, None)
    if owner is None or name not in vars(owner):
        return False
    raw = vars(owner)[name]
    if isinstance(raw, classmethod):
        setattr(owner, name, classmethod(_timed(part, raw.__func__)))
        return True
    if inspect.isgeneratorfunction(raw):
        return False  # timing its call would time only the making of the generator
    wrapped = _timed(part, raw)
    if outer:
        setattr(owner, name, wrapped)
        return True
    # A module's function is also called through every module that imported it by name.
    for other in list(sys.modules.values()):
        if getattr(other, "__name__", "").startswith("pytest_recall") and vars(other).get(name) is raw:
            setattr(other, name, wrapped)
    return True


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    _install()
    atexit.register(_write, os.environ["RECALL_LEDGER_OUT"])


def _write(path: str) -> None:
    runner = resource.getrusage(resource.RUSAGE_SELF)
    agents = resource.getrusage(resource.RUSAGE_CHILDREN)
    main = time.thread_time_ns()
    timed = sum(_spent.values())
    figures = {part: _spent.get(part, 0) for part in PARTS}
    figures[REST_OF_MAIN] = main - _spent_on_main[0]
    total = round((runner.ru_utime + runner.ru_stime) * 1e9)
    figures[OTHER_THREADS] = total - main - (timed - _spent_on_main[0])
    figures[RUNNER] = total
    figures[AGENTS] = round((agents.ru_utime + agents.ru_stime) * 1e9)
    with open(path, "w", encoding="utf-8") as out:
        json.dump({"figures": figures, "missing": _missing}, out)
