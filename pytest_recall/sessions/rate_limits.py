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

import fcntl
import json
import os
import random
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

from pytest_recall.cases.runs import CaseRun
from pytest_recall.sessions.pool import Flow, Pause
from pytest_recall.sessions.session import SessionSpec

# The first pause when the model named no wait, doubling with each refusal in a row, up to the cap.
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 120.0
# How many times one case runs while the model refuses it for a rate limit (--recall-rate-limit-attempts).
DEFAULT_RATE_LIMIT_ATTEMPTS = 12
PAUSE_FILE = "rate-limit-pause.json"


class HostPause:
    """The run's pause on this host, in ``folder``; every process of the run names the same folder."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / PAUSE_FILE

    def state(self) -> dict[str, Any]:
        try:
            loaded: dict[str, Any] = json.loads(self.path.read_bytes())
        except (FileNotFoundError, ValueError):
            return {}
        return loaded

    def until(self) -> float:
        """The wall-clock time no session may start before; 0 when there is no pause."""
        return float(self.state().get("until", 0.0))

    def extend(self, retry_after: float, refusals: int) -> float:
        """A session was refused (``refusals`` in a row for its case): pause the host; the pause's end.

        The wait is the model's Retry-After or the backoff for this many
        refusals, whichever is longer, with up to half again of jitter, so
        cases retried together do not come back at the same instant. A pause
        already longer stands. The Retry-After is what the step's agent
        printed, so it is held to the backoff's cap: a claimed hour (or a
        year) must not hold every session of the run for that long.
        """
        backoff = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2.0 ** max(0, refusals - 1))
        wait = max(min(retry_after, MAX_BACKOFF_S), backoff) * (1 + random.random() / 2)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = self.state()
            now = time.time()
            until = max(float(state.get("until", 0.0)), now + wait)
            paused = float(state.get("paused_s", 0.0)) + until - max(float(state.get("until", 0.0)), now)
            state = {"until": until, "paused_s": paused, "refusals": int(state.get("refusals", 0)) + 1}
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(state), encoding="utf-8")
            os.replace(tmp, self.path)
        return until

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
