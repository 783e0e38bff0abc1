"""The event loop: many sessions at once, each watched through its pty, stderr pipe and pidfd.

Agents spend their time waiting on model APIs, so concurrency is a matter of
file descriptors, not of threads or cores. Threads are avoided on purpose:
sessions start on one thread (see :mod:`pytest_recall.sessions.spawn`).
"""

from __future__ import annotations

import contextlib
import selectors
import time

from pytest_recall.cases.runs import SessionResult
from pytest_recall.sessions.session import RunningSession, SessionSpec


class SessionDriver:
    """An event loop over many sessions at once: pty, stderr pipe and pidfd of each."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self.active: set[RunningSession] = set()

    def start(self, spec: SessionSpec) -> RunningSession:
        session = RunningSession(spec)
        self.active.add(session)
        if session.stdout_fd is not None:
            self._selector.register(session.stdout_fd, selectors.EVENT_READ, (session, "stdout"))
        if session.stderr_fd is not None:
            self._selector.register(session.stderr_fd, selectors.EVENT_READ, (session, "stderr"))
        if session.pidfd is not None:
            self._selector.register(session.pidfd, selectors.EVENT_READ, (session, "exit"))
        if session.stdin_fd is not None:
            self._selector.register(session.stdin_fd, selectors.EVENT_WRITE, (session, "stdin"))
        return session

    def _forget(self, session: RunningSession) -> None:
        for fd in (session.stdout_fd, session.stderr_fd, session.pidfd, session.stdin_fd):
            if fd is not None:
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(fd)
        self.active.discard(session)

    def step(self, max_wait_s: float | None = None) -> list[RunningSession]:
        """Wait for events once, at most ``max_wait_s`` when given; return the sessions that finished."""
        if not self.active:
            if max_wait_s is not None and max_wait_s > 0:
                time.sleep(max_wait_s)  # nothing runs: only a paused case is waiting
            return []
        now = time.monotonic()
        wake = min(session.next_wakeup() for session in self.active)
        if max_wait_s is not None:
            wake = min(wake, now + max_wait_s)
        events = self._selector.select(max(0.0, wake - now))
        maybe_done: set[RunningSession] = set()
        for key, _ in events:
            session, what = key.data
            if what == "stdout" and not session.read_stdout():
                self._selector.unregister(key.fd)
                session.stdout_fd = None
                maybe_done.add(session)
            elif what == "stderr" and not session.read_stderr():
                self._selector.unregister(key.fd)
                session.stderr_fd = None
            elif what == "stdin":
                session.write_stdin()
                if session.stdin_fd is None:
                    self._selector.unregister(key.fd)
            elif what == "exit":
                maybe_done.add(session)
        now = time.monotonic()
        done = []
        for session in list(self.active):
            session.tick(now)
            if (session in maybe_done or session.pidfd is None or session.kill_at is not None) and (
                session.main_exited()
            ):
                self._forget(session)
                session.finish()
                done.append(session)
        return done

    def abort_all(self) -> None:
        for session in list(self.active):
            self._forget(session)
            session.abort()

    def close(self) -> None:
        self.abort_all()
        self._selector.close()


def run_session(spec: SessionSpec, driver: SessionDriver | None = None) -> SessionResult:
    """Run one session to its end; the simple, serial way in."""
    own = driver is None
    active = driver or SessionDriver()
    try:
        session = active.start(spec)
        while session.finished is None:
            active.step()
        return session.finished
    finally:
        if own:
            active.close()
