"""How an adapter tells the harness the model refused a step for a rate limit, with no import of its own.

The adapter exits with ``RATE_LIMITED_EXIT`` (EX_TEMPFAIL) and writes a
stderr line starting with ``RATE_LIMITED_MARK``, maybe with
``retry-after=SECONDS``. Both are needed, so an agent that happens to exit
75 is not taken for one that was limited. The harness then pauses new
sessions on the host and retries the case; see :mod:`pytest_recall.sessions.rate_limits`.
"""

RATE_LIMITED_EXIT = 75
RATE_LIMITED_MARK = "recall-rate-limited:"
