"""What a case's folders cost in TMPDIR, in CPU and in waiting: the harness's own area against the floor's.

A two-step case makes seven folders under the harness (its area, scope and
HOME; each step's folder, which is its TMPDIR, and a fresh workdir) and three
under ``overhead.py``'s floor (a scope folder and a workdir a step, by
``tempfile.mkdtemp`` and ``shutil.rmtree``). Both are made and removed empty,
``--cases`` times in a row, interleaved, best of ``--repeat``. CPU is this
process's; wall less CPU is what the calls waited for, which no CPU figure
shows and a serial run pays in full. ``breakdown.py`` charges the folders by
thread CPU inside a real run, where they share the disk with the agents; this
is the same code alone. The last line says which file system TMPDIR is on,
with its mount options: on a disk mounted with ``discard`` an ``rmdir`` may wait
for the disk to discard the folder's block (``perf record -e
sched:sched_switch -g`` shows where); on tmpfs nothing waits.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

from _common import Row, Timing, best_timings, clock_of, ms, parse_args, print_table, ratio_of

from pytest_recall.sessions.rooms import CaseArea, Isolation

STEPS = 2


def harness_folders(count: int) -> None:
    """``count`` cases' folders as the harness makes them, with its own code."""
    isolation = Isolation()
    for _ in range(count):
        area = CaseArea(isolation)
        for _ in range(STEPS):
            area.close_step(area.open_step())
        area.close()


def floor_folders(count: int) -> None:
    """``count`` cases' folders as ``overhead.py``'s floor makes them."""
    for _ in range(count):
        scope = tempfile.mkdtemp()
        for _ in range(STEPS):
            shutil.rmtree(tempfile.mkdtemp())
        shutil.rmtree(scope)


def mount_of(path: str) -> str:
    """The file system ``path`` is on, and its mount options, from /proc/self/mounts ('unknown' elsewhere)."""
    found, best = "unknown", -1
    try:
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) < 4:
                    continue
                point = fields[1].replace("\\040", " ")
                inside = path == point or path.startswith(point.rstrip("/") + "/")
                if inside and len(point) > best:
                    found, best = f"{fields[2]} at {point} ({fields[3]})", len(point)
    except OSError:
        pass
    return found


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cases", type=int, default=500, help="cases a timing (default 500)")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeat=5, more=_options)
    count = 20 if args.quick else args.cases
    variants = {"harness": clock_of(harness_folders, count), "floor": clock_of(floor_folders, count)}
    best: dict[str, Timing] = best_timings(variants, args.repeat)
    cpu = {way: best[way].cpu / count for way in variants}
    waited = {way: max(best[way].wall / count - cpu[way], 0.0) for way in variants}
    rows = [
        Row(what, ms(of["harness"]), (ms(of["floor"]),), "harness/floor", ratio_of(of["harness"], of["floor"]))
        for what, of in (("folders, cpu a case", cpu), ("folders, waited a case (wall less cpu)", waited))
    ]
    print_table(f"a two-step case's folders, {count} cases in a row, best of {args.repeat}", ["floor"], rows)
    tmp = os.path.realpath(tempfile.gettempdir())
    above = {name: (of["harness"] - of["floor"]) / STEPS for name, of in (("cpu", cpu), ("waited", waited))}
    print(f"above the floor a session: {ms(above['cpu'])} of CPU, {ms(above['waited'])} waited")
    print(f"TMPDIR {tmp}: {mount_of(tmp)}")


if __name__ == "__main__":
    main()
