"""What the move into a session's cgroup costs in wall time: the wait a session start pays.

The harness starts each agent inside the session's cgroup by moving itself in
for the instant of a ``posix_spawn`` and back (``pytest_recall/sessions/cgroup.py``).
This times exactly that, with the harness's own cgroup code, around a real
Python agent (``python -c pass``), one start every 50 ms as in a serial run:
the move in, the spawn, the move home. Without ``favordynmods`` on the cgroup2
mount, a move write-locks a lock every fork and exit reads, first waiting out
an RCU grace period; with it, it does not (docs/sandbox.md). On such a mount
the harness runs a quickener beside its sessions, which keeps the moves from
waiting: the same starts are timed without it, then with it. The table says
which the mount has; ``mount -o remount,favordynmods <mount>`` (root) changes it.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from _common import PYTHON, Row, ms, parse_args, print_table, ratio_of

from pytest_recall.sessions import cgroup


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    starts = 5 if args.quick else 60
    home = cgroup.cgroup2_home()
    if home is None or not cgroup.available():
        print_table("cgroup move", ("spawn",), [Row("no writable cgroup v2 here", "-", ("-",), "move/spawn", 0.0)])
        return
    slot = cgroup.SessionCgroup.create()
    assert slot is not None
    rows: list[Row] = []
    slowest: list[str] = []
    try:
        # One block without the quickener, then one with it where the mount makes the harness start one.
        with_it = ["with the quickener"] if cgroup.waiting_mount() is not None else []
        for label in ["without the quickener", *with_it]:
            if label in with_it:
                cgroup.keep_moves_quick()
                time.sleep(0.1)  # its start-up, once a run
            moves_in, moves_home, spawns = _starts(slot.path, home, starts)
            move_in, move_home, spawn = (statistics.median(times) for times in (moves_in, moves_home, spawns))
            rows += [
                Row(f"move in, {label}", ms(move_in), (ms(spawn),), "move/spawn", ratio_of(move_in, spawn)),
                Row(f"move home, {label}", ms(move_home), (ms(spawn),), "move/spawn", ratio_of(move_home, spawn)),
            ]
            slowest.append(f"{label} {max(moves_in) * 1000:.2f} ms")
    finally:
        cgroup.stop_quickener()
        cgroup._write(home / "cgroup.procs", "0")
        slot.remove()
    waits = "waits (no favordynmods)" if cgroup.waiting_mount() else "favordynmods"
    print_table(f"cgroup move, median of {starts} session starts; mount: {waits}", ("posix_spawn",), rows)
    print(f"slowest move in: {'; '.join(slowest)}; load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


def _starts(slot: Path, home: Path, starts: int) -> tuple[list[float], list[float], list[float]]:
    """``starts`` session starts 50 ms apart, as in a serial run: the move in, the spawn, the move home."""
    moves_in: list[float] = []
    moves_home: list[float] = []
    spawns: list[float] = []
    agent = [PYTHON, "-S", "-c", "pass"]
    for _ in range(starts):
        started = time.perf_counter()
        cgroup._write(slot / "cgroup.procs", "0")
        entered = time.perf_counter()
        pid = os.posix_spawn(agent[0], agent, os.environ)
        spawned = time.perf_counter()
        cgroup._write(home / "cgroup.procs", "0")
        moves_home.append(time.perf_counter() - spawned)
        moves_in.append(entered - started)
        spawns.append(spawned - entered)
        os.waitpid(pid, 0)
        time.sleep(0.05)
    return moves_in, moves_home, spawns


if __name__ == "__main__":
    main()
