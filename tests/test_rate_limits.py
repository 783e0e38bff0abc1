"""Rate limits as a run-wide state: a 429 stretch pauses new sessions on the host, and no case fails for it."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.agents.adapters.common import rate_limit_in
from pytest_recall.cases.rate_limit import RATE_LIMITED_EXIT
from pytest_recall.sessions.rate_limits import MAX_BACKOFF_S, HostPause
from pytest_recall.testing.fake_model import FakeModelServer, RateLimitStretch

CASES = 24
CONCURRENCY = 8
WORKERS = 2


def test_the_fake_model_answers_429_with_retry_after_for_its_stretch() -> None:
    limit = RateLimitStretch(after=1, seconds=30)
    with FakeModelServer("plain", rate_limit=limit) as server:
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
        request = urllib.request.Request(f"{server.base_url}/v1/chat/completions", data=body)
        with urllib.request.urlopen(request, timeout=10) as first:
            assert first.status == 200
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
    refused.value.close()
    assert refused.value.code == 429 and int(refused.value.headers["Retry-After"]) >= 29
    assert (limit.requests, limit.refused) == (2, 1)


def test_an_adapter_reads_the_clis_words_for_a_rate_limit() -> None:
    assert rate_limit_in("API Error: 429 Too Many Requests, retry-after: 7") == 7.0
    assert rate_limit_in("Error: rate_limit_error") == 0.0
    assert rate_limit_in("Error: model not found (404)") is None


@pytest.mark.slow
def test_a_429_stretch_mid_run_pauses_every_worker_and_every_case_still_scores(
    recall_suite: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stretch starts a third of the way through (each case asks twice) and outlasts a case's own retry.
    limit = RateLimitStretch(after=CASES * 2 // 3, seconds=3.0)
    for number in range(CASES):
        recall_suite.add(f"case_{number:02d}", [f"remember {number}.25", "recall"], f"{number}.25")
    with FakeModelServer("plain", rate_limit=limit) as server:
        monkeypatch.setenv("RECALL_TEST_MODEL_URL", server.base_url)
        result = recall_suite.run(
            "-n", str(WORKERS), f"--recall-concurrency={CONCURRENCY}", command=recall_suite.agent("model_caller")
        )
    result.assert_outcomes(passed=CASES)
    report = recall_suite.report()
    assert report["n_scored"] == CASES and report["n_errors"] == 0
    assert all(record["score"] == 1.0 for record in report["cases"])
    limits = report["rate_limits"]
    assert limits["n_refused"] == limit.refused > 0 and limits["paused_s"] >= 3.0
    # Only the sessions already in flight when the stretch began meet it: the pause holds every new start
    # on both workers past its Retry-After, so no case comes back while it lasts.
    assert limit.refused <= WORKERS * CONCURRENCY
    result.stdout.fnmatch_lines(["*rate limits: the model refused * new sessions on this host were paused*"])
    assert RATE_LIMITED_EXIT == 75


def test_a_claimed_retry_after_is_held_to_the_backoff_cap(tmp_path: Path) -> None:
    # The wait comes from what the step's agent printed: a year of it must not hold every session of the run.
    until = HostPause(tmp_path).extend(retry_after=365 * 24 * 3600, refusals=1)
    assert until - time.time() <= MAX_BACKOFF_S * 1.5
    assert HostPause(tmp_path).state()["paused_s"] <= MAX_BACKOFF_S * 1.5
