"""``--recall-retries``: a case whose agent failed runs again from step 1, in a fresh scope, and says how often."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.cases.runs import CaseRun, SessionResult
from pytest_recall.sessions.pool import CasePool, Flow, Pause
from pytest_recall.sessions.session import SessionSpec

ANSWER = "12345.67"
# Fails the first time it sees a case's step 1 (as a rate limit would), keyed by the prompt, in
# $FLAKY_MARKER_DIR outside every scope; afterwards a plain memory agent. Each run is logged.
FLAKY = """
import hashlib, json, os, sys
prompt = sys.argv[-1]
scope = os.environ["RECALL_SCOPE_DIR"]
markers = os.environ["FLAKY_MARKER_DIR"]
with open(os.path.join(markers, "runs.jsonl"), "a") as log:
    log.write(json.dumps({"prompt": prompt, "scope": scope, "seen": sorted(os.listdir(scope))}) + "\\n")
memory = os.path.join(scope, "memory.txt")
if prompt.startswith("remember"):
    marker = os.path.join(markers, hashlib.sha256(prompt.encode()).hexdigest())
    if not os.path.exists(marker):
        open(marker, "w").close()
        open(memory, "w").write("99999.99")  # what a failed attempt leaves must not reach the retry
        print("Error: 429 Too Many Requests (overloaded)", file=sys.stderr)
        raise SystemExit(1)
    open(memory, "w").write(prompt.split()[-1])
    print("noted")
else:
    print(open(memory).read() if os.path.exists(memory) else "UNKNOWN")
"""


@pytest.fixture
def flaky(recall_suite: Any, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Any:
    script = recall_suite.pytester.path / "flaky.py"
    script.write_text(FLAKY)
    markers = tmp_path_factory.mktemp("markers")
    monkeypatch.setenv("FLAKY_MARKER_DIR", str(markers))
    for case_id in ("case_a", "case_b"):
        recall_suite.add(case_id, [f"remember for {case_id}: {ANSWER}", "what was it?"], ANSWER)

    def run(*args: str) -> tuple[pytest.RunResult, list[dict[str, Any]]]:
        result = recall_suite.run(*args, command=shlex.join([sys.executable, str(script)]))
        runs = [json.loads(line) for line in (markers / "runs.jsonl").read_text().splitlines()]
        return result, runs

    return run


@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_a_flaky_agent_passes_on_its_second_attempt_in_a_fresh_scope(
    flaky: Any, recall_suite: Any, concurrency: str
) -> None:
    result, runs = flaky("--recall-retries=1", "--recall-retry-delay=0.2", f"--recall-concurrency={concurrency}")
    result.assert_outcomes(passed=2)
    records = recall_suite.records()
    assert [(records[c]["score"], records[c]["attempts"]) for c in ("case_a", "case_b")] == [(1.0, 2), (1.0, 2)]
    assert recall_suite.report()["score"] == 1.0
    # Each case ran step 1 twice, each time in a new, empty scope: nothing of the failed attempt reached the retry.
    first_steps = [run for run in runs if run["prompt"].startswith("remember")]
    assert len(first_steps) == 4 and all(run["seen"] == [] for run in first_steps)
    assert len({run["scope"] for run in first_steps}) == 4


def test_without_retries_the_flaky_agent_scores_zero_with_one_attempt(flaky: Any, recall_suite: Any) -> None:
    result, _ = flaky()
    result.assert_outcomes(failed=2)
    records = recall_suite.records()
    assert [(records[c]["score"], records[c]["attempts"]) for c in ("case_a", "case_b")] == [(0.0, 1), (0.0, 1)]


def test_a_case_that_keeps_failing_stops_after_its_retries(recall_suite: Any) -> None:
    recall_suite.add("case_a", ["exit 3", "exit 3"], ANSWER)
    result = recall_suite.run("--recall-retries=2", "--recall-retry-delay=0.1")
    result.assert_outcomes(failed=1)
    assert recall_suite.records()["case_a"]["attempts"] == 3


def test_a_wrong_answer_is_not_retried(recall_suite: Any) -> None:
    recall_suite.add("case_a", ["say noted", "say 99999.99"], ANSWER)
    result = recall_suite.run("--recall-retries=2", "--recall-retry-delay=0.1")
    result.assert_outcomes(failed=1)
    assert recall_suite.records()["case_a"]["attempts"] == 1


def test_bad_retry_values_are_one_usage_line(recall_suite: Any) -> None:
    recall_suite.add("case_a", ["say noted", f"say {ANSWER}"], ANSWER)
    result = recall_suite.run("--recall-retries=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --recall-retries must be a whole number of at least 0, not '-1'"])


def session(tmp_path: Path, code: str) -> SessionSpec:
    return SessionSpec(
        argv=(sys.executable, "-c", code), cwd=tmp_path, env={}, timeout_s=30.0, grace_s=1.0, max_output_bytes=65536
    )


def test_a_paused_case_does_not_hold_up_the_others_in_the_pool(tmp_path: Path) -> None:
    def pausing() -> Flow:
        yield Pause(time.monotonic() + 600.0)
        raise AssertionError("resumed before its time")

    def running() -> Flow:
        result: SessionResult = yield session(tmp_path, "print('done')")
        assert result.exit_code == 0
        return CaseRun(case=None, steps=())  # type: ignore[arg-type]

    pool = CasePool()
    try:
        pool.submit("paused", pausing())
        pool.submit("running", running())
        pool.wait("running")
        assert pool.paused_until("paused") is not None
    finally:
        pool.close()
