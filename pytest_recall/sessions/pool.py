"""Many cases in flight on one event loop.

A case is a generator (:func:`pytest_recall.sessions.case_flow.case_flow`)
that yields the session it wants next and receives its result. The pool
starts each yielded session on one :class:`SessionDriver` and feeds results
back, so a serial run is simply a pool of one.

A case may also yield a :class:`Pause`: it is parked until then, while every
other case in flight keeps running (a retry's back-off, say).
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass

from pytest_recall.cases import CaseRun, SessionResult
from pytest_recall.sessions.driver import SessionDriver
from pytest_recall.sessions.session import SessionSpec
from pytest_recall.sessions.spawn import AgentStartError


@dataclass(frozen=True, slots=True)
class Pause:
    """Yielded by a case instead of a session: resume me at ``until`` (``time.monotonic``), with nothing sent."""

    until: float


Flow = Generator[SessionSpec | Pause, SessionResult, CaseRun]


@dataclass
class _InFlight:
    flow: Flow
    outcome: CaseRun | None = None
    # An exception the case's own flow raised: it belongs to that case's item, whichever item was running.
    failure: BaseException | None = None


class CasePool:
    """Many cases in flight on one event loop; results are taken in any order."""

    def __init__(self) -> None:
        self.driver = SessionDriver()
        self._flows: dict[str, _InFlight] = {}
        self._owner: dict[object, str] = {}
        self._paused: dict[str, float] = {}

    def __contains__(self, key: str) -> bool:
        return key in self._flows

    def __len__(self) -> int:
        """Cases in flight: started and not yet handed over, paused ones included."""
        return len(self._flows)

    def submit(self, key: str, flow: Flow) -> None:
        self._flows[key] = _InFlight(flow)
        self._advance(key, None)

    def _advance(self, key: str, result: SessionResult | None) -> None:
        state = self._flows[key]
        pending: BaseException | None = None
        while True:
            try:
                if pending is not None:
                    spec = state.flow.throw(pending)
                elif result is None:
                    spec = next(state.flow)
                else:
                    spec = state.flow.send(result)
            except StopIteration as stop:
                state.outcome = stop.value
                return
            except Exception as exc:
                state.failure = exc
                return
            if isinstance(spec, Pause):
                self._paused[key] = spec.until
                return
            try:
                session = self.driver.start(spec)
            except AgentStartError as exc:
                pending, result = exc, None
                continue
            except Exception as exc:
                # Whatever else goes wrong starting a session (no descriptors left, no memory
                # for the pty): the case cannot run now, and it says so as its own error.
                text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
                pending, result = AgentStartError(f"could not start a session: {text}"), None
                continue
            self._owner[session] = key
            return

    def wait(self, key: str) -> CaseRun:
        """Drive every case in flight until ``key`` is done, then hand it over."""
        state = self._flows[key]
        while state.outcome is None and state.failure is None:
            now = time.monotonic()
            if self._resume_due(now, key):
                continue
            if key not in self._owner.values() and key not in self._paused:
                # No session of this case is in flight and it is not paused, so no event can ever
                # advance it: a bug, not a wait.
                state.failure = RuntimeError(f"case {key} has no session in flight and no outcome")
                break
            next_resume = min(self._paused.values(), default=None)
            for session in self.driver.step(max_wait_s=None if next_resume is None else next_resume - now):
                owner = self._owner.pop(session)
                assert session.finished is not None
                self._advance(owner, session.finished)
        del self._flows[key]
        if state.failure is not None:
            state.flow.close()
            raise state.failure
        assert state.outcome is not None
        return state.outcome

    def _resume_due(self, now: float, key: str) -> bool:
        """Resume every case whose pause is over; True when ``key`` was among them."""
        due = [paused for paused, until in self._paused.items() if until <= now]
        for paused in due:
            del self._paused[paused]
            self._advance(paused, None)
        return key in due

    def paused_until(self, key: str) -> float | None:
        """When a paused case resumes, or None when it is not paused."""
        return self._paused.get(key)

    def close(self) -> None:
        """Kill whatever is still running and let every case clean up its directories."""
        self.driver.close()
        for state in self._flows.values():
            state.flow.close()
        self._flows.clear()
        self._paused.clear()
