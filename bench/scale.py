"""Scale: collecting, judging and reporting 10,000 cases, and whether each grows linearly from 1,000.

- collection: ``pytest --collect-only -q`` over a ``suite.toml`` that declares
  N ledger cases, against pytest collecting N parametrized no-op tests (its
  own cost per item); the linearity figure takes pytest's start-up (an empty
  folder) off both sizes first;
- judging: the plugin's path for one final stdout (terminal cleaning, then
  ``judge_steps`` with the built-in judge) over realistic outputs, against a
  naive "last line equals the answer" check;
- report: ``report_of_rows`` and ``write_json_atomic`` over N realistic records
  (two steps, the real ledger prompts, transcripts), against ``json.dump`` of
  the same records to a file;
- start: how long resume (``ResumeIndex.load``) and merge (its read-and-check
  pass) take before they do anything over one report of N synthetic records,
  against ``json.load`` of the same file (goal: under 10 s at 100,000).

- memory: the peak RSS of a real run (``--recall-concurrency=8``, an agent
  that is one ``sh`` printing a value, a judge that passes every answer, so
  no failure text adds to pytest's own bookkeeping) over a ``suite.toml`` of
  N ledger cases, against pytest running N parametrized no-op tests in the
  same sitting: the difference per case, overall and between two sizes (the
  marginal cost, with the plugin's fixed start-up cost taken off), and the
  size of the report it wrote.

Goals: seconds, not minutes, at 10,000; and linear, so 10x the cases costs
about 10x the time. Memory: at most 2 KB per case above pytest's own.

    python bench/scale.py                                    # everything, 1,000 and 10,000
    python bench/scale.py --memory-only --memory-counts 1000,10000,100000
    python bench/scale.py --merge-cases 100000               # the merge's peak memory; resume's and merge's start
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from _common import (
    ROOT,
    Row,
    best_times,
    goal_text,
    parse_args,
    print_table,
    pytest_argv,
    run_measured,
    scratch,
    secs,
    timed,
    timed_run,
)

sys.path.insert(0, str(ROOT))
from pytest_recall.cases.model import Case
from pytest_recall.cases.runs import CaseRun, SessionResult, StepRun
from pytest_recall.reporting.document import write_report
from pytest_recall.reporting.files import write_json_atomic
from pytest_recall.reporting.lazy_records import LazyRecords
from pytest_recall.reporting.merge import report_of_rows
from pytest_recall.reporting.records import CaseRecord
from pytest_recall.reporting.transcripts import DEFAULT_TRANSCRIPTS, transcripts_view
from pytest_recall.scoring.judge import judge_answer, judge_steps
from pytest_recall.scoring.verdict import decide
from pytest_recall.suites import ledger
from pytest_recall.suites.suite_file import MAX_COUNT
from pytest_recall.terminal_text import clean_terminal_text

SEED = 7
COUNTS = (1_000, 10_000)
QUICK_COUNTS = (100, 1_000)
# The longest time 10,000 cases may take in any one stage: seconds, not minutes.
GOAL_S = 10.0
# 10x the cases may cost up to this much more: linear, with room for noise.
LINEAR_AT_MOST = 12.0


def collection_rows(counts: tuple[int, int], repeat: int) -> list[Row]:
    with scratch("collect") as root:
        for count in counts:
            write_ledger_suites(root / f"suite-{count}", count)
            plain = root / f"plain-{count}"
            plain.mkdir()
            (plain / "test_plain.py").write_text(
                f"import pytest\n\n\n@pytest.mark.parametrize('n', range({count}))\ndef test_n(n):\n    pass\n"
            )
        (root / "empty").mkdir()
        # --collect-only still checks the agent command; `true` is on every PATH.
        extra = ("--collect-only", "--recall-cmd=true")
        variants: dict[str, Callable[[], float]] = {"startup": lambda: _startup(root, extra)}
        for count in counts:
            variants[f"suite {count}"] = functools.partial(
                timed_run, pytest_argv(root / f"suite-{count}", *extra), cwd=root
            )
            variants[f"plain {count}"] = functools.partial(
                timed_run, pytest_argv(root / f"plain-{count}", *extra), cwd=root
            )
        best = best_times(variants, repeat)
    rows = []
    for count in counts:
        harness, bare = best[f"suite {count}"], best[f"plain {count}"]
        rows.append(Row(f"collect {count} cases", secs(harness), (secs(bare),), "suite/plain", harness / bare))
    small, large = counts
    growth = (best[f"suite {large}"] - best["startup"]) / max(best[f"suite {small}"] - best["startup"], 1e-6)
    rows.append(_linear_row(f"collect {large} vs {small}, less start-up", best[f"suite {large}"], growth, large, small))
    return rows


def _startup(root: Path, extra: tuple[str, ...]) -> float:
    """pytest over an empty folder exits 5 (nothing collected): expected, so not checked."""
    argv = pytest_argv(root / "empty", *extra)
    devnull = subprocess.DEVNULL
    return timed(lambda: subprocess.run(argv, cwd=root, stdout=devnull, stderr=devnull, check=False))


def realistic_stdout(index: int, answer: str) -> str:
    """What agents print: the bare value, prose, a terminal's colours and CRLF, a refusal, a shotgun."""
    style = index % 5
    if style == 0:
        return f"{answer}\r\n"
    if style == 1:
        reasoning = " ".join(f"Entry {n} moved the balance by {n * 37.5:.2f}." for n in range(40))
        bold = f"\x1b[1m{answer}\x1b[0m"
        return f"Let me recall the ledger.\r\n{reasoning}\r\nThe value I stored is {answer}.\r\n{bold}\r\n"
    if style == 2:
        return "I do not have that value in memory.\r\nUNKNOWN\r\n"
    if style == 3:
        return f"It was either 1,234.56 or {answer}, possibly 9,999.99.\r\n"
    return "\x1b[32m⠋ thinking\x1b[0m\r\x1b[2K" * 20 + f"Answer: {answer}\r\n"


def judge_rows(counts: tuple[int, int], repeat: int) -> list[Row]:
    cases = ledger.generate(SEED, counts[-1])
    outputs = [(realistic_stdout(i, str(c.expected["answer"])), c.expected) for i, c in enumerate(cases)]

    def plugin(n: int) -> float:
        def run() -> None:
            for stdout, expected in outputs[:n]:
                judge_steps([(0, None, False)], clean_terminal_text(stdout), expected, judge_answer)

        return timed(run)

    def naive(n: int) -> float:
        def run() -> None:
            for stdout, expected in outputs[:n]:
                lines = stdout.strip().splitlines()
                _ = bool(lines) and lines[-1].strip() == expected["answer"]

        return timed(run)

    variants = {}
    for count in counts:
        variants[f"plugin {count}"] = functools.partial(_best_of, tries(count, counts), plugin, count)
        variants[f"naive {count}"] = functools.partial(_best_of, tries(count, counts), naive, count)
    best = best_times(variants, repeat)
    rows = []
    for count in counts:
        harness, baseline = best[f"plugin {count}"], best[f"naive {count}"]
        rows.append(
            Row(
                f"judge {count} outputs",
                f"{count / harness:,.0f}/s",
                (f"{count / baseline:,.0f}/s",),
                "plugin/naive time",
                harness / baseline,
            )
        )
    small, large = counts
    growth = best[f"plugin {large}"] / best[f"plugin {small}"]
    rows.append(_linear_row(f"judge {large} vs {small}", best[f"plugin {large}"], growth, large, small))
    return rows


# A default run's mode (Settings.run_mode() with no --recall-* option), as every record of a run states it.
RUN_MODE: dict[str, Any] = {
    "sandbox": "none",
    "sandbox_binds": [],
    "sandbox_net": None,
    "home": "case",
    "home_copy": [],
    "workdir": "fresh",
    "prompt": "argv",
    "env": [],
    "session": "fresh",
    "ready_pattern": None,
    "ready_idle_s": None,
    "live_preset": None,
    "turn_protocol": None,
    "ok_exit_codes": None,
    "scope": "case",
}


def realistic_records(count: int) -> list[dict[str, Any]]:
    """Records as a run writes them: real ledger prompts, a transcript per step, every field filled."""
    cases: list[Case] = ledger.generate(SEED, min(count, 1_000))
    records = []
    for index in range(count):
        case = cases[index % len(cases)]
        answer = str(case.expected["answer"])
        steps = []
        for step in case.steps:
            stdout = realistic_stdout(index + step.number, answer)
            result = SessionResult(
                exit_code=0,
                signal=None,
                timed_out=False,
                duration_s=12.3456 + index % 7,
                stdout=stdout.encode(),
                stderr=b"warning: model latency high\n",
                stdout_bytes=len(stdout),
                stderr_bytes=28,
                truncated=False,
            )
            cleaned = clean_terminal_text(stdout)
            steps.append(StepRun(step.number, step.prompt, result, cleaned, "warning: model latency high\n", 0.0123))
        run = CaseRun(case, tuple(steps), epoch=1, duration_s=24.69)
        verdict = decide(run, answer_judge=judge_answer)
        nodeid = f"cases/ledger/{case.case_id}-{index}::recall"
        record = CaseRecord.of_run(run, verdict, nodeid=nodeid, command="my-agent --model x").as_json()
        records.append({**record, "run_mode": RUN_MODE})
    return records


def report_rows(counts: tuple[int, int], repeat: int) -> list[Row]:
    records = realistic_records(counts[-1])
    with scratch("report") as root:
        view = transcripts_view(DEFAULT_TRANSCRIPTS)

        def harness(n: int) -> float:
            def write() -> None:
                report = report_of_rows(records[:n], threshold=0.5, command="my-agent")
                report = replace(report, cases=[view(record) for record in report.cases])
                write_json_atomic(root / f"report-{n}.json", report.as_json(), line_each="cases")

            return timed(write)

        def baseline(n: int) -> float:
            def dump() -> None:
                with open(root / f"plain-{n}.json", "w", encoding="utf-8") as handle:
                    json.dump(records[:n], handle)

            return timed(dump)

        variants = {}
        for count in counts:
            variants[f"report {count}"] = functools.partial(_best_of, tries(count, counts), harness, count)
            variants[f"dump {count}"] = functools.partial(_best_of, tries(count, counts), baseline, count)
        best = best_times(variants, repeat)
        size_mb = (root / f"report-{counts[-1]}.json").stat().st_size / 1e6
    rows = []
    for count in counts:
        spent, plain = best[f"report {count}"], best[f"dump {count}"]
        rows.append(Row(f"report {count} records", secs(spent), (secs(plain),), "report/json.dump", spent / plain))
    small, large = counts
    growth = best[f"report {large}"] / best[f"report {small}"]
    rows.append(
        _linear_row(f"report {large} vs {small} ({size_mb:.0f} MB file)", best[f"report {large}"], growth, large, small)
    )
    return rows


def tries(count: int, counts: tuple[int, int]) -> int:
    """Attempts per round: the small size takes a tenth of the time, so it gets ten times the tries."""
    return max(1, counts[-1] // count)


def _best_of(attempts: int, measure: Callable[[int], float], count: int) -> float:
    return min(measure(count) for _ in range(attempts))


def _linear_row(what: str, large_seconds: float, growth: float, large: int, small: int) -> Row:
    """Growth against the size ratio; the goal also holds the larger run to :data:`GOAL_S`."""
    within = large_seconds <= GOAL_S
    goal = goal_text(growth, at_most=LINEAR_AT_MOST * large / small / 10)
    return Row(
        what,
        secs(large_seconds),
        ("-",),
        f"{large // small}x cases",
        growth,
        f"{goal}; {'met' if within else 'NOT MET'} <= {GOAL_S:g} s",
    )


# Real runs, so slow: 10,000 cases take minutes on a busy 2-core machine.
MEMORY_COUNTS = (1_000, 10_000)
QUICK_MEMORY_COUNTS = (20, 60)
# The marginal memory a case may cost above a parametrized pytest item, in KB.
MEMORY_GOAL_KB = 2.0
BENCH_JUDGE = """def pytest_recall_judge(stdout, expected, config):
    return {"score": 1.0, "reason": "bench: every answer passes", "reported": stdout.strip()}
"""


def memory_rows(counts: tuple[int, ...], transcripts: str) -> list[Row]:
    """Peak RSS of a real run against pytest's own items, per case, at each size."""
    peaks: dict[int, tuple[float, float, float, float, float]] = {}
    with scratch("memory") as root:
        (root / "conftest.py").write_text(BENCH_JUDGE)
        for count in counts:
            write_ledger_suites(root / f"suite-{count}", count)
            plain = root / f"plain-{count}"
            plain.mkdir()
            (plain / "test_plain.py").write_text(
                f"import pytest\n\n\n@pytest.mark.parametrize('n', range({count}))\ndef test_n(n):\n    pass\n"
            )
            with_data = root / f"data-{count}"
            with_data.mkdir()
            (with_data / "test_data.py").write_text(
                "import pytest\nfrom pytest_recall.suites import ledger\n\n\n"
                f"@pytest.mark.parametrize('case', ledger.generate({SEED}, {count}))\ndef test_case(case):\n    pass\n"
            )
            report = root / f"report-{count}.json"
            recall_s, recall_mb = run_measured(
                pytest_argv(
                    root / f"suite-{count}",
                    "--recall-cmd=sh -c 'echo 1234.56' agent",
                    "--recall-concurrency=8",
                    f"--recall-transcripts={transcripts}",
                    f"--recall-report={report}",
                ),
                cwd=root,
            )
            _, plain_mb = run_measured(pytest_argv(plain), cwd=root)
            _, data_mb = run_measured(pytest_argv(with_data), cwd=root)
            peaks[count] = (recall_mb, plain_mb, report.stat().st_size / 1e6, recall_s, data_mb)
            report.unlink()
    rows = []
    for count in counts:
        recall_mb, plain_mb, report_mb, recall_s, data_mb = peaks[count]
        per_case_kb = (recall_mb - plain_mb) * 1000 / count
        rows.append(
            Row(
                f"{count} cases: peak RSS, report {report_mb:.1f} MB ({report_mb * 1000 / count:.2f} KB/case)",
                f"{recall_mb:.0f} MB in {recall_s:.0f} s",
                (f"{plain_mb:.0f} MB", f"{data_mb:.0f} MB"),
                "KB/case above pytest",
                per_case_kb,
                unit=" KB",
            )
        )
    for small, large in itertools.pairwise(counts):
        grown = (peaks[large][0] - peaks[large][1]) - (peaks[small][0] - peaks[small][1])
        marginal_kb = grown * 1000 / (large - small)
        over_data = (peaks[large][0] - peaks[large][4]) - (peaks[small][0] - peaks[small][4])
        rows.append(
            Row(
                f"{small} -> {large} cases: marginal",
                f"{grown:+.1f} MB",
                ("-", f"{over_data * 1000 / (large - small):.2f} KB/case above"),
                "KB/case above pytest",
                marginal_kb,
                f"<= {MEMORY_GOAL_KB:g} KB {'met' if marginal_kb <= MEMORY_GOAL_KB else 'NOT MET'}",
                unit=" KB",
            )
        )
    return rows


def write_ledger_suites(folder: Path, count: int) -> None:
    """``count`` ledger cases as ``suite.toml`` files; one file declares at most 10,000, so more take several."""
    for part, start in enumerate(range(0, count, MAX_COUNT)):
        suite = folder / ("ledger" if count <= MAX_COUNT else f"ledger{part:02d}")
        suite.mkdir(parents=True)
        size = min(MAX_COUNT, count - start)
        (suite / "suite.toml").write_text(f'family = "ledger"\nseed = {SEED + part}\ncount = {size}\n')


class PassingCases(LazyRecords[dict[str, Any]]):
    """``count`` passing records, made as they are read: the realistic ones, cycled, each its own node id."""

    def __init__(self, pool: list[dict[str, Any]], count: int) -> None:
        # Not ``self.count``: a sequence's ``count`` is its method.
        self.pool, self.length = pool, count

    def __len__(self) -> int:
        return self.length

    def row(self, index: int) -> dict[str, Any]:
        record = self.pool[index % len(self.pool)]
        return {**record, "nodeid": f"{record['nodeid']}-{index}"}


def report_size_row(count: int) -> Row:
    """The report of ``count`` passing ledger cases, written as the plugin writes it, by default transcripts."""
    view = transcripts_view(DEFAULT_TRANSCRIPTS)
    passing = [dict(view(record)) for record in realistic_records(1_000) if record["score"] == 1.0]
    with scratch("report-size") as root:
        path = root / "report.json"
        report = report_of_rows(passing, threshold=0.5, command="my-agent --model x", run_mode=RUN_MODE)
        report = replace(report, cases=PassingCases(passing, count))
        spent = timed(lambda: write_report(path, report))
        size_mb = path.stat().st_size / 1e6
    goal = f"<= 100 MB at 100,000 {'met' if size_mb * 100_000 / count <= 100 else 'NOT MET'}"
    return Row(
        f"report of {count} passing cases",
        f"{size_mb:.1f} MB",
        (secs(spent),),
        "KB/case",
        size_mb * 1000 / count,
        goal,
        unit=" KB",
    )


# The merge as it was before it streamed: every report loaded whole, then merged in memory.
WHOLE_MERGE = """import sys
from pathlib import Path
from pytest_recall.reporting.document import load_report, write_report
from pytest_recall.reporting.merge import merge_reports
merged = merge_reports([load_report(Path(p)) for p in sys.argv[2:]])
write_report(Path(sys.argv[1]), merged)
"""


def merge_row(count: int) -> Row:
    """Peak RSS of ``pytest-recall merge`` over two shard reports of ``count`` cases in all, against loading them whole.

    The shards are synthetic records (``pytest_recall.testing.synthetic``),
    written as the plugin writes reports. Both merges run as their own
    process, side by side, and write the same merged report.
    """
    from pytest_recall.testing.synthetic import COMMAND, SyntheticCases, synthetic_report

    with scratch("merge") as root:
        half = count // 2
        shards = [root / "shard-1.json", root / "shard-2.json"]
        header = synthetic_report(half)
        for path, cases in zip(shards, (SyntheticCases(half), SyntheticCases(count - half, start=half)), strict=True):
            write_json_atomic(path, replace(header, command=COMMAND, cases=cases).as_json(), line_each="cases")
        shard_mb = sum(path.stat().st_size for path in shards) / 1e6
        cli = [sys.executable, "-m", "pytest_recall.cli", "merge", *map(str, shards), "--gate=score"]
        streamed_s, streamed_mb = run_measured([*cli, "-o", str(root / "merged.json")], cwd=root)
        whole = [sys.executable, "-c", WHOLE_MERGE, str(root / "whole.json"), *map(str, shards)]
        whole_s, whole_mb = run_measured(whole, cwd=root)
        same = (root / "merged.json").read_bytes() == (root / "whole.json").read_bytes()
    return Row(
        f"merge 2 shards, {count} cases ({shard_mb:.0f} MB of reports){'' if same else ' OUTPUTS DIFFER'}",
        f"{streamed_mb:.0f} MB in {streamed_s:.0f} s",
        (f"{whole_mb:.0f} MB in {whole_s:.0f} s",),
        "peak RSS streamed/whole",
        streamed_mb / whole_mb,
    )


START_GOAL_S = 10.0


def start_rows(count: int) -> list[Row]:
    """How long resume and merge take to start over one report of ``count`` records, against ``json.load`` of it.

    Resume builds its index (``ResumeIndex.load``: every record parsed and
    checked against the schema, its key and line offset kept); merge reads and
    checks every record before it writes (``merge_report_files``). The records
    are synthetic (``pytest_recall.testing.synthetic``), written by the plugin's
    own ``write_report``. Goal: each under 10 s at 100,000.
    """
    from pytest_recall.plugin.runlog import ResumeIndex
    from pytest_recall.reporting.merge import close_files, merge_report_files
    from pytest_recall.testing.synthetic import synthetic_report

    with scratch("start") as root:
        path = root / "report.json"
        write_report(path, synthetic_report(count))
        size_mb = path.stat().st_size / 1e6
        parsed = timed(lambda: json.loads(path.read_bytes()))
        resumed = timed(lambda: ResumeIndex.load(path))
        merged = timed(lambda: close_files(merge_report_files([path])))

    def goal(spent: float) -> str:
        # Set for 100,000 records; a smaller run's time is mostly imports and the schema's compilation.
        if count < 100_000:
            return f"< {START_GOAL_S:g} s at 100,000"
        return f"< {START_GOAL_S:g} s {'met' if spent < START_GOAL_S else 'NOT MET'}"

    return [
        Row(
            f"{what}, {count} records ({size_mb:.0f} MB)",
            secs(spent),
            (secs(parsed),),
            f"{what.split()[0]}/json.load",
            spent / parsed,
            goal(spent),
        )
        for what, spent in (("resume index loaded", resumed), ("merge read and checked", merged))
    ]


def more_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--merge-cases",
        type=int,
        default=None,
        help="only the merge's peak memory, and how long resume and merge take to start, at N cases",
    )
    parser.add_argument("--report-cases", type=int, default=None, help="only the size of a report of N passing cases")
    parser.add_argument("--memory-only", action="store_true", help="only the memory table")
    parser.add_argument(
        "--memory-counts", default=None, help="comma-separated case counts for the memory table (default 1000,10000)"
    )
    parser.add_argument("--transcripts", default="failed", help="--recall-transcripts for the memory runs")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], more=more_args)
    counts = QUICK_COUNTS if args.quick else COUNTS
    if args.merge_cases:
        print_table("scale: merge, one run each", ("loaded whole (before)",), [merge_row(args.merge_cases)])
        print_table("scale: resume and merge start, one run each", ("json.load",), start_rows(args.merge_cases))
        return
    if args.report_cases:
        print_table("scale: report size", ("write time",), [report_size_row(args.report_cases)])
        return
    memory_counts = tuple(int(n) for n in args.memory_counts.split(",")) if args.memory_counts else MEMORY_COUNTS
    if args.quick:
        memory_counts = QUICK_MEMORY_COUNTS
    print_table(
        "scale: memory, one run each",
        ("plain pytest", "pytest over the Case objects"),
        memory_rows(memory_counts, args.transcripts),
    )
    if args.memory_only:
        return
    print_table(f"scale: collection, best of {args.repeat}", ("plain pytest",), collection_rows(counts, args.repeat))
    print_table(f"scale: judging, best of {args.repeat}", ("naive",), judge_rows(counts, args.repeat))
    print_table(f"scale: report, best of {args.repeat}", ("json.dump",), report_rows(counts, args.repeat))
    print_table("scale: resume and merge start, one run each", ("json.load",), start_rows(counts[-1]))


if __name__ == "__main__":
    main()
