"""Output: how fast the harness captures a flood from one agent, and whether its memory stays flat.

One agent writes N bytes (200 MB; text lines of 64 KiB) to stdout. Three
ways to take it, each in a fresh Python process so its memory is its own:

- harness: ``runner.run_session`` on a pty, keeping a head and a tail
  (``--recall-max-output``, 8 MB by default) and counting the rest;
- pipe: ``subprocess.run(..., stdout=PIPE)``, which keeps everything;
- raw pty: a bare ``os.read`` loop on a pty that throws the bytes away,
  the most any pty reader can do.

Memory growth is the process's peak RSS during the capture less its RSS
before; it is measured at N/4 and at N, so a bounded reader shows the same
growth at both. A last row runs the flood through pytest end to end (one
two-step case, step 2 floods) and reports the marginal rate against the same
case without the flood, and the pytest process's peak RSS.
Goal: at least 100 MB/s, memory bounded.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    PYTHON,
    ROOT,
    Row,
    best_times,
    parse_args,
    print_table,
    pytest_argv,
    reset_peak_rss,
    run_measured,
    scratch,
    self_peak_rss_mb,
    self_rss_mb,
    write_script,
    write_trivial_cases,
)

sys.path.insert(0, str(ROOT))
from pytest_recall.sessions.capture import DEFAULT_MAX_OUTPUT_BYTES

MB = 1_000_000
FULL_BYTES = 200 * MB
QUICK_BYTES = 4 * MB
# Quick mode keeps less, so that its N/4 still overflows the cap, as 50 MB overflows 8 MB.
QUICK_CAP = 256 * 1024
# Writes N bytes as lines of 64 KiB, then the answer; only on RECALL_STEP=2 when asked to.
FLOOD_AGENT = """\
import os, sys
total = int(sys.argv[1])
if os.environ.get("FLOOD_STEP") and os.environ.get("RECALL_STEP") != os.environ["FLOOD_STEP"]:
    total = 0
line = b"x" * 65535 + b"\\n"
out = sys.stdout.buffer
while total > 0:
    out.write(line if total >= len(line) else line[-total:])
    total -= len(line)
out.write(b"1234.56\\n")
out.flush()
"""


def child(way: str, agent: str, total: int, cap: int) -> None:
    """One capture in this process; prints seconds, RSS before and peak RSS as JSON."""
    argv = [PYTHON, "-S", agent, str(total)]
    if way == "harness":
        from pytest_recall.sessions.driver import run_session
        from pytest_recall.sessions.session import SessionSpec

        def capture() -> int:
            with tempfile.TemporaryDirectory() as cwd:
                spec = SessionSpec(tuple(argv), Path(cwd), dict(os.environ), 300.0, 3.0, cap)
                result = run_session(spec)
            assert result.exit_code == 0, result.stderr[-2000:]
            return result.stdout_bytes

    elif way == "pipe":

        def capture() -> int:
            done = subprocess.run(argv, capture_output=True, check=True)
            return len(done.stdout)

    else:

        def capture() -> int:
            master, slave = os.openpty()
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE)
            os.close(slave)
            got = 0
            while True:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:  # EIO: the writer is gone
                    break
                if not chunk:
                    break
                got += len(chunk)
            os.close(master)
            process.communicate()
            return got

    before = self_rss_mb()
    reset_peak_rss()
    started = time.perf_counter()
    got = capture()
    seconds = time.perf_counter() - started
    peak = self_peak_rss_mb()
    print(json.dumps({"seconds": seconds, "before_mb": before, "peak_mb": peak, "bytes": got}))


def measure(way: str, agent: Path, total: int, cap: int) -> dict[str, float]:
    done = subprocess.run(
        [PYTHON, __file__, "--child", way, str(agent), str(total), str(cap)], stdout=subprocess.PIPE, check=True
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    total = QUICK_BYTES if args.quick else FULL_BYTES
    cap = QUICK_CAP if args.quick else DEFAULT_MAX_OUTPUT_BYTES
    sizes = (total // 4, total)
    rows: list[Row] = []
    with scratch("output") as work:
        agent = write_script(work, "flood.py", FLOOD_AGENT)
        results: dict[str, dict[str, float]] = {}

        def kept(way: str, size: int) -> float:
            return _keep(results, f"{way} {size}", measure(way, agent, size, cap))

        seconds = best_times(
            {
                f"{way} {size}": functools.partial(kept, way, size)
                for size in sizes
                for way in ("harness", "pipe", "pty")
            },
            args.repeat,
        )
        rate = {way: total / seconds[f"{way} {total}"] / MB for way in ("harness", "pipe", "pty")}
        rows.append(
            Row(
                f"capture {total // MB} MB, MB/s",
                f"{rate['harness']:.0f}",
                (f"{rate['pipe']:.0f}", f"{rate['pty']:.0f}"),
                "harness/raw pty",
                rate["harness"] / rate["pty"],
                f">= 100 MB/s {'met' if rate['harness'] >= 100 else 'NOT MET'}",
            )
        )
        growth = {key: max(0.0, value["peak_mb"] - value["before_mb"]) for key, value in results.items()}
        for size in sizes:
            rows.append(
                Row(
                    f"memory growth at {size / MB:g} MB",
                    f"+{growth[f'harness {size}']:.1f} MB",
                    (f"+{growth[f'pipe {size}']:.1f} MB", f"+{growth[f'pty {size}']:.1f} MB"),
                    "harness/pipe",
                    growth[f"harness {size}"] / max(growth[f"pipe {size}"], 0.1),
                )
            )
        small, large = (growth[f"harness {size}"] for size in sizes)
        bounded = large / max(small, 1.0)
        rows.append(
            Row(
                f"harness growth, {total // MB} MB vs {total // 4 / MB:g} MB",
                f"+{large:.1f} MB",
                ("-", "-"),
                "large/small",
                bounded,
                f"bounded (<= 1.5x) {'met' if bounded <= 1.5 else 'NOT MET'}",
            )
        )
        rows.append(_through_pytest(work, agent, total, cap, args.repeat))
    print_table(f"output: one agent writes {total // MB} MB, best of {args.repeat}", ("pipe", "raw pty"), rows)


def _keep(results: dict[str, dict[str, float]], key: str, result: dict[str, float]) -> float:
    if key not in results or result["seconds"] < results[key]["seconds"]:
        results[key] = result
    return result["seconds"]


def _through_pytest(work: Path, agent: Path, total: int, cap: int, repeat: int) -> Row:
    """The flood through a whole pytest run: the marginal rate, and the run's peak memory."""
    suite = write_trivial_cases(work / "pytest", 1)
    command = f"--recall-cmd={PYTHON} -S {agent} {total}"
    env = {**os.environ, "FLOOD_STEP": "2"}
    quiet_env = {**os.environ, "FLOOD_STEP": "none"}
    peaks: dict[str, float] = {}

    def run(name: str, environment: dict[str, str]) -> float:
        argv = pytest_argv(suite.parent, command, f"--recall-max-output={cap}")
        seconds, peak = run_measured(argv, env=environment)
        peaks[name] = max(peaks.get(name, 0.0), peak)
        return seconds

    best = best_times({"flood": lambda: run("flood", env), "quiet": lambda: run("quiet", quiet_env)}, repeat)
    rate = total / max(best["flood"] - best["quiet"], 1e-6) / MB
    return Row(
        f"pytest end to end, MB/s (peak RSS {peaks['flood']:.0f} MB vs {peaks['quiet']:.0f} MB)",
        f"{rate:.0f}",
        ("-", "-"),
        "flood/quiet RSS",
        peaks["flood"] / peaks["quiet"],
        f">= 100 MB/s {'met' if rate >= 100 else 'NOT MET'}",
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        main()
