"""``--recall-concurrency`` inside xdist workers: each worker runs N sessions at once.

An xdist worker learns its items one message at a time, so on its own it
cannot look ahead and start the next N cases while the first waits on a
model. This scheduler, handed to xdist through ``pytest_xdist_make_scheduler``,
deals the collection out in batches of N, batch ``b`` to worker ``b mod W``,
all at once. The deal is a pure function of the collection size, the
worker's index and count (both in its ``workerinput``, read by
:mod:`pytest_recall.plugin.xdist_handoff`) and N, so each worker
computes its own share the same way and its executor looks ahead over
exactly the items it was given. ``-n 4 --recall-concurrency=16`` keeps 64
sessions in flight, and so do four ssh workers.

The price is xdist's load balancing: a worker whose cases run long is not
relieved by the others. A worker that crashes has its unfinished items dealt
to the rest by xdist's usual rescheduling.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]

from pytest_recall.cases import group_key_of_nodeid, is_group_dir

# A worker's (index, count) from its workerinput, or None: see xdist_handoff.worker_position.
PositionOf = Callable[[Mapping[str, Any]], tuple[int, int] | None]


def batch_share(
    count: int, worker_index: int, worker_count: int, batch: int, groups: Sequence[str | None] | None = None
) -> list[int]:
    """The collection indices worker ``worker_index`` of ``worker_count`` runs: every W-th unit.

    A unit is a batch of ``batch`` consecutive items, or, for items of a case
    group (``groups[i]`` its key), the whole group, so that its ingest runs once.
    """
    if groups is None or not any(groups):
        return [index for index in range(count) if (index // batch) % worker_count == worker_index]
    units: dict[object, int] = {}
    share = []
    loose = 0
    for index in range(count):
        group = groups[index]
        if group is None:
            key: object = ("batch", loose // batch)
            loose += 1
        else:
            key = group
        unit = units.setdefault(key, len(units))
        if unit % worker_count == worker_index:
            share.append(index)
    return share


def case_groups_of(nodeids: Sequence[str], rootpath: Path) -> list[str | None] | None:
    """Each node id's case group (a folder with a group.toml above its case), or None when no item has one."""
    found: dict[str, bool] = {}
    groups: list[str | None] = []
    for nodeid in nodeids:
        key = group_key_of_nodeid(nodeid)
        if key not in found:
            found[key] = bool(key) and is_group_dir(rootpath / key)
        groups.append(key if found[key] else None)
    return groups if any(groups) else None


class BatchScheduling(LoadScheduling):  # type: ignore[misc]
    """xdist's load scheduler, but the first deal gives every worker its whole share in batches,
    each case group whole. With ``batch`` None it deals only when the collection has case groups."""

    def __init__(self, config: pytest.Config, log: Any, batch: int | None, position_of: PositionOf) -> None:
        super().__init__(config, log)
        self.batch = batch
        self.rootpath = config.rootpath
        self.position_of = position_of

    def schedule(self) -> None:
        collections: list[list[str]] = list(self.node2collection.values())
        if self.collection is not None or not collections or any(c != collections[0] for c in collections):  # type: ignore[has-type]
            # Later calls (a replacement worker) and differing collections are xdist's own business.
            super().schedule()
            return
        groups = case_groups_of(collections[0], self.rootpath)
        if self.batch is None and groups is None:
            super().schedule()
            return
        self.collection = collections[0]
        count = len(collections[0])
        if self.maxschedchunk is None:  # type: ignore[has-type]
            self.maxschedchunk = count
        dealt: set[int] = set()
        for node in self.nodes:
            position = self.position_of(node.workerinput)
            share = batch_share(count, *position, self.batch or 1, groups) if position is not None else []
            if share:
                self.node2pending[node].extend(share)
                node.send_runtest_some(share)
                dealt.update(share)
        self.pending[:] = [index for index in range(count) if index not in dealt]
        for node in self.nodes:
            self.check_schedule(node)
