"""How close do parallel runs come to the ideal wall time, and what do they cost in memory?

Real agents spend 10 to 120 seconds per session waiting on a model, so a run
is bound by waiting, not by CPU. This benchmark stands in for them with an
agent that sleeps a fixed time per session (a bash script: its own cost is a
fork and a sleep), builds a suite of two-step cases, and runs it

- with xdist workers (``-n W``): one pytest process per worker;
- with ``--recall-concurrency=C``: one process, one event loop.

The ideal wall time is ``ceil(cases / parallel) * steps * sleep``. For each
configuration it prints the ratio ideal / wall (1.00 is perfect), where the
time went (before the first session started, while sessions ran, after the
last one ended), the CPU the harness burnt, and the peak memory of the
harness's Python processes (RSS summed, and PSS, which counts shared pages
once; the agents are not included).

    python bench/concurrency.py               # 64 cases, 1 s per session: -n 32, concurrency 32 and 64
    python bench/concurrency.py --repeat 3    # best of three per configuration, on a shared machine
    python bench/concurrency.py --quick       # a few seconds, for CI: checks it runs, prints the same table
    python bench/concurrency.py --cases 96 --workers 2 --concurrency --mixed 2:16
                                              # -n 2 alone against -n 2 --recall-concurrency=16 (32 at once)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

STEPS = 2
AGENT = """#!/usr/bin/env bash
# One session: note when it starts and ends (bash builtins, no extra process), sleep, answer.
echo "start $EPOCHREALTIME" >> "$BENCH_TIMES"
sleep "$BENCH_SLEEP"
case "$1" in
  REMEMBER*) echo "${1#REMEMBER }" > "$RECALL_SCOPE_DIR/memory"; echo noted ;;
  *) cat "$RECALL_SCOPE_DIR/memory" 2>/dev/null || echo UNKNOWN ;;
esac
echo "end $EPOCHREALTIME" >> "$BENCH_TIMES"
"""


@dataclass
class Sample:
    peak_rss_mb: float = 0.0
    peak_pss_mb: float = 0.0
    peak_processes: int = 0
    running: bool = True
    thread: threading.Thread | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Outcome:
    label: str
    parallel: int
    wall_s: float
    ideal_s: float
    startup_s: float
    sessions_s: float
    teardown_s: float
    cpu_s: float
    peak_rss_mb: float
    peak_pss_mb: float
    peak_processes: int
    exit_code: int

    @property
    def ratio(self) -> float:
        return self.ideal_s / self.wall_s if self.wall_s else 0.0


def build_suite(root: Path, cases: int) -> Path:
    suite = root / "cases" / "bench"
    for number in range(1, cases + 1):
        folder = suite / f"case_{number:03d}"
        folder.mkdir(parents=True)
        value = f"{number}.{number % 100:02d}"
        (folder / "step1.txt").write_text(f"REMEMBER {value}")
        (folder / "step2.txt").write_text("RECALL")
        answer = {"id": folder.name, "category": "bench", "answer": value, "answer_kind": "money"}
        (folder / "answer.json").write_text(json.dumps(answer))
    agent = root / "sleepy-agent"
    agent.write_text(AGENT)
    agent.chmod(0o755)
    return suite


def _children() -> tuple[dict[int, list[int]], set[int]]:
    """Each process's children, and which processes lead a session of their own."""
    tree: dict[int, list[int]] = {}
    leaders = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            parent, session = int(fields[1]), int(fields[3])
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(parent, []).append(int(entry))
        if session == int(entry):
            leaders.add(session)
    return tree, leaders


def _harness_processes(root_pid: int, python: str) -> list[int]:
    """The pytest controller and its xdist workers: every Python process below the run.

    An agent session is forked from the harness and leads a session of its
    own (its pty) from its first instant; until it execs it is still Python,
    and counting it would count the harness twice.
    """
    tree, leaders = _children()
    found, stack = [], [root_pid]
    while stack:
        pid = stack.pop()
        stack.extend(tree.get(pid, []))
        try:
            if pid not in leaders and os.path.realpath(f"/proc/{pid}/exe") == python:
                found.append(pid)
        except OSError:
            continue
    return found


def _memory_kb(pid: int) -> tuple[int, int]:
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return rss, pss


def sample_memory(root_pid: int, interval_s: float = 0.1) -> Sample:
    sample = Sample()
    python = os.path.realpath(sys.executable)

    def loop() -> None:
        while sample.running:
            pids = _harness_processes(root_pid, python)
            sizes = [_memory_kb(pid) for pid in pids]
            sample.peak_rss_mb = max(sample.peak_rss_mb, sum(r for r, _ in sizes) / 1024)
            sample.peak_pss_mb = max(sample.peak_pss_mb, sum(p for _, p in sizes) / 1024)
            sample.peak_processes = max(sample.peak_processes, len(pids))
            time.sleep(interval_s)

    sample.thread = threading.Thread(target=loop, daemon=True)
    sample.thread.start()
    return sample


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_config(root: Path, label: str, args: list[str], parallel: int, cases: int, sleep_s: float) -> Outcome:
    times = root / f"times-{label.replace(' ', '_').replace('=', '_')}.txt"
    times.unlink(missing_ok=True)
    env = {**os.environ, "BENCH_TIMES": str(times), "BENCH_SLEEP": str(sleep_s), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "cases",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--recall-cmd={root / 'sleepy-agent'}",
        *args,
    ]
    cpu_before = _cpu_of_children()
    started = time.time()
    process = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sample = sample_memory(process.pid)
    output, _ = process.communicate()
    wall = time.time() - started
    sample.running = False
    if sample.thread is not None:
        sample.thread.join()
    cpu = _cpu_of_children() - cpu_before
    if process.returncode != 0:
        sys.stderr.write(output.decode(errors="replace")[-3000:])
    stamps = [line.split() for line in times.read_text().splitlines()] if times.exists() else []
    starts = [float(value) for kind, value in stamps if kind == "start"]
    ends = [float(value) for kind, value in stamps if kind == "end"]
    first, last = (min(starts), max(ends)) if starts and ends else (started, started + wall)
    return Outcome(
        label=label,
        parallel=parallel,
        wall_s=wall,
        ideal_s=math.ceil(cases / parallel) * STEPS * sleep_s,
        startup_s=first - started,
        sessions_s=last - first,
        teardown_s=started + wall - last,
        cpu_s=cpu,
        peak_rss_mb=sample.peak_rss_mb,
        peak_pss_mb=sample.peak_pss_mb,
        peak_processes=sample.peak_processes,
        exit_code=process.returncode,
    )


def print_table(outcomes: list[Outcome], cases: int, sleep_s: float) -> None:
    print(f"{cases} cases x {STEPS} sessions x {sleep_s:g} s sleep, on {os.cpu_count()} CPUs")
    header = (
        f"{'configuration':<26} {'wall s':>7} {'ideal s':>7} {'ratio':>6}   {'startup':>7} {'sessions':>8} "
        f"{'teardown':>8} {'cpu s':>6} {'procs':>5} {'RSS MB':>7} {'PSS MB':>7}"
    )
    print(header)
    print("-" * len(header))
    for o in outcomes:
        print(
            f"{o.label:<26} {o.wall_s:7.2f} {o.ideal_s:7.2f} {o.ratio:6.2f}   {o.startup_s:7.2f} {o.sessions_s:8.2f} "
            f"{o.teardown_s:8.2f} {o.cpu_s:6.2f} {o.peak_processes:5d} {o.peak_rss_mb:7.0f} {o.peak_pss_mb:7.0f}"
            + ("" if o.exit_code == 0 else f"   (exit {o.exit_code})")
        )
    print("ratio = ideal / wall; startup = launch to first session; teardown = last session to exit")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run for CI: 16 cases, 0.25 s sessions")
    parser.add_argument("--cases", type=int, default=None, help="number of cases (default 64; 16 with --quick)")
    parser.add_argument("--sleep", type=float, default=None, help="seconds per session (default 1; 0.25 with --quick)")
    parser.add_argument("--workers", type=int, nargs="*", default=None, help="xdist worker counts (default 32)")
    parser.add_argument(
        "--concurrency", type=int, nargs="*", default=None, help="--recall-concurrency values (default 32 64)"
    )
    parser.add_argument(
        "--mixed",
        nargs="*",
        default=[],
        metavar="W:C",
        help="-n W --recall-concurrency=C together: C sessions in flight in each of W workers",
    )
    parser.add_argument("--repeat", type=int, default=1, help="attempts per configuration; the fastest is kept")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    cases = args.cases or (16 if args.quick else 64)
    sleep_s = args.sleep if args.sleep is not None else (0.25 if args.quick else 1.0)
    workers = args.workers if args.workers is not None else ([4] if args.quick else [32])
    concurrency = args.concurrency if args.concurrency is not None else ([8, 16] if args.quick else [32, 64])
    if shutil.which("bash") is None:
        print("bench/concurrency.py needs bash for its stand-in agent", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="recall-bench-"))
    try:
        build_suite(root, cases)
        configs = [(f"-n {n}", ["-n", str(n)], n) for n in workers]
        configs += [(f"--recall-concurrency={c}", [f"--recall-concurrency={c}"], c) for c in concurrency]
        for pair in args.mixed:
            n, c = (int(part) for part in pair.split(":"))
            configs.append((f"-n {n} --recall-concurrency={c}", ["-n", str(n), f"--recall-concurrency={c}"], n * c))
        outcomes = []
        for label, extra, parallel in configs:
            # Noise from other processes only ever adds time: the fastest attempt is the measurement.
            attempts = [run_config(root, label, extra, parallel, cases, sleep_s) for _ in range(max(1, args.repeat))]
            outcomes.append(min(attempts, key=lambda outcome: (outcome.exit_code != 0, outcome.wall_s)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print_table(outcomes, cases, sleep_s)
    alone = {o.label: o for o in outcomes}
    for o in outcomes:
        workers_only = alone.get(o.label.split(" --recall-concurrency")[0]) if " --recall-" in o.label else None
        if workers_only is not None and o.wall_s:
            print(f"{o.label}: {o.wall_s / workers_only.wall_s:.3f} of the time of {workers_only.label} alone")
    if args.json is not None:
        figures = [{**o.__dict__, "ratio": round(o.ratio, 3)} for o in outcomes]
        args.json.write_text(json.dumps({"cases": cases, "sleep_s": sleep_s, "runs": figures}, indent=2))
    return 0 if all(o.exit_code == 0 for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
