"""What every benchmark shares: the command line, timing, the result table, and generated inputs.

Each benchmark measures the harness and its baseline side by side in the
same run, because on a shared machine only a ratio taken minutes apart from
nothing else means anything. Every timing is the best of ``--repeat``
attempts, interleaved: noise from other processes only ever adds time.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
ANSWER = "1234.56"
# The bundled reference agent, beside this interpreter.
NOTEBOOK = str(Path(PYTHON).with_name("recall-notebook"))


def parse_args(
    description: str, *, repeat: int = 3, more: Callable[[argparse.ArgumentParser], None] | None = None
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    if more is not None:
        more(parser)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one attempt: proves the script works")
    parser.add_argument("--repeat", type=int, default=None, help=f"attempts per timing, best kept (default {repeat})")
    args = parser.parse_args()
    if args.repeat is None:
        args.repeat = 1 if args.quick else repeat
    return args


@dataclass(frozen=True, slots=True)
class Row:
    """One line of a result table: the harness figure, its baselines, and one ratio with its goal."""

    what: str
    harness: str
    baselines: tuple[str, ...]
    ratio_name: str
    ratio: float
    goal: str = ""
    # What follows the ratio column's number: "x" for a ratio, " KB" for a size, say.
    unit: str = "x"


def goal_text(ratio: float, *, at_most: float | None = None, at_least: float | None = None) -> str:
    if (at_most is not None or at_least is not None) and not ratio > 0:
        return "noise: no cost measured (more cases: drop --quick)"
    if at_most is not None:
        return f"<= {at_most:g}x {'met' if ratio <= at_most else 'NOT MET'}"
    if at_least is not None:
        return f">= {at_least:g}x {'met' if ratio >= at_least else 'NOT MET'}"
    return ""


def print_table(title: str, baseline_names: Sequence[str], rows: Sequence[Row], *, first: str = "harness") -> None:
    """The compact table every benchmark prints; each row ends in its ratio, written ``N.NNx`` (or in its own unit)."""
    header = ["what", first, *baseline_names, "ratio", "", "goal"]
    body = [
        [row.what, row.harness, *row.baselines, row.ratio_name, _times(row.ratio, row.unit), row.goal] for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    print(f"\n## {title}")
    for line in [header, *body]:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())
    sys.stdout.flush()


def _times(ratio: float, unit: str) -> str:
    # A ratio of two differences is meaningless when noise made one of them <= 0.
    return f"{ratio:.2f}{unit}" if math.isfinite(ratio) and ratio >= 0 else "n/a"


def ratio_of(numerator: float, denominator: float) -> float:
    """A ratio of two costs; none (NaN) when either is not above zero, which is noise, not a measurement."""
    return numerator / denominator if denominator > 0 and numerator > 0 else math.nan


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def secs(seconds: float) -> str:
    return f"{seconds:.2f} s"


def best_times(variants: Mapping[str, Callable[[], float]], repeat: int) -> dict[str, float]:
    """Each variant's best time over ``repeat`` interleaved rounds; a variant returns its own seconds."""
    best = {name: float("inf") for name in variants}
    for _ in range(repeat):
        for name, measure in variants.items():
            best[name] = min(best[name], measure())
    return best


@dataclass(frozen=True, slots=True)
class Timing:
    """Wall time, and CPU time of this process and every child it waited for (agents included)."""

    wall: float
    cpu: float


def clocked(action: Callable[[], object]) -> Timing:
    """Wall and CPU time of ``action``. CPU time barely moves when other jobs share the machine."""
    before, started = _cpu_seconds(), time.perf_counter()
    action()
    wall = time.perf_counter() - started
    return Timing(wall, _cpu_seconds() - before)


def _cpu_seconds() -> float:
    # getrusage, not os.times: microseconds rather than 10 ms clock ticks.
    mine, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def clock_of(function: Callable[..., object], *args: Any, **kwargs: Any) -> Callable[[], Timing]:
    """A variant for :func:`best_timings`: each call runs ``function(*args, **kwargs)`` under :func:`clocked`."""
    return functools.partial(clocked, functools.partial(function, *args, **kwargs))


def best_timings(variants: Mapping[str, Callable[[], Timing]], repeat: int) -> dict[str, Timing]:
    """Like :func:`best_times`, keeping the best wall and the best CPU time of each variant."""
    return best_of(timings_by_round(variants, repeat))


def timings_by_round(variants: Mapping[str, Callable[[], Timing]], repeat: int) -> dict[str, list[Timing]]:
    """Every variant's timing in each of ``repeat`` interleaved rounds, in round order, for paired comparisons."""
    rounds: dict[str, list[Timing]] = {name: [] for name in variants}
    for _ in range(repeat):
        for name, measure in variants.items():
            rounds[name].append(measure())
    return rounds


def best_of(rounds: Mapping[str, list[Timing]]) -> dict[str, Timing]:
    """The best wall and the best CPU time of each variant, over its rounds."""
    return {name: Timing(min(t.wall for t in timings), min(t.cpu for t in timings)) for name, timings in rounds.items()}


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def run_checked(
    argv: Sequence[str], *, ok_codes: tuple[int, ...] = (0,), **kwargs: object
) -> subprocess.CompletedProcess[bytes]:
    """Run a command that must succeed (exit with one of ``ok_codes``); its output is shown only when it does not."""
    done: subprocess.CompletedProcess[bytes] = subprocess.run(
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False, **kwargs
    )  # type: ignore[call-overload]
    if done.returncode not in ok_codes:
        sys.stdout.write(done.stdout.decode(errors="replace")[-4000:])
        raise SystemExit(f"benchmark step failed (exit {done.returncode}): {' '.join(argv)}")
    return done


def timed_run(argv: Sequence[str], **kwargs: Any) -> float:
    return timed(lambda: run_checked(argv, **kwargs))


def compile_trees(*trees: str | Path | None) -> None:
    """Write the bytecode of each checkout's ``pytest_recall`` (None: this one) before anything is timed.

    With ``PYTHONDONTWRITEBYTECODE`` set, a checkout that has never been
    compiled makes every Python process started from it (each session of the
    notebook agent, say) compile its modules again: some 15 ms a session that
    has nothing to do with the harness, and a before/after that compares
    compiling with not compiling.
    """
    import compileall

    for tree in trees:
        compileall.compile_dir(Path(tree or ROOT) / "pytest_recall", quiet=1)


def pytest_argv(target: Path, *extra: str) -> list[str]:
    """A real pytest run, as a user would type it, without the cache plugin writing into the tree."""
    return [PYTHON, "-m", "pytest", str(target), "-p", "no:cacheprovider", "-q", *extra]


@contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"recall-bench-{prefix}-") as name:
        yield Path(name)


def write_trivial_cases(root: Path, count: int, *, suite: str = "trivial") -> Path:
    """``count`` two-step cases whose answer is :data:`ANSWER`; returns the suite folder."""
    folder = root / suite
    for index in range(count):
        case = folder / f"case_{index:05d}"
        case.mkdir(parents=True)
        (case / "step1.txt").write_text(f"Remember this value: {ANSWER}\n")
        (case / "step2.txt").write_text("What was the value? Output only the value.\n")
        answer = {"id": case.name, "category": "trivial", "answer": ANSWER, "answer_kind": "money"}
        (case / "answer.json").write_text(json.dumps(answer))
    return folder


def write_script(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def run_measured(argv: Sequence[str], **kwargs: object) -> tuple[float, float]:
    """Run a command that must succeed; (wall seconds, its own peak RSS in MB, as ``wait4`` reports it)."""
    started = time.perf_counter()
    process = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kwargs)  # type: ignore[call-overload]
    assert process.stderr is not None
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stderr.close()
    if process.returncode != 0:
        sys.stdout.write(err.decode(errors="replace")[-4000:])
        raise SystemExit(f"benchmark step failed (exit {process.returncode}): {' '.join(argv)}")
    return elapsed, usage.ru_maxrss / 1000


def self_rss_mb() -> float:
    """This process's resident memory now, from /proc (Linux)."""
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def self_peak_rss_mb() -> float:
    """This process's peak resident memory so far (VmHWM)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1000
    return 0.0


def reset_peak_rss() -> None:
    """Start VmHWM afresh from the current RSS (Linux 4.0+), so a peak belongs to one measurement."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        pass
