"""``--recall-concurrency`` inside xdist workers: each worker runs N sessions at once.

An xdist worker learns its items one message at a time, so on its own it
cannot look ahead and start the next N cases while the first waits on a
model. This scheduler, handed to xdist through ``pytest_xdist_make_scheduler``,
deals the collection out in batches of N, batch ``b`` to worker ``b mod W``,
all at once. The deal is a pure function of the collection size, the
worker's index and count (both in its ``workerinput``) and N, so each worker
computes its own share the same way and its executor looks ahead over
exactly the items it was given. ``-n 4 --recall-concurrency=16`` keeps 64
sessions in flight, and so do four ssh workers.

The price is xdist's load balancing: a worker whose cases run long is not
relieved by the others. A worker that crashes has its unfinished items dealt
to the rest by xdist's usual rescheduling.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest
from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]

# The workerinput key that tells a worker the batch size it was dealt in; absent, it runs one case at a time.
BATCH_INPUT = "recall_batch"
_WORKER_ID = re.compile(r"^gw(\d+)$")


def batch_share(count: int, worker_index: int, worker_count: int, batch: int) -> list[int]:
    """The collection indices worker ``worker_index`` of ``worker_count`` runs: every W-th batch of ``batch``."""
    return [index for index in range(count) if (index // batch) % worker_count == worker_index]


def worker_position(workerinput: Mapping[str, Any]) -> tuple[int, int] | None:
    """(index, count) of an xdist worker from its ``workerinput``; None for a worker outside the first deal."""
    match = _WORKER_ID.match(str(workerinput.get("workerid", "")))
    count = workerinput.get("workercount")
    if match is None or not isinstance(count, int) or not 0 <= int(match.group(1)) < count:
        return None
    return int(match.group(1)), count


class BatchScheduling(LoadScheduling):  # type: ignore[misc]
    """xdist's load scheduler, but the first deal gives every worker its whole share in batches."""

    def __init__(self, config: pytest.Config, log: Any, batch: int) -> None:
        super().__init__(config, log)
        self.batch = batch

    def schedule(self) -> None:
        collections: list[list[str]] = list(self.node2collection.values())
        if self.collection is not None or not collections or any(c != collections[0] for c in collections):  # type: ignore[has-type]
            # Later calls (a replacement worker) and differing collections are xdist's own business.
            super().schedule()
            return
        self.collection = collections[0]
        count = len(collections[0])
        if self.maxschedchunk is None:  # type: ignore[has-type]
            self.maxschedchunk = count
        dealt: set[int] = set()
        for node in self.nodes:
            position = worker_position(node.workerinput)
            share = batch_share(count, *position, self.batch) if position is not None else []
            if share:
                self.node2pending[node].extend(share)
                node.send_runtest_some(share)
                dealt.update(share)
        self.pending[:] = [index for index in range(count) if index not in dealt]
        for node in self.nodes:
            self.check_schedule(node)
