"""Where the harness's CPU goes in one session: each part by its own thread's CPU clock, marginal between two sizes.

Runs ``pytest <suite> --recall-cmd='/bin/echo 1234.56'`` in a fresh process
with the ``_ledger`` plugin, which times a handful of the harness's functions
for each part of a session (case files read and checked, folders, spawn,
the session's end, the event loop, the judge, the record...) by
``time.thread_time_ns``, each exclusive of the parts nested in it, over a
small and a large suite of two-step cases; the difference between the two
sizes per session is the marginal cost, in real milliseconds of CPU (user and
kernel), the unit of ``overhead.py``. What no part covers has rows of its
own: pytest's own work on the main thread, and the runner's other threads.
With ``--baseline-tree``, the same table for another checkout, measured
interleaved (a part whose functions that checkout lacks reads 0, and is
named under the table). The median of ``--repeat`` rounds is kept. (Until
issue 27's tenth pass this table came from cProfile, which inflates each
call 3-5x and sees no kernel time.)

A second table needs no plugin: the same suites (and the floor of
``overhead.py``, a bare ``subprocess.run`` loop) in a fresh process each,
their CPU split by ``getrusage`` into the runner's own user time (Python),
its system time (the kernel working for it: folders, terminals, cgroups,
pipes) and its children's (the agents). It shows which of the three the
harness's cost above the floor is made of, in real milliseconds.

A third table counts the runner's system calls a session, by call, under
``strace`` (its threads included, the agents left out). Counts move far
less than times with the machine's load (the reaper's ``openat`` and
``read`` of ``/proc`` do grow with the processes others start meanwhile),
so they tell a change that saves a few calls a session from noise. Left out, with the
reason, where ``strace`` is missing or may not trace.

A fourth table prices those calls: the runner's CPU a session, sampled by
``perf`` (``cpu-clock``, with call chains), each kernel sample charged to the
system call it was made in (a write to ``cgroup.procs``, the move into a
session's cgroup, on a row of its own), page faults and the rest of the
kernel apart, and user space (Python and C) in one row. A child counts with
the runner until its ``execve``, so the spawn's work in the child is here.
That is how a move was found to cost mostly interrupts between CPUs, one for
each thread of pytest's on another CPU. Left out, with the reason, where
``perf`` is missing or may not sample the kernel (root, or
``perf_event_paranoid`` at most 1).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from _common import ANSWER, PYTHON, compile_trees, parse_args, scratch, write_trivial_cases
from _ledger import AGENTS, OTHER_THREADS, PARTS, REST_OF_MAIN, RUNNER

LEDGER = Path(__file__).resolve().parent / "_ledger.py"
LEDGER_ROWS = [*PARTS, REST_OF_MAIN, OTHER_THREADS, RUNNER, AGENTS]


def ledger_once(tree: str | None, suite: Path, out: Path) -> dict[str, float]:
    """CPU seconds per part of one run with the ``_ledger`` plugin; what this tree lacks goes to :data:`_missing`."""
    env = _env_of(tree)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(LEDGER.parent), env.get("PYTHONPATH"))))
    env["RECALL_LEDGER_OUT"] = str(out)
    argv = [PYTHON, "-m", "pytest", str(suite), "-p", "_ledger", f"--recall-cmd=/bin/echo {ANSWER}"]
    subprocess.run([*argv, "-p", "no:cacheprovider", "-q"], env=env, capture_output=True, check=True)
    loaded = json.loads(out.read_text(encoding="utf-8"))
    figures: dict[str, float] = {part: ns / 1e9 for part, ns in loaded["figures"].items()}
    if tree is None and loaded["missing"]:
        # This checkout's own functions renamed or gone: the ledger must follow, or a part silently reads 0.
        raise SystemExit(f"bench/_ledger.py's PARTS name what this checkout lacks: {', '.join(loaded['missing'])}")
    _missing.update(f"{tree}: {name}" for name in loaded["missing"])
    return figures


# What a checkout's ledger could not time, said under the table.
_missing: set[str] = set()


SPLIT = ("own user (Python)", "own system (kernel)", "agents (user + system)", "all")


def split_once(suite: Path, floor: bool) -> dict[str, float]:
    """CPU seconds of one unprofiled run, split by ``getrusage`` (this is the worker's side)."""
    if floor:
        from overhead import floor_run

        for cases in suite.iterdir():  # the suite's one folder of case folders
            floor_run(cases, ["/bin/echo", ANSWER])
    else:
        import pytest

        with contextlib.redirect_stdout(io.StringIO()):
            pytest.main([str(suite), f"--recall-cmd=/bin/echo {ANSWER}", "-p", "no:cacheprovider", "-q"])
    mine, agents = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    parts = (mine.ru_utime, mine.ru_stime, agents.ru_utime + agents.ru_stime)
    return dict(zip(SPLIT, (*parts, sum(parts)), strict=True))


def measure(tree: str | None, suite: Path, mode: str) -> dict[str, float]:
    done = subprocess.run(
        [PYTHON, __file__, mode, str(suite)], env=_env_of(tree), capture_output=True, text=True, check=True
    )
    loaded: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def _env_of(tree: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (tree, env.get("PYTHONPATH"))))
    return env


# One traced call: "<pid> <name>(" ("<pid> <... name resumed>" lines continue a call already counted).
_CALL = re.compile(r"(\d+) +(\w+)\(")


def count_calls(tree: str | None, suite: Path, mode: str, trace: Path) -> collections.Counter[str]:
    """The system calls of one unprofiled run, by name: the runner's process and its threads, not the agents.

    An agent is a process that ran ``execve`` after the runner itself did; what
    the child does between its birth and that ``execve`` counts with the agent,
    for the floor's children as for the harness's.
    """
    subprocess.run(
        ["strace", "-f", "-qq", "-e", "signal=none", "-o", str(trace), PYTHON, __file__, mode, str(suite)],
        env=_env_of(tree),
        capture_output=True,
        check=True,
    )
    calls = [match.groups() for match in map(_CALL.match, trace.read_text().splitlines()) if match]
    runner = calls[0][0]
    agents = {pid for pid, name in calls if name == "execve" and pid != runner}
    return collections.Counter(name for pid, name in calls if pid not in agents)


def strace_problem() -> str | None:
    """Why system calls cannot be counted here, or None."""
    if shutil.which("strace") is None:
        return "strace is not installed"
    probe = subprocess.run(["strace", "-qq", "-o", os.devnull, "true"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"strace cannot trace here: {probe.stderr.strip()[:120]}"


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline-tree", help="also measure the harness of this checkout, interleaved")
    parser.add_argument("--split-worker", help=argparse.SUPPRESS)
    parser.add_argument("--floor-worker", help=argparse.SUPPRESS)


def main() -> None:
    for mode in ("--split-worker", "--floor-worker"):
        if mode in sys.argv:
            print(json.dumps(split_once(Path(sys.argv[sys.argv.index(mode) + 1]), mode == "--floor-worker")))
            return
    args = parse_args(__doc__.splitlines()[0], repeat=5, more=_options)
    small, large = (2, 6) if args.quick else (20, 120)
    trees = {"harness": None, **({"before": args.baseline_tree} if args.baseline_tree else {})}
    compile_trees(None, args.baseline_tree)
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    # The split by getrusage: the harness (and the before tree) beside the floor.
    ways = {name: (tree, "--split-worker") for name, tree in trees.items()} | {"floor": (None, "--floor-worker")}
    split_rounds: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
    sessions = 2 * (large - small)
    with scratch("breakdown") as work:
        suites = {n: write_trivial_cases(work / str(n), n).parent for n in (small, large)}
        sizes = (suites[small], suites[large])
        for _ in range(args.repeat):
            for name, tree in trees.items():
                low, high = (ledger_once(tree, suites[n], work / f"ledger-{n}.json") for n in (small, large))
                rounds[name].append({part: (high.get(part, 0) - low.get(part, 0)) / sessions for part in LEDGER_ROWS})
            for name, (tree, mode) in ways.items():
                low, high = measure(tree, suites[small], mode), measure(tree, suites[large], mode)
                split_rounds[name].append({part: (high[part] - low[part]) / sessions for part in SPLIT})
        calls = a_session(ways, *sizes, sessions, problem=strace_problem(), one_run=count_calls)
        kernel = a_session(
            ways, *sizes, sessions, problem=perf_problem(), one_run=kernel_time, unit=PERF_PERIOD_NS / 1e6
        )
    _print_table(
        f"per-session CPU by part, median of {args.repeat}, {small} and {large} cases",
        "part (ms of CPU a session, thread clock)",
        LEDGER_ROWS,
        rounds,
    )
    for name in sorted(_missing):
        print(f"not timed (no such function): {name}")
    _print_table(
        f"whose CPU a session is, unprofiled (getrusage), median of {args.repeat}",
        "share (ms of CPU a session)",
        SPLIT,
        split_rounds,
    )
    _print_per_session(
        calls,
        "system calls a session, the runner's own (agents left out), one round",
        "system call (a session, strace)",
        digits=1,
    )
    _print_per_session(
        kernel,
        "the runner's CPU a session by system call, its threads and children before exec, one round",
        "where (ms of CPU a session, perf)",
        digits=3,
        pinned=(USER_SPACE,),
    )
    load = os.getloadavg()
    print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")


def a_session(
    ways: dict[str, tuple[str | None, str]],
    small: Path,
    large: Path,
    sessions: int,
    *,
    problem: str | None,
    one_run: Callable[[str | None, Path, str, Path], collections.Counter[str]],
    unit: float = 1.0,
) -> dict[str, dict[str, float]] | str:
    """Each way's figures a session, by row, from one run of each size (one round: they barely move); or why not."""
    if problem is not None:
        return problem
    per_session: dict[str, dict[str, float]] = {}
    with scratch("breakdown-runs") as work:
        for name, (tree, mode) in ways.items():
            try:
                low, high = (one_run(tree, suite, mode, work / name) for suite in (small, large))
            except subprocess.CalledProcessError as exc:
                said = exc.stderr if isinstance(exc.stderr, str) else (exc.stderr or b"").decode(errors="replace")
                return f"the {name} run failed: {said.strip()[-120:]}"
            per_session[name] = {row: (high[row] - low[row]) * unit / sessions for row in high | low}
    return per_session


def _print_per_session(
    per_session: dict[str, dict[str, float]] | str, title: str, first: str, *, digits: int, pinned: tuple[str, ...] = ()
) -> None:
    """A table of :func:`a_session`'s figures: the ``pinned`` rows, the harness's largest, then their sum."""
    if isinstance(per_session, str):
        print(f"\n## {title}: left out ({per_session})")
        return
    harness = per_session["harness"]
    rows = sorted((row for row in harness if row not in pinned), key=lambda row: -harness[row])[:ROWS_SHOWN]
    for figures in per_session.values():
        figures["all"] = sum(figures.values())
    body = [
        [row, *(f"{figures.get(row, 0):.{digits}f}" for figures in per_session.values())]
        for row in [*pinned, *rows, "all"]
    ]
    _print_rows(title, [first, *per_session], body)


# The rows the third and fourth tables name, the harness's largest first; "all" sums every one.
ROWS_SHOWN = 16

# perf's sample period: one sample for each 250 us of a task's CPU, so a sample count is a time.
PERF_PERIOD_NS = 250_000
PERF_RECORD = ("perf", "record", "-q", "-e", "cpu-clock", "-c", str(PERF_PERIOD_NS), "-g")
# A kernel frame that names the system call a sample was taken in (x86-64 and arm64 spellings).
_SYSCALL_FRAME = re.compile(r"^(?:__x64_sys_|__do_sys_|__arm64_sys_|__se_sys_)(\w+)")
USER_SPACE, PAGE_FAULTS, OTHER_KERNEL, CGROUP_MOVE = "user space", "page faults", "other kernel", "write (cgroup move)"


def perf_problem() -> str | None:
    """Why the runner's kernel time cannot be sampled here, or None."""
    if shutil.which("perf") is None:
        return "perf is not installed"
    if os.geteuid() != 0:
        with contextlib.suppress(OSError, ValueError):
            if int(Path("/proc/sys/kernel/perf_event_paranoid").read_text()) > 1:
                return "kernel samples need root or kernel.perf_event_paranoid <= 1"
    probe = subprocess.run([*PERF_RECORD, "-o", os.devnull, "true"], capture_output=True)
    return None if probe.returncode == 0 else f"perf cannot sample here: {probe.stderr.decode(errors='replace')[:120]}"


def kernel_time(tree: str | None, suite: Path, mode: str, data: Path) -> collections.Counter[str]:
    """Samples of the runner's CPU in one unprofiled run, by system call (see the module docstring)."""
    subprocess.run(
        [*PERF_RECORD, "-o", str(data), PYTHON, __file__, mode, str(suite)],
        env=_env_of(tree),
        capture_output=True,
        check=True,
    )
    script = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "comm,ip,sym,dso"], capture_output=True, text=True, check=True
    )
    runner = Path(PYTHON).name[:15]  # the kernel keeps 15 characters of a command's name
    samples: collections.Counter[str] = collections.Counter()
    for sample in script.stdout.split("\n\n"):
        lines = sample.strip().splitlines()
        if lines and lines[0].split()[0] == runner:
            samples[_charged_to(lines[1:])] += 1
    return samples


def _charged_to(frames: list[str]) -> str:
    """The row a sample goes to, from its frames (innermost first): the system call it was made in, or else."""
    symbols = [frame.split()[1] for frame in frames if "[kernel.kallsyms]" in frame and len(frame.split()) > 1]
    if not symbols:
        return USER_SPACE
    if "cgroup_procs_write" in symbols:
        return CGROUP_MOVE
    for symbol in reversed(symbols):  # the outermost handler: a call made inside another is charged to it
        match = _SYSCALL_FRAME.match(symbol)
        if match:
            return match.group(1)
    return PAGE_FAULTS if "exc_page_fault" in symbols else OTHER_KERNEL


def _print_table(title: str, first: str, parts: Sequence[str], rounds: dict[str, list[dict[str, float]]]) -> None:
    header = [first, *rounds]
    body = [
        [part, *(f"{statistics.median(r[part] for r in rounds[name]) * 1000:.3f}" for name in rounds)] for part in parts
    ]
    _print_rows(title, header, body)


def _print_rows(title: str, header: list[str], body: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    print(f"\n## {title}")
    for row in [header, *body]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()
