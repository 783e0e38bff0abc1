"""The event loop: many sessions at once, each watched through its pty, stderr pipe and pidfd.

Agents spend their time waiting on model APIs, so concurrency is a matter of
file descriptors, not of threads or cores. Threads are avoided on purpose:
sessions start on one thread (see :mod:`pytest_recall.sessions.spawn`).
"""

from __future__ import annotations

import select
import time

from pytest_recall.cases import SessionResult
from pytest_recall.sessions.session import RunningSession, SessionSpec

# What a descriptor is to its session; the loop dispatches on it.
_STDOUT, _STDERR, _EXIT, _STDIN = range(4)
_UNWATCHED = (None, None)


class SessionDriver:
    """An event loop over many sessions at once: pty, stderr pipe and pidfd of each.

    An ``epoll`` object used directly, not through :mod:`selectors`, whose
    key objects and lookups cost more Python a session than the system calls.
    Hang-ups and errors wake a descriptor whatever it was registered for, and
    each is handled as what it is to its session, as the selector did.
    """

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._watched: dict[int, tuple[RunningSession, int]] = {}
        self.active: set[RunningSession] = set()

    def _watch(self, fd: int | None, session: RunningSession, what: int) -> None:
        if fd is not None:
            self._epoll.register(fd, select.EPOLLOUT if what == _STDIN else select.EPOLLIN)
            self._watched[fd] = (session, what)

    def _unwatch(self, fd: int) -> None:
        if self._watched.pop(fd, None) is not None:
            try:  # noqa: SIM105 - a suppress() context is three calls more, six times a session
                self._epoll.unregister(fd)
            except (OSError, ValueError):
                pass  # closed already, which took it out of the epoll set

    def start(self, spec: SessionSpec) -> RunningSession:
        session = RunningSession(spec)
        self.active.add(session)
        self._watch(session.stdout_fd, session, _STDOUT)
        self._watch(session.stderr_fd, session, _STDERR)
        self._watch(session.pidfd, session, _EXIT)
        self._watch(session.stdin_fd, session, _STDIN)
        return session

    def _forget(self, session: RunningSession) -> None:
        for fd in (session.stdout_fd, session.stderr_fd, session.pidfd, session.stdin_fd):
            if fd is not None and self._watched.get(fd, _UNWATCHED)[0] is session:
                self._unwatch(fd)
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
        events = self._epoll.poll(max(0.0, wake - now), len(self._watched) or 1)
        maybe_done: set[RunningSession] = set()
        for fd, _ in events:
            watched = self._watched.get(fd)
            if watched is None:
                continue  # unwatched by an earlier event of this same wakeup
            session, what = watched
            if what == _STDOUT and not session.read_stdout():
                self._unwatch(fd)
                session.stdout_fd = None
                maybe_done.add(session)
            elif what == _STDERR and not session.read_stderr():
                self._unwatch(fd)
                session.stderr_fd = None
            elif what == _STDIN:
                session.write_stdin()
                if session.stdin_fd is None:
                    self._unwatch(fd)
            elif what == _EXIT:
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
        self._epoll.close()


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
