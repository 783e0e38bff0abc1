"""Where the harness's CPU goes in one session: cProfile's own time per part, marginal between two suite sizes.

Runs ``pytest <suite> --recall-cmd='/bin/echo 1234.56'`` in a fresh process
under ``cProfile`` with a CPU clock (``time.process_time``, so a wait is not
counted), over a small and a large suite of two-step cases; each function's
own time goes to a part of the harness by its module (spawn, cgroup, step
folders, judge, records...), and the difference between the two sizes per
session is the marginal cost. The profiler inflates every call, so the parts
are to be compared with each other and with ``--baseline-tree`` (the same
table for another checkout, measured interleaved), not with ``overhead.py``.
The median of ``--repeat`` rounds is kept.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import ANSWER, PYTHON, parse_args, scratch, write_trivial_cases

# A function's own time goes to the first part whose needle is in "file:function".
PARTS: list[tuple[str, tuple[str, ...]]] = [
    ("spawn", ("sessions/spawn", "pexpect", "ptyprocess", "posix_spawn", "openpty", "tcsetattr", "tcgetattr")),
    ("spawn", ("ioctl", "pidfd_open", "sendmsg", "method 'recv'", "marshal", "posix.pipe")),
    ("cgroup", ("sessions/cgroup.py",)),
    ("keyring", ("sessions/keyring.py", "sessions/seccomp.py", "CFuncPtr")),
    ("leftover sweep", ("sessions/reaper.py",)),
    ("step and case folders", ("sessions/rooms.py", "sessions/workspace", "tempfile", "shutil", "mkdir", "rmdir")),
    ("step and case folders", ("sessions/agent_tree.py", "sessions/memory_listing.py", "sessions/cost_file.py")),
    ("step and case folders", ("posix.scandir", "posix.lstat", "unlink", "posix.chmod")),
    ("judge", ("scoring/", "terminal_text.py", "sessions/render.py", "cases/model.py")),
    ("record, JSON, spool", ("reporting/", "recorder.py", "json/", "junit")),
    ("collection", ("suites/", "cases/", "items.py", "_pytest/python.py", "_pytest/nodes.py", "_pytest/mark")),
    ("event loop and pool", ("sessions/driver.py", "sessions/pool.py", "sessions/session.py", "sessions/case_flow")),
    ("event loop and pool", ("sessions/capture.py", "selectors.py", "select.", "waitid", "posix.read", "posix.write")),
    ("pytest's own item", ("_pytest/", "pluggy/")),
]
NAMES = [*dict.fromkeys(name for name, _ in PARTS), "other (pathlib, builtins...)", "all"]


def part_of(filename: str, function: str) -> str:
    text = f"{filename}:{function}"
    return next((name for name, needles in PARTS if any(n in text for n in needles)), NAMES[-2])


def profile_once(suite: Path) -> dict[str, float]:
    """CPU seconds per part of one in-process run (this is the worker's side)."""
    import pytest

    profiler = cProfile.Profile(time.process_time)
    with contextlib.redirect_stdout(io.StringIO()):
        profiler.enable()
        pytest.main([str(suite), f"--recall-cmd=/bin/echo {ANSWER}", "-p", "no:cacheprovider", "-q"])
        profiler.disable()
    totals: collections.Counter[str] = collections.Counter()
    for (filename, _, function), row in pstats.Stats(profiler).stats.items():  # type: ignore[attr-defined]
        totals[part_of(filename, function)] += row[2]
    totals["all"] = sum(totals.values())
    return dict(totals)


def measure(tree: str | None, suite: Path) -> dict[str, float]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (tree, env.get("PYTHONPATH"))))
    done = subprocess.run(
        [PYTHON, __file__, "--worker", str(suite)], env=env, capture_output=True, text=True, check=True
    )
    loaded: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline-tree", help="also profile the harness of this checkout, interleaved")
    parser.add_argument("--worker", help=argparse.SUPPRESS)


def main() -> None:
    if "--worker" in sys.argv:
        print(json.dumps(profile_once(Path(sys.argv[sys.argv.index("--worker") + 1]))))
        return
    args = parse_args(__doc__.splitlines()[0], repeat=5, more=_options)
    small, large = (2, 6) if args.quick else (20, 120)
    trees = {"harness": None, **({"before": args.baseline_tree} if args.baseline_tree else {})}
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with scratch("breakdown") as work:
        suites = {n: write_trivial_cases(work / str(n), n).parent for n in (small, large)}
        for _ in range(args.repeat):
            for name, tree in trees.items():
                low, high = measure(tree, suites[small]), measure(tree, suites[large])
                sessions = 2 * (large - small)
                rounds[name].append({part: (high.get(part, 0) - low.get(part, 0)) / sessions for part in NAMES})
    header = ["part (ms of CPU a session, under cProfile)", *trees]
    body = [
        [part, *(f"{statistics.median(r[part] for r in rounds[name]) * 1000:.3f}" for name in trees)] for part in NAMES
    ]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    print(f"\n## per-session CPU breakdown, median of {args.repeat}, {small} and {large} cases")
    for row in [header, *body]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    load = os.getloadavg()
    print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
