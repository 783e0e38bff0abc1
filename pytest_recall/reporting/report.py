"""Case records, the run report, and where they are written.

Per-case data travels from the process that ran the case to the one that
reports it as plain scalars in ``report.user_properties`` (the full record
as one JSON string), exactly as pytest's own JUnit writer gathers results:
that is what crosses xdist intact. The :class:`Recorder` runs only on the
controller; it folds the records at session end and writes the report.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from pytest_recall.reporting.schema import report_problem, without_non_finite
from pytest_recall.scoring.grader import aggregate
from pytest_recall.scoring.stats import summarize
from pytest_recall.sessions.case_flow import CaseRun

SCHEMA_VERSION = 1
RECORD_PROPERTY = "recall_record"
# Transcripts in records keep this many characters from the end of each stream.
RECORD_TEXT_CHARS = 4000
# Scalar properties every case's JUnit testcase carries, from its record.
JUNIT_CASE_FIELDS = ("score", "category", "reason", "reported", "duration_s", "cost_usd", "epoch", "control")
# A node id's "[epochN]" suffix: how a lost record still says which epoch it was.
_EPOCH_IN_NODEID = re.compile(r"\[epoch(\d+)\]$")


def _tail(text: str, limit: int = RECORD_TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[-limit:]


def case_record(run: CaseRun, verdict: Mapping[str, Any] | None, *, nodeid: str, command: str) -> dict[str, Any]:
    """The one record of a case: what the report, the log and the JUnit file say of it."""
    case = run.case
    verdict = verdict or {}
    costs = [step.cost_usd for step in run.steps if step.cost_usd is not None]
    return {
        "id": case.case_id,
        "suite": case.suite,
        "nodeid": nodeid,
        "category": case.category,
        "answer_kind": case.answer_kind,
        "expected": case.expected.get("answer"),
        "score": None if run.error else verdict.get("score"),
        "reason": run.error if run.error else verdict.get("reason"),
        "reported": None if run.error else verdict.get("reported"),
        "n_candidates": verdict.get("n_candidates"),
        "error": run.error,
        "epoch": run.epoch,
        "control": run.control,
        "duration_s": round(run.duration_s, 4),
        "cost_usd": round(sum(costs), 6) if costs else None,
        "content_hash": case.content_hash,
        "command": command,
        "steps": [
            {
                "step": step.number,
                "exit_code": step.result.exit_code,
                "signal": step.result.signal,
                "timed_out": step.result.timed_out,
                "duration_s": round(step.result.duration_s, 4),
                "prompt": step.prompt,
                "stdout": _tail(step.stdout),
                "stderr": _tail(step.stderr),
                "stdout_bytes": step.result.stdout_bytes,
                "stderr_bytes": step.result.stderr_bytes,
                "truncated": step.result.truncated,
                "killed_leftovers": step.result.killed_leftovers,
                "cost_usd": step.cost_usd,
            }
            for step in run.steps
        ],
    }


def record_properties(record: Mapping[str, Any]) -> list[tuple[str, object]]:
    """Scalars for ``user_properties``: the JUnit-visible fields, then the whole record."""
    scalars: list[tuple[str, object]] = [(f"recall_{name}", record.get(name)) for name in JUNIT_CASE_FIELDS]
    scalars.append((RECORD_PROPERTY, json.dumps(record, ensure_ascii=False)))
    return scalars


def lost_record(nodeid: str, reason: str, command: str) -> dict[str, Any]:
    """A case whose process vanished (a crashed worker): an error, never a silent zero."""
    case_part = nodeid.split("::")[0].rstrip("/")
    return {
        "id": case_part.rsplit("/", 1)[-1],
        "suite": None,
        "nodeid": nodeid,
        "category": None,
        "answer_kind": None,
        "expected": None,
        "score": None,
        "reason": reason,
        "reported": None,
        "n_candidates": None,
        "error": reason,
        "epoch": int(match.group(1)) if (match := _EPOCH_IN_NODEID.search(nodeid)) else 1,
        "control": "::control" in nodeid,
        "duration_s": None,
        "cost_usd": None,
        "content_hash": None,
        "command": command,
        "steps": [],
    }


def sort_records(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """A stable order that does not depend on which worker finished first."""
    return sorted(records, key=lambda r: (str(r.get("nodeid") or ""), int(r.get("epoch") or 1)))


def build_report(
    records: Sequence[Mapping[str, Any]],
    *,
    threshold: float,
    command: str | None,
    interrupted: bool = False,
) -> dict[str, Any]:
    """The whole report document: the verdict first, then how far to trust it, the case records last."""
    ordered = sort_records(records)
    report: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
    report.update(aggregate(ordered, threshold))
    report.update(summarize(ordered))
    report["command"] = command
    report["interrupted"] = interrupted
    report["cases"] = list(ordered)
    return report


def write_json_atomic(path: Path, document: Any) -> None:
    """Write, fsync and rename, so a reader never sees half a file.

    The document is streamed into the file rather than built as one string
    first: for 10,000 cases that string is some 50 MB held twice over.
    """

    def fill(handle: TextIO) -> None:
        try:
            json.dump(document, handle, indent=2, ensure_ascii=False, allow_nan=False)
        except ValueError:
            # A NaN somewhere (an agent's cost, a judge's score): JSON has none, so it is written as null.
            handle.seek(0)
            handle.truncate()
            json.dump(without_non_finite(document), handle, indent=2, ensure_ascii=False, allow_nan=False)
        handle.write("\n")

    _write_atomic(path, fill)


def write_text_atomic(path: Path, text: str) -> None:
    """Write, fsync and rename: the JSON report and the HTML page alike are whole or absent."""
    _write_atomic(path, lambda handle: handle.write(text))


def _write_atomic(path: Path, fill: Callable[[TextIO], object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            fill(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def load_report(path: Path) -> dict[str, Any]:
    """A report file, checked against the published schema; ValueError says in one line why not."""
    with open(path, encoding="utf-8") as handle:
        try:
            data = json.load(handle)
        except ValueError as exc:
            raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or "cases" not in data:
        raise ValueError(f"{path}: not a pytest-recall report (no 'cases' list)")
    problem = report_problem(data)
    if problem is not None:
        raise ValueError(f"{path}: not a pytest-recall report: {problem}")
    return data


def format_summary(report: Mapping[str, Any]) -> list[str]:
    """The terminal table: verdict, categories, latency and cost, readable at a glance."""
    verdict = "PASSED" if report["passed"] else "FAILED"
    lines = [
        f"recall: {verdict}  score {report['score']:.3f}  (threshold {report['threshold']})  "
        f"{report['n_passed']}/{report['n_total']} cases passed"
        + (f", {report['n_errors']} errors" if report.get("n_errors") else "")
        + (", interrupted" if report.get("interrupted") else ""),
    ]
    lines += _trust_lines(report)
    categories = report.get("by_category") or {}
    intervals = report.get("by_category_confidence") or {}
    if categories:
        width = max(len(name) for name in categories)
        for name in sorted(categories):
            score = categories[name]
            bar = "#" * round(score * 20)
            line = f"  {name:<{width}}  {score:5.3f}  |{bar:<20}|  {_interval_brackets(intervals.get(name))}"
            lines.append(line.rstrip())
    cost = report.get("cost_usd_total")
    lines.append(
        f"  latency per case: median {report['latency_ms_median'] / 1000:.2f}s, "
        f"p95 {report['latency_ms_p95'] / 1000:.2f}s, total {report['latency_ms_total'] / 1000:.2f}s;  "
        f"cost: {'not reported' if cost is None else f'${cost:.4f}'}"
    )
    return lines


def error_lines(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each distinct reason cases could not run, once, with how many it stopped.

    An agent that cannot start fails the same way in every case; one line
    says so better than a screenful of copies.
    """
    counts: dict[str, int] = {}
    for record in records:
        if record.get("error"):
            counts[str(record["error"])] = counts.get(str(record["error"]), 0) + 1
    return [
        f"  {count} {'case' if count == 1 else 'cases'} could not run: {reason}"
        for reason, count in sorted(counts.items(), key=lambda item: -item[1])
    ]


def _interval_brackets(interval: Mapping[str, Any] | None) -> str:
    return f"[{interval['low']:.3f}, {interval['high']:.3f}]" if interval else ""


def _trust_lines(report: Mapping[str, Any]) -> list[str]:
    """The interval, the repeat figures and the control, when the report has them (old ones may not)."""
    lines = []
    interval = report.get("confidence")
    if interval:
        lines.append(
            f"  {round(100 * interval['level'])}% interval {_interval_brackets(interval)} "
            f"({interval['method']}, {interval['n']} cases)"
        )
    epochs = report.get("epochs") or 1
    if epochs > 1 and report.get("pass_at_k") is not None:
        lines.append(
            f"  epochs {epochs}: pass@{epochs} {report['pass_at_k']:.3f} (solved in any epoch), "
            f"pass^{epochs} {report['pass_all_k']:.3f} (solved in every epoch)"
        )
    control = report.get("control")
    if control:
        score = control.get("score")
        line = f"  control (no memory): score {'-' if score is None else f'{score:.3f}'}"
        if control.get("lift") is not None:
            low, high = control["lift_low"], control["lift_high"]
            line += f"; memory lift {control['lift']:+.3f} [{low:+.3f}, {high:+.3f}]"
            if control.get("lift_significant"):
                line += f", p {control['lift_test']['p_value']:.3f}"
            elif low <= 0 <= high:
                line += "  NOT SIGNIFICANT: the interval includes 0"
            else:
                line += f"  NOT SIGNIFICANT: p {control['lift_test']['p_value']:.3f}"
        lines.append(line)
    return lines
