"""Kill -9 in the middle of a large run, resume it, and check that no finished case is lost or paid twice.

A real run of N two-step cases (an agent that is one ``sh`` printing a
value after 0.1 s; every 7th case expects another value, so the score is not trivially
1.0) at ``--recall-concurrency=32`` with ``--recall-log``. Once the log holds
``--kill-at`` records, the run's whole process group gets SIGKILL. The same
command then runs again with ``--recall-resume`` on the same log. Checked:

- every case whose record was in the log at the kill is not run again: its
  record in the resumed report is the logged one (same durations, to the
  0.1 ms), and the log names each case exactly once;
- the resumed report has all N cases, each exactly once;
- its verdict, score and every case record (timing aside) equal those of a
  clean run of the same cases, made first in the same sitting.

The table gives the wall time of the clean run and of the killed plus
resumed runs together (ratio: resumed work against the clean run's, about
1.0 when nothing is paid twice). ``tests/test_resume.py`` runs the same
procedure at a smaller N.

    python bench/kill_resume.py --cases 10000
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import ANSWER, ROOT, Row, parse_args, print_table, pytest_argv, scratch, secs

sys.path.insert(0, str(ROOT))
from pytest_recall.plugin.runlog import load_records

# A session waits a little, as one that waits on a model does, so a small run is still in flight at the kill.
AGENT = f"sh -c 'sleep 0.1; echo {ANSWER}' agent"
WRONG_ANSWER = "4321.00"
CONCURRENCY = 32


def write_cases(root: Path, count: int) -> Path:
    """``count`` two-step cases; every 7th expects :data:`WRONG_ANSWER`, which the agent never says."""
    folder = root / "cases" / "trivial"
    for index in range(count):
        case = folder / f"case_{index:05d}"
        case.mkdir(parents=True)
        (case / "step1.txt").write_text(f"Remember this value: {ANSWER}\n")
        (case / "step2.txt").write_text("What was the value? Output only the value.\n")
        answer = WRONG_ANSWER if index % 7 == 0 else ANSWER
        (case / "answer.json").write_text(
            json.dumps({"id": case.name, "category": "trivial", "answer": answer, "answer_kind": "money"})
        )
    return root / "cases"


@dataclass(frozen=True)
class KillResume:
    """What one kill-and-resume took and kept."""

    count: int
    clean_s: float
    killed_s: float
    resumed_s: float
    kept_at_kill: int
    resumed_from: int
    score: float


def run_args(cases: Path, *extra: str) -> list[str]:
    return pytest_argv(cases, f"--recall-cmd={AGENT}", f"--recall-concurrency={CONCURRENCY}", *extra)


def scored_run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """A run that must finish: exit 1 is its failing cases (every 7th), anything else is a broken run."""
    done = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    assert done.returncode in (0, 1), done.stdout.decode(errors="replace")[-4000:]
    return done


def without_timing(document: Any) -> Any:
    if isinstance(document, Mapping):
        return {
            key: without_timing(value)
            for key, value in document.items()
            if key != "duration_s" and not str(key).startswith("latency_ms")
        }
    if isinstance(document, list):
        return [without_timing(value) for value in document]
    return document


def kill_and_resume(root: Path, count: int, kill_at: int) -> KillResume:
    """The whole procedure; an AssertionError says which promise broke."""
    cases = write_cases(root, count)
    clean_report, report, log = root / "clean.json", root / "resumed.json", root / "run.jsonl"
    started = time.perf_counter()
    scored_run(run_args(cases, f"--recall-report={clean_report}"), root)
    clean_s = time.perf_counter() - started

    started = time.perf_counter()
    killed = subprocess.Popen(
        run_args(cases, f"--recall-log={log}", f"--recall-report={report}"),
        cwd=root,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not (log.exists() and _lines(log) >= kill_at):
            assert killed.poll() is None, f"the run ended (exit {killed.returncode}) before {kill_at} records"
            time.sleep(0.05)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(timeout=60)
    killed_s = time.perf_counter() - started
    assert not report.exists(), "a killed run writes no report"
    before = {str(record["nodeid"]): record for record in load_records(log)}
    assert len(before) >= kill_at

    started = time.perf_counter()
    # -v undoes -q, so the header says how many records the run resumes from.
    resume = (f"--recall-log={log}", f"--recall-resume={log}", f"--recall-report={report}", "-v")
    resumed = scored_run(run_args(cases, *resume), root)
    resumed_s = time.perf_counter() - started
    output = resumed.stdout.decode(errors="replace")
    header = next((line for line in output.splitlines() if "resuming from" in line), "no resume line")
    assert header == f"recall: resuming from {log}: {len(before)} scored case records", header

    final = json.loads(report.read_text(encoding="utf-8"))
    nodeids = [str(record["nodeid"]) for record in final["cases"]]
    assert len(nodeids) == count == len(set(nodeids)), "every case exactly once"
    for record in final["cases"]:
        kept = before.get(str(record["nodeid"]))
        if kept is not None:
            assert record["duration_s"] == kept["duration_s"], f"{record['nodeid']} ran again after the kill"
            assert [s["duration_s"] for s in record["steps"]] == [s["duration_s"] for s in kept["steps"]]
    logged = [str(record["nodeid"]) for record in load_records(log)]
    assert sorted(logged) == sorted(nodeids), "the log names every case once: none run twice"
    clean = json.loads(clean_report.read_text(encoding="utf-8"))
    assert (final["passed"], final["score"], final["n_total"]) == (clean["passed"], clean["score"], clean["n_total"])
    assert without_timing(final["cases"]) == without_timing(clean["cases"])
    return KillResume(count, clean_s, killed_s, resumed_s, len(before), len(before), float(final["score"]))


def _lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def more_args(parser: Any) -> None:
    parser.add_argument("--cases", type=int, default=10_000, help="cases in the run (default 10000)")
    parser.add_argument("--kill-at", type=int, default=None, help="log records before the kill (default 40%%)")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], more=more_args)
    count = 60 if args.quick else args.cases
    kill_at = args.kill_at or max(1, count * 2 // 5)
    with scratch("kill-resume") as root:
        done = kill_and_resume(root, count, kill_at)
    rows = [
        Row(
            f"{done.count} cases, SIGKILL at {done.kept_at_kill} logged, score {done.score:.4f} both ways",
            f"{secs(done.killed_s)} + {secs(done.resumed_s)}",
            (secs(done.clean_s),),
            "killed+resumed/clean",
            (done.killed_s + done.resumed_s) / done.clean_s,
            "no case lost or run twice: checked",
        )
    ]
    print_table("kill -9 and resume, one run each", ("clean run",), rows)


if __name__ == "__main__":
    main()
