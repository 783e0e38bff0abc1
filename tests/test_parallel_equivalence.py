"""One suite, run serially, under xdist and with in-process concurrency, reports the same."""

from __future__ import annotations

from typing import Any

import pytest

REMEMBER = "remember 12345.67\nsay noted"
SUITE = {
    "case_01_recalls": ([REMEMBER, "recall"], "closing_balance", ""),
    "case_02_forgets": (["say noted", "recall"], "closing_balance", ""),
    "case_03_shotgun": ([REMEMBER, "say 12345.67 or 23456.78"], "period_debits", ""),
    "case_04_paid": (["cost 0.125\n" + REMEMBER, "cost 0.25\nrecall"], "period_debits", ""),
    "case_05_crashes": ([REMEMBER, "say 12345.67\nerr boom\nexit 3"], "counterparty_total", ""),
    "case_06_times_out": (["sleep 30", "recall"], "counterparty_total", "timeout = 1\n"),
    "case_07_leaves_a_child": ([REMEMBER + "\nleave-child child7", "recall"], "closing_balance", ""),
    "case_08_noisy": ([REMEMBER, "write b'\\x1b[32m| wait\\r12,345.67\\x1b[0m\\n'"], "closing_balance", ""),
}
VOUCHER_CASE = ("case_09_voucher", ["remember AR-2026-0042\nsay noted", "say It was\nrecall"], "AR-2026-0042")


def differences(left: Any, right: Any, path: str = "") -> list[str]:
    """Where two JSON documents differ, as readable paths; lists of records are keyed by id."""
    if isinstance(left, dict) and isinstance(right, dict):
        found = []
        for key in sorted(set(left) | set(right), key=str):
            if key not in left or key not in right:
                found.append(f"{path}/{key}: only in one report")
            else:
                found += differences(left[key], right[key], f"{path}/{key}")
        return found
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        found = []
        for index, (a, b) in enumerate(zip(left, right, strict=True)):
            label = a.get("id", index) if isinstance(a, dict) else index
            found += differences(a, b, f"{path}[{label}]")
        return found
    return [] if left == right else [f"{path}: {left!r} != {right!r}"]


@pytest.mark.slow
def test_serial_xdist_and_concurrent_runs_report_the_same(recall_suite, without_timing):
    for case_id, (steps, category, toml) in SUITE.items():
        recall_suite.add(case_id, steps, category=category, toml=toml or None)
    case_id, steps, answer = VOUCHER_CASE
    recall_suite.add(case_id, steps, answer, kind="voucher", category="largest_debit_voucher")
    # No run-wide timeout: it would hold for every case, over case_06's own (one precedence order).
    options = ("--recall-grace=0.2",)

    reports = {}
    modes = (
        ("-n", "0"),
        ("-n", "2"),
        ("--recall-concurrency=4",),
        # Concurrency inside xdist workers: each worker dealt its share in batches, run at once.
        ("-n", "2", "--recall-concurrency=3"),
        ("-n", "4", "--recall-concurrency=16"),
    )
    for mode in modes:
        result = recall_suite.run(*options, *mode)
        result.assert_outcomes(passed=5, failed=4)
        reports[" ".join(mode)] = without_timing(recall_suite.report())

    serial = reports.pop("-n 0")
    assert [record["id"] for record in serial["cases"]] == sorted([*SUITE, VOUCHER_CASE[0]])
    assert serial["score"] == 0.556
    assert serial["cost_usd_total"] == 0.375
    for mode, report in reports.items():
        assert differences(serial, report) == [], f"{mode} differs from -n 0"
        assert report == serial
