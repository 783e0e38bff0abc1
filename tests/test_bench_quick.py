"""Every benchmark runs in its quick mode and prints its table.

Only that it works is checked, never a time: CI machines are shared and
slow in ways that say nothing about the harness. The figures themselves are
in bench/README.md, taken with the full runs.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(path for path in BENCH.glob("*.py") if not path.name.startswith("_"))
# Each script's table has a "ratio" column, and its rows carry figures such as "1.85x" or "0.54";
# breakdown.py's table has a column of parts, one figure per checkout.
RATIO_HEADER = re.compile(r"\bratio\b|^part \(ms of CPU")
FIGURE = re.compile(r"\b\d+\.\d+x?\b")


def test_every_benchmark_script_is_found() -> None:
    assert {"overhead.py", "output_throughput.py", "scale.py"} <= {path.name for path in SCRIPTS}


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=[path.stem for path in SCRIPTS])
def test_benchmark_runs_quick_and_prints_its_ratios(script: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--quick"],
        cwd=BENCH.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:]
    lines = done.stdout.splitlines()
    headers = [index for index, line in enumerate(lines) if RATIO_HEADER.search(line)]
    assert headers, done.stdout[-4000:]
    rows = [line for line in lines[headers[0] + 1 :] if FIGURE.search(line)]
    assert rows, done.stdout[-4000:]
