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


def durations_by_nodeid(case_rows: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Each case's last known duration, from report or log records."""
    durations: dict[str, float] = {}
    for row in case_rows:
        nodeid, duration = row.get("nodeid"), row.get("duration_s")
        if isinstance(nodeid, str) and isinstance(duration, (int, float)) and not isinstance(duration, bool):
            durations[nodeid] = max(float(duration), 0.0)
    return durations


def assign_shards(
    nodeids: Sequence[str],
    count: int,
    durations: Mapping[str, float] | None = None,
    units: Mapping[str, str] | None = None,
) -> dict[str, int]:
    """Which shard (1-based) runs each node id.

    With durations, a case never seen before is assumed to take the mean of
    the known ones. Ties break on the stable hash, so the result does not
    depend on the order of ``nodeids``. ``units`` maps a node id to a key
    its shard is dealt by, shared with others: a case group's, so that its
    ingest runs in one shard only.
    """
    if count < 1:
        raise ShardError("a suite needs at least one shard")
    unit_of = {nodeid: (units or {}).get(nodeid, nodeid) for nodeid in set(nodeids)}
    unique = sorted(set(unit_of.values()), key=lambda unit: (stable_hash(unit), unit))
    if not durations:
        by_unit = {unit: position % count + 1 for position, unit in enumerate(unique)}
        return {nodeid: by_unit[unit] for nodeid, unit in unit_of.items()}
    known = [durations[nodeid] for nodeid in unit_of if nodeid in durations]
    default = sum(known) / len(known) if known else 1.0
    cost = dict.fromkeys(unique, 0.0)
    for nodeid, unit in unit_of.items():
        cost[unit] += durations.get(nodeid, default)
    loads = [0.0] * count
    placed: dict[str, int] = {}
    # Stable sort keeps the hash order among equal durations.
    for unit in sorted(unique, key=lambda unit: -cost[unit]):
        lightest = min(range(count), key=lambda shard: (loads[shard], shard))
        loads[lightest] += cost[unit]
        placed[unit] = lightest + 1
    return {nodeid: placed[unit] for nodeid, unit in unit_of.items()}


def shard_members(
    nodeids: Sequence[str],
    shard: tuple[int, int],
    durations: Mapping[str, float] | None = None,
    units: Mapping[str, str] | None = None,
) -> set[str]:
    """The node ids shard ``K`` of ``N`` runs; node ids of one unit (a case group) run in one shard."""
    index, count = shard
    return {nodeid for nodeid, owner in assign_shards(nodeids, count, durations, units).items() if owner == index}


# --recall-shard=auto reads these. GitHub Actions has no variable of its own for a matrix entry, so the
# workflow passes the matrix value in; GitLab sets CI_NODE_* for a job with `parallel:`; a Kubernetes
# Indexed Job sets JOB_COMPLETION_INDEX (0-based) and the job spec sets the count.
SHARD_INDEX_VAR = "RECALL_SHARD_INDEX"
SHARD_TOTAL_VAR = "RECALL_SHARD_TOTAL"
GITLAB_INDEX_VAR = "CI_NODE_INDEX"
GITLAB_TOTAL_VAR = "CI_NODE_TOTAL"
KUBERNETES_INDEX_VAR = "JOB_COMPLETION_INDEX"
AUTO = "auto"


def _whole_number(environ: Mapping[str, str], name: str) -> int:
    text = environ[name].strip()
    if not text.isdigit():
        raise ShardError(f"--recall-shard=auto: {name}={environ[name]!r} is not a whole number")
    return int(text)


def shard_from_environment(environ: Mapping[str, str]) -> tuple[int, int]:
    """``(K, N)`` for ``--recall-shard=auto`` from the CI system's variables, K from 1.

    - ``JOB_COMPLETION_INDEX`` (Kubernetes Indexed Job, from 0) with ``RECALL_SHARD_TOTAL``;
    - ``RECALL_SHARD_INDEX`` (from 1) and ``RECALL_SHARD_TOTAL``, e.g. a GitHub Actions matrix;
    - ``CI_NODE_INDEX`` and ``CI_NODE_TOTAL`` (GitLab ``parallel:``, from 1).

    Each source found must be whole, and sources found together must agree.
    """
    found: list[tuple[str, tuple[int, int]]] = []
    if KUBERNETES_INDEX_VAR in environ:
        if SHARD_TOTAL_VAR not in environ:
            raise ShardError(
                f"--recall-shard=auto: {KUBERNETES_INDEX_VAR} is set but {SHARD_TOTAL_VAR} is not; "
                f"set {SHARD_TOTAL_VAR} in the job spec to the job's completions"
            )
        index = _whole_number(environ, KUBERNETES_INDEX_VAR) + 1
        found.append((f"{KUBERNETES_INDEX_VAR}+1/{SHARD_TOTAL_VAR}", (index, _whole_number(environ, SHARD_TOTAL_VAR))))
    pairs = ((SHARD_INDEX_VAR, SHARD_TOTAL_VAR), (GITLAB_INDEX_VAR, GITLAB_TOTAL_VAR))
    for index_var, total_var in pairs:
        if index_var == SHARD_INDEX_VAR and KUBERNETES_INDEX_VAR in environ and index_var not in environ:
            continue
        present = [name for name in (index_var, total_var) if name in environ]
        if not present:
            continue
        if len(present) == 1:
            missing = total_var if present == [index_var] else index_var
            raise ShardError(f"--recall-shard=auto: {present[0]} is set but {missing} is not; set both")
        shard = (_whole_number(environ, index_var), _whole_number(environ, total_var))
        found.append((f"{index_var}/{total_var}", shard))
    if not found:
        raise ShardError(
            f"--recall-shard=auto found no shard in the environment: set {SHARD_INDEX_VAR} (from 1) and "
            f"{SHARD_TOTAL_VAR}, or run as a GitLab `parallel:` job ({GITLAB_INDEX_VAR}/{GITLAB_TOTAL_VAR}) or a "
            f"Kubernetes Indexed Job ({KUBERNETES_INDEX_VAR} with {SHARD_TOTAL_VAR})"
        )
    (source, shard), *others = found
    for other_source, other in others:
        if other != shard:
            raise ShardError(
                f"--recall-shard=auto: {source} says {shard[0]}/{shard[1]} but {other_source} says "
                f"{other[0]}/{other[1]}; unset one"
            )
    index, count = shard
    if not 1 <= index <= count:
        raise ShardError(f"--recall-shard=auto: {source} gives shard {index} of {count}; it must be from 1 to {count}")
    return shard
