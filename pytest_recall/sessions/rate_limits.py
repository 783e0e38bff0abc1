"""A model's rate limit as a state of the whole run on this host, not a failure of the case that met it.

When one session is refused for a rate limit, every other session about to
start would be refused too: retrying each case on its own turns a 429 storm
into a wall of retries that all hit the same limit at once. So the case that
met it extends a pause that every process of the run on the host (each
xdist worker) reads before it starts a session: a small JSON file, changed
under an exclusive ``flock``. The pause honours the model's Retry-After and
backs off exponentially with jitter as refusals repeat; the case is retried
from its first step in a fresh memory and never counts as the agent's
failure. A case still refused when its budget of attempts is spent ends as
``rate_limited``: scored 0, like any case that gave no answer, but named
apart from forgetting. The file also keeps the time paused, for the summary.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

from pytest_recall.cases import CaseRun, bounded_number
from pytest_recall.sessions.pool import Flow, Pause
from pytest_recall.sessions.session import SessionSpec
from pytest_recall.sessions.signed_state import SignedState

# The first pause when the model named no wait, doubling with each refusal in a row, up to the cap.
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 120.0
# How many times one case runs while the model refuses it for a rate limit (--recall-rate-limit-attempts).
DEFAULT_RATE_LIMIT_ATTEMPTS = 12
PAUSE_FILE = "rate-limit-pause.json"
# A pause ends at most this far ahead: the longest wait, with its jitter. A file that says later was no wait's.
LONGEST_PAUSE_S = MAX_BACKOFF_S * 1.5
# The most a run holds new sessions back for rate limits, all its pauses together: past it, a refused case ends
# ``rate_limited`` at once. With each case's own bound (CASE_PAUSE_TIMEOUTS), a run whose every case claims a
# rate limit ends within this plus the time its sessions run.
RUN_PAUSE_BUDGET_S = 1800.0
# A case waits for its own refusals at most this many times its session timeout in all, then ends ``rate_limited``.
CASE_PAUSE_TIMEOUTS = 2.0
MAX_REFUSALS = 10**9


class HostPause:
    """The run's pause on this host, in ``folder``; every process of the run names the same folder and
    holds the same ``secret`` (hex), which signs the file (see :mod:`~pytest_recall.sessions.signed_state`)."""

    def __init__(self, folder: Path, secret: str) -> None:
        self.folder = folder
        self.secret = secret
        self._file = SignedState(folder / PAUSE_FILE, secret, "the run's rate-limit pause file")

    def state(self) -> dict[str, Any]:
        """``until``, ``paused_s``, ``refusals`` and ``budget_spent`` as this run wrote them, each in its bounds;
        empty when there is no pause yet, or (with a warning) when the file is not the run's or out of bounds."""
        loaded = self._file.read()
        if loaded is None:
            return {}
        until = bounded_number(loaded.get("until"), time.time() + LONGEST_PAUSE_S)
        paused = bounded_number(loaded.get("paused_s"), RUN_PAUSE_BUDGET_S)
        refusals, spent = loaded.get("refusals"), loaded.get("budget_spent", False)
        if (
            until is None
            or paused is None
            or not isinstance(refusals, int)
            or isinstance(refusals, bool)
            or not 0 <= refusals <= MAX_REFUSALS
            or not isinstance(spent, bool)
        ):
            self._file.ignore(f"{self._file.name} ({self._file.path}) holds values out of bounds")
            return {}
        return {"until": until, "paused_s": paused, "refusals": refusals, "budget_spent": spent}

    def until(self) -> float:
        """The wall-clock time no session may start before; 0 when there is no pause."""
        return float(self.state().get("until", 0.0))

    def extend(self, retry_after: float, refusals: int, most_s: float = RUN_PAUSE_BUDGET_S) -> float | None:
        """A session was refused (``refusals`` in a row for its case): pause the host; the pause's end, or
        None when the case may wait no longer (its ``most_s`` is spent, or the run's :data:`RUN_PAUSE_BUDGET_S`).

        The wait is the model's Retry-After or the backoff for this many
        refusals, whichever is longer, with up to half again of jitter, so
        cases retried together do not come back at the same instant. A pause
        already longer stands. The Retry-After is what the step's agent
        printed, so it is held to the backoff's cap: a claimed hour (or a
        year) must not hold every session of the run for that long; nor may
        claims repeated at every attempt hold the case past ``most_s`` in all,
        or the run past its budget.
        """
        backoff = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2.0 ** max(0, refusals - 1))
        wait = min(max(min(retry_after, MAX_BACKOFF_S), backoff) * (1 + random.random() / 2), most_s)
        with _locked(self.folder):
            state = self.state()
            now = time.time()
            earlier = state.get("until", 0.0)
            paused = state.get("paused_s", 0.0)
            wait = min(wait, RUN_PAUSE_BUDGET_S - paused)
            spent = state.get("budget_spent", False) or paused >= RUN_PAUSE_BUDGET_S
            until = max(earlier, now + max(0.0, wait))
            paused = min(RUN_PAUSE_BUDGET_S, paused + until - max(earlier, now))
            self._file.write(
                {
                    "until": until,
                    "paused_s": paused,
                    "refusals": min(MAX_REFUSALS, state.get("refusals", 0) + 1),
                    "budget_spent": spent or paused >= RUN_PAUSE_BUDGET_S,
                }
            )
        return until if wait > 0 else None

    def paced(self, flow: Flow) -> Flow:
        """``flow``, holding each session it starts until the host's pause is over; what the pool throws
        into it (an agent that could not start) reaches it as it would unwrapped."""
        sent: Any = None
        error: BaseException | None = None
        while True:
            try:
                wanted = flow.throw(error) if error is not None else flow.send(sent)
            except StopIteration as done:
                run: CaseRun = done.value
                return run
            error = None
            if isinstance(wanted, SessionSpec):
                yield from self._wait()
            try:
                sent = yield wanted
            except Exception as exc:
                error, sent = exc, None

    def _wait(self) -> Generator[Pause, Any, None]:
        while (left := self.until() - time.time()) > 0:
            yield Pause(time.monotonic() + left)


def rate_limit_wait(run: CaseRun) -> float | None:
    """When the run ended because the model refused a step for a rate limit: the wait it named (0.0 if none)."""
    for step in run.steps:
        wait = step.result.rate_limit_wait()
        if wait is not None:
            return wait
    return None


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the pause folder itself: no lock file an agent could swap for a FIFO or a link."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
