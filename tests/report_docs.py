"""Reports made by hand in tests, as the objects the package's readers take.

A test that builds a report's JSON (an old version, a nearly empty one, a few cases for compare) reads it the
way a report file is read, :meth:`RunReport.from_json`; the keys the schema requires and the test leaves out
get neutral values here, so each test still says only what it is about.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_recall.reporting.run_report import RunReport

REQUIRED_DEFAULTS: Mapping[str, Any] = {
    "schema_version": 2,
    "passed": False,
    "score": 0.0,
    "n_passed": 0,
    "n_total": 0,
    "threshold": 0.5,
    "latency_ms_median": 0.0,
    "latency_ms_p95": 0.0,
    "latency_ms_total": 0.0,
    "cases": [],
}


def run_report(document: Mapping[str, Any]) -> RunReport:
    """``document`` read as a report file is, the required keys it lacks filled in."""
    return RunReport.from_json({**REQUIRED_DEFAULTS, **document})
