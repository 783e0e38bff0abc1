"""Flood: does pytest's own memory stay flat while an agent writes gigabytes to stdout?

One two-step case whose second step writes N bytes of text lines (2 GiB by
default) and then the answer on a line of its own, run through pytest end to
end, as a user would. A conftest in the run notes the pytest process's RSS
when collection ends and its peak (VmHWM) when pytest exits; the growth is
the difference. The same case without the flood is the baseline, in the same
run of this script. The case must still pass: the final line survives the cap.

Goal: growth under 100 MB at any flood size (the capture keeps a head and a
tail of ``--recall-max-output``, 8 MiB by default).

    python bench/flood_memory.py            # 2 GiB flood
    python bench/flood_memory.py --quick    # 40 MB (five times the cap), one attempt: checks it runs
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from _common import (
    ANSWER,
    ROOT,
    Row,
    parse_args,
    print_table,
    pytest_argv,
    run_checked,
    scratch,
    secs,
    timed,
    write_script,
)

sys.path.insert(0, str(ROOT))
from pytest_recall.sessions.capture import DEFAULT_MAX_OUTPUT_BYTES

MIB = 1 << 20
GOAL_GROWTH_MB = 100.0

FLOOD_AGENT = """#!{python}
import os, sys
total = int(os.environ["BENCH_FLOOD_BYTES"]) if sys.argv[-1].startswith("What") else 0
erase = b"\\x1b[K" if os.environ.get("BENCH_FLOOD_REDRAW") else b""
block = (b"flood " + b"x" * 1017 + erase + b"\\n") * 64
out = sys.stdout.buffer
written = 0
while written < total:
    out.write(block)
    written += len(block)
out.write(b"\\n{answer}\\n")
out.flush()
"""

RSS_PROBE = """
import json, os

START = {}


def _status(field):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith(field + ":"))


def pytest_collection_finish(session):
    START["rss"] = _status("VmRSS")


def pytest_unconfigure(config):
    with open(os.environ["BENCH_RSS_FILE"], "w") as handle:
        json.dump({"start": START.get("rss"), "peak": _status("VmHWM")}, handle)
"""


def measure(
    root: Path, agent: Path, flood_bytes: int, *, redraw: bool = False
) -> tuple[float, float, dict[str, object]]:
    """(wall seconds, RSS growth in MB, the case record) for one run of the case.

    ``redraw``: every flood line also erases to its end, so the judged text goes through the
    terminal renderer (sessions/render.py) rather than the stripping path.
    """
    rss_file, report = root / "rss.json", root / "report.json"
    env = {**os.environ, "BENCH_FLOOD_BYTES": str(flood_bytes), "BENCH_RSS_FILE": str(rss_file)}
    if redraw:
        env["BENCH_FLOOD_REDRAW"] = "1"
    argv = pytest_argv(root / "cases", f"--recall-cmd={agent}", f"--recall-report={report}", "--recall-timeout=900")
    wall = timed(lambda: run_checked(argv, env=env, cwd=root))
    rss = json.loads(rss_file.read_text())
    record = json.loads(report.read_text())["cases"][0]
    return wall, (rss["peak"] - rss["start"]) / 1e6, record


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    flood_bytes = 40 * 1_000_000 if args.quick else 2048 * MIB
    with scratch("flood") as root:
        (root / "conftest.py").write_text(RSS_PROBE)
        case = root / "cases" / "flood" / "case_flood"
        case.mkdir(parents=True)
        (case / "step1.txt").write_text(f"Remember this value: {ANSWER}\n")
        (case / "step2.txt").write_text("What was the value? Output only the value.\n")
        expected = {"id": "case_flood", "category": "flood", "answer": ANSWER, "answer_kind": "money"}
        (case / "answer.json").write_text(json.dumps(expected))
        agent = write_script(root, "flood_agent.py", FLOOD_AGENT.format(python=sys.executable, answer=ANSWER))
        best: dict[str, tuple[float, float, dict[str, object]]] = {}
        for _ in range(args.repeat):
            variants = (("none", 0, False), ("plain", flood_bytes, False), ("redraw", flood_bytes, True))
            for name, size, redraw in variants:
                wall, growth, record = measure(root, agent, size, redraw=redraw)
                if name not in best or growth < best[name][1]:
                    best[name] = (wall, growth, record)
    base_wall, base_growth, _ = best["none"]
    rows = []
    for name, label in (("plain", "flood"), ("redraw", "flood erasing each line (rendered)")):
        wall, growth, record = best[name]
        steps = record["steps"]
        assert isinstance(steps, list)
        last = steps[-1]
        if record["score"] != 1.0 or not last["truncated"]:
            raise SystemExit(f"the flooded case did not pass with truncated output: {record['reason']}")
        rate = flood_bytes / 1e6 / max(wall - base_wall, 1e-9)
        rows += [
            Row(
                what=f"{label} {flood_bytes / MIB:.0f} MiB ({last['stdout_bytes'] / 1e6:.0f} MB on the pty)",
                harness=f"+{growth:.1f} MB RSS",
                baselines=(f"+{base_growth:.1f} MB RSS",),
                # How many copies of the kept output the harness held at its peak.
                ratio_name="growth / --recall-max-output",
                ratio=growth / (DEFAULT_MAX_OUTPUT_BYTES / 1e6),
                goal=f"growth < {GOAL_GROWTH_MB:.0f} MB {'met' if growth < GOAL_GROWTH_MB else 'NOT MET'}",
            ),
            Row(
                what="time",
                harness=secs(wall),
                baselines=(secs(base_wall),),
                ratio_name=f"{rate:.0f} MB/s marginal",
                ratio=wall / base_wall,
            ),
        ]
    print_table("pytest's memory under a stdout flood", ["no flood"], rows)


if __name__ == "__main__":
    main()
