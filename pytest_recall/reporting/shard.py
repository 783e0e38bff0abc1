"""Sharding a suite across machines (``--recall-shard=K/N``): pure functions.

Every shard computes the same partition from the same collected node ids,
so N jobs that each run one shard together run every case exactly once,
with no coordination between them. With durations from an earlier run, the
shards are balanced by time (longest first onto the lightest shard, the
greedy LPT rule); without them, node ids are dealt round-robin in the order
of a stable hash, which balances the count and does not depend on how the
cases happen to be named or sorted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(ValueError):
    """A shard spec that is not ``K/N`` with 1 <= K <= N."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``; shards are numbered from 1, like CI matrix indices."""
    match = _SHARD.match(text)
    if match is None:
        raise ShardError(f"--recall-shard must look like K/N (e.g. 1/4), not {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if not 1 <= index <= count:
        raise ShardError(f"--recall-shard {text!r}: K must be from 1 to N")
    return index, count


def stable_hash(nodeid: str) -> int:
    """Unlike ``hash()``, the same in every process and on every machine."""
    return int.from_bytes(hashlib.sha256(nodeid.encode("utf-8")).digest()[:8], "big")


def durations_by_nodeid(records: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Each case's last known duration, from report or log records."""
    durations: dict[str, float] = {}
    for record in records:
        nodeid, duration = record.get("nodeid"), record.get("duration_s")
        if isinstance(nodeid, str) and isinstance(duration, (int, float)) and not isinstance(duration, bool):
            durations[nodeid] = max(float(duration), 0.0)
    return durations


def assign_shards(nodeids: Sequence[str], count: int, durations: Mapping[str, float] | None = None) -> dict[str, int]:
    """Which shard (1-based) runs each node id.

    With durations, a case never seen before is assumed to take the mean of
    the known ones. Ties break on the stable hash, so the result does not
    depend on the order of ``nodeids``.
    """
    if count < 1:
        raise ShardError("a suite needs at least one shard")
    unique = sorted(set(nodeids), key=lambda nodeid: (stable_hash(nodeid), nodeid))
    if not durations:
        return {nodeid: position % count + 1 for position, nodeid in enumerate(unique)}
    known = [durations[nodeid] for nodeid in unique if nodeid in durations]
    default = sum(known) / len(known) if known else 1.0
    cost = {nodeid: durations.get(nodeid, default) for nodeid in unique}
    loads = [0.0] * count
    assignment: dict[str, int] = {}
    # Stable sort keeps the hash order among equal durations.
    for nodeid in sorted(unique, key=lambda nodeid: -cost[nodeid]):
        lightest = min(range(count), key=lambda shard: (loads[shard], shard))
        loads[lightest] += cost[nodeid]
        assignment[nodeid] = lightest + 1
    return assignment


def shard_members(
    nodeids: Sequence[str], shard: tuple[int, int], durations: Mapping[str, float] | None = None
) -> set[str]:
    """The node ids shard ``K`` of ``N`` runs."""
    index, count = shard
    return {nodeid for nodeid, owner in assign_shards(nodeids, count, durations).items() if owner == index}
