"""What the MCP tap adds to a memory call: the same server called directly and through recall-mcp-tap.

A client sends ``tools/call`` requests one at a time over the server's stdio
and times each round trip: to a small Python MCP-style server started
directly, and to the same server started behind the relay. Rounds alternate
between the two, so load on a shared machine falls on both; the figures are
each side's median (p50) and p95 over all its calls, and the tap's cost is the
difference. The issue's goal: at most 1 ms added per call at the median.

    python bench/mcp_tap.py [--calls 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import PYTHON, Row, parse_args, print_table, scratch, write_script

from pytest_recall.sessions import mcp_tap

SERVER = r"""
import json, sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    message = json.loads(line)
    text = "Kestrel lives at 12 Ash Row. " * 20
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": text}]}}
    out.write(json.dumps(reply).encode() + b"\n")
    out.flush()
"""


def round_trips(argv: list[str], calls: int) -> list[float]:
    """Seconds per call, ``calls`` calls in a row, over one server process."""
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0) as server:
        assert server.stdin is not None and server.stdout is not None
        times = []
        for index in range(calls):
            request = {"jsonrpc": "2.0", "id": index, "method": "tools/call"}
            request["params"] = {"name": "search_nodes", "arguments": {"query": f"Kestrel {index}"}}
            line = json.dumps(request).encode() + b"\n"
            started = time.perf_counter()
            server.stdin.write(line)
            server.stdout.readline()
            times.append(time.perf_counter() - started)
        server.stdin.close()
        server.wait(timeout=30)
    return times


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def calls_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calls", type=int, default=2000, help="calls each way per round")


def main() -> None:
    args = parse_args(__doc__ or "", repeat=5, more=calls_option)
    calls = 50 if args.quick else args.calls
    with scratch("recall-bench-tap-") as folder:
        server = write_script(folder, "server.py", SERVER)
        direct = [PYTHON, str(server)]
        tapped = [PYTHON, "-I", "-S", mcp_tap.__file__, "--log", str(folder / "tap.jsonl")]
        tapped += ["--server", "memory", "--", *direct]
        times: dict[str, list[float]] = {"direct": [], "tapped": []}
        for _round in range(args.repeat):
            times["direct"] += round_trips(direct, calls)
            times["tapped"] += round_trips(tapped, calls)
        logged = len(Path(folder / "tap.jsonl").read_text(encoding="utf-8").splitlines())
    rows = []
    for name, share in (("p50", 0.5), ("p95", 0.95)):
        plain, relayed = percentile(times["direct"], share), percentile(times["tapped"], share)
        added = (relayed - plain) * 1000
        goal = f"<= 1 ms added {'met' if added <= 1 else 'NOT MET'}" if name == "p50" else ""
        rows.append(
            Row(f"a call, {name}", f"{relayed * 1e3:.3f} ms", (f"{plain * 1e3:.3f} ms",), "added", added, goal, " ms")
        )
    print_table(f"MCP tap: {calls} calls x {args.repeat} rounds each way", ["direct"], rows, first="tapped")
    mean_added = (statistics.fmean(times["tapped"]) - statistics.fmean(times["direct"])) * 1000
    print(f"\nmean added {mean_added:.3f} ms a call; {logged} calls logged by the tap ({sys.platform})")


if __name__ == "__main__":
    main()
