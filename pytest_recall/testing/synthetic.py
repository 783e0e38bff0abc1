"""Reports of 100,000 synthetic cases, made as they are read, for scale tests and benchmarks.

Running 100,000 sessions to get a 100,000-case report takes an hour on a
small machine; what the HTML page, merge and resume are measured on is only
the records. These records have the shape a run writes (two steps, prompts,
output tails for the failures, a memory listing) and a fixed mix of
outcomes: mostly passes, every 37th a failure, every 211th an agent error.
They are made when read, so a report of any size costs no memory to hold.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pytest_recall.reporting import LazyRecords, RunReport, build_report, summary_of_row
from pytest_recall.scoring import scored_a_pass

CATEGORIES = ("closing_balance", "vendor_names", "due_dates", "largest_payment")
COMMAND = "recall-notebook"


def synthetic_record(index: int, *, steps: bool = True) -> dict[str, Any]:
    """Case ``index``'s record; without ``steps``, only the scalars the report's verdict reads."""
    answer = f"{1000 + index % 9000}.{index % 100:02d}"
    score = None if index % 211 == 0 else (0.0 if index % 37 == 0 else 1.0)
    error = "agent exited 1 in step 2" if score is None else None
    case_id = f"ledger_{index:06d}"
    record: dict[str, Any] = {
        "id": case_id,
        "suite": "ledger",
        "nodeid": f"cases/ledger/{case_id}::recall",
        "category": CATEGORIES[index % len(CATEGORIES)],
        "answer_kind": "money",
        "expected": answer,
        "score": score,
        "reason": "matched" if scored_a_pass(score) else (error or "reported 0.00"),
        "reported": answer if scored_a_pass(score) else ("0.00" if score == 0.0 else None),
        "error": error,
        "outcome": "correct" if scored_a_pass(score) else ("agent_failed" if error else "wrong"),
        "epoch": 1,
        "control": False,
        "duration_s": round(0.5 + (index * 7919 % 1000) / 400, 4),
        "cost_usd": None,
        "memory_bytes": 120 + index % 50,
        "content_hash": f"{index:064x}",
        "command": COMMAND,
    }
    if steps:
        failed = not scored_a_pass(score)
        record["steps"] = [
            {
                "step": number,
                "exit_code": 1 if error and number == 2 else 0,
                "signal": None,
                "timed_out": False,
                "duration_s": round(record["duration_s"] / 2, 4),
                "prompt": prompt,
                "stdout": ("I do not remember.\n" if number == 2 else "Noted.\n") if failed else "",
                "stderr": "",
                "truncated": False,
                "killed_leftovers": 0,
                "tokens_in": None,
                "tokens_out": None,
                "memory": [{"path": "notes.txt", "size": record["memory_bytes"], "sha256": f"{index:064x}"}]
                if number == 1
                else None,
                "memory_files": 1 if number == 1 else None,
                "memory_bytes": record["memory_bytes"] if number == 1 else None,
            }
            for number, prompt in ((1, f"Remember this value: {answer}"), (2, "What was the value?"))
        ]
    return record


class SyntheticCases(LazyRecords[dict[str, Any]]):
    """``count`` synthetic records in report order, from case ``start`` on, each made when it is read."""

    def __init__(self, count: int, start: int = 0) -> None:
        self.size = count
        self.start = start

    def __len__(self) -> int:
        return self.size

    def row(self, index: int) -> dict[str, Any]:
        return synthetic_record(self.start + index)


def synthetic_report(count: int, *, threshold: float = 0.5) -> RunReport:
    """A report as the plugin builds it: statistics from the scalars, the cases streamed when read."""
    scalars = [summary_of_row(synthetic_record(i, steps=False)) for i in range(count)]
    report = build_report(scalars, threshold=threshold, command=COMMAND)
    del scalars
    return replace(report, cases=SyntheticCases(count))
