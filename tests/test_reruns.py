"""pytest-rerunfailures reruns a case item by running the case again (issue 14, item 15)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pytest_rerunfailures")
# tests/conftest.py keeps the plugin out of inner runs (UNUSED_PLUGINS): these turn it back on with -p.


@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_a_rerun_of_a_flaky_case_runs_its_agent_again_and_the_report_keeps_the_last_attempt(
    recall_suite: Any, concurrency: str
) -> None:
    state = recall_suite.pytester.path / "sessions.txt"
    recall_suite.add("flaky", ["flaky 1.00", "flaky 12345.67"], "12345.67")
    recall_suite.add("steady", ["steady 1.00", "steady 12345.67"], "12345.67")
    result = recall_suite.run(
        "-p",
        "rerunfailures",
        "--reruns=1",
        f"--recall-concurrency={concurrency}",
        command=recall_suite.agent("flaky", str(state), "2"),
    )
    assert result.parseoutcomes() == {"passed": 2, "rerun": 1}
    assert len(state.read_text().splitlines()) == 4  # two sessions per attempt, two attempts
    report = recall_suite.report()
    assert (report["n_total"], report["n_passed"], report["passed"]) == (2, 2, True)
    assert recall_suite.records()["flaky"]["score"] == 1.0
