"""Rate limits as a run-wide state: a 429 stretch pauses new sessions on the host, and no case fails for it."""

from __future__ import annotations

import json
import shlex
import sys
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
RATE_CLAIMER = shlex.join([sys.executable, str(Path(__file__).resolve().parent / "hostile" / "rate_claimer.py")])


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
    secret = "ab" * 32
    until = HostPause(tmp_path, secret).extend(retry_after=365 * 24 * 3600, refusals=1)
    assert until is not None and until - time.time() <= MAX_BACKOFF_S * 1.5
    assert HostPause(tmp_path, secret).state()["paused_s"] <= MAX_BACKOFF_S * 1.5


@pytest.mark.slow
def test_a_case_refused_past_its_budget_is_rate_limited_scored_0_and_named_apart_from_forgetting(
    recall_suite: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first case's two requests are answered; then the quota is gone for longer than the run, though
    # each 429 names a one-second Retry-After, as a provider's per-minute window does.
    limit = RateLimitStretch(after=2, seconds=600, retry_after=1)
    for number in range(2):
        recall_suite.add(f"case_{number:02d}", [f"remember {number}.25", "recall"], f"{number}.25")
    junit = recall_suite.pytester.path / "junit.xml"
    html = recall_suite.pytester.path / "report.html"
    with FakeModelServer("plain", rate_limit=limit) as server:
        monkeypatch.setenv("RECALL_TEST_MODEL_URL", server.base_url)
        result = recall_suite.run(
            "--recall-rate-limit-attempts=2",
            f"--junitxml={junit}",
            f"--recall-html={html}",
            command=recall_suite.agent("model_caller"),
        )
    result.assert_outcomes(passed=1, failed=1)
    report = recall_suite.report()
    limited = recall_suite.records()["case_01"]
    assert (limited["outcome"], limited["score"], limited["error"]) == ("rate_limited", 0.0, None)
    assert limited["attempts"] == 2
    assert "rate limit" in limited["reason"] and "not forgetting" in limited["reason"]
    # Scored 0 like a wrong answer: in the score and n_scored, never an error that would leave the score.
    assert (report["score"], report["n_scored"], report["n_errors"]) == (0.5, 2, 0)
    assert report["by_outcome"]["rate_limited"] == 1 and report["by_outcome"]["agent_failed"] == 0
    assert report["rate_limits"]["n_refused"] == limit.refused == 2
    assert (report["rate_limits"]["n_rate_limited"], report["rate_limits"]["attempts"]) == (1, 2)
    said = "1 case rate limited past the retry budget (2 attempts): scored 0, not forgetting"
    result.stdout.fnmatch_lines(["*rate limits: the model refused 2 sessions;*", f"*{said}*"])
    # Not among the agent failures, which say to fix the agent.
    assert "agent failures" not in result.stdout.str()
    assert said in junit.read_text() and said in html.read_text()

    # Resumed once the quota is back, the rate-limited case runs again (its two requests) and the measured one stays.
    saved = recall_suite.pytester.path / "first.json"
    saved.write_bytes(recall_suite.report_path.read_bytes())
    counter = RateLimitStretch(after=10**6, seconds=1)
    with FakeModelServer("plain", rate_limit=counter) as server:
        monkeypatch.setenv("RECALL_TEST_MODEL_URL", server.base_url)
        resumed = recall_suite.run(f"--recall-resume={saved}", command=recall_suite.agent("model_caller"))
    resumed.assert_outcomes(passed=2)
    assert counter.requests == 2
    assert recall_suite.records()["case_01"]["outcome"] == "correct"


@pytest.mark.slow
def test_an_agent_claiming_a_rate_limit_instead_of_answering_scores_no_better_than_a_wrong_answer(
    recall_suite: Any,
) -> None:
    recall_suite.add("case_a", ["remember 12345.67", "recall"])
    recall_suite.add("case_b", ["remember 12345.67", "recall, or claim a rate limit"])
    result = recall_suite.run("--recall-rate-limit-attempts=1", command=RATE_CLAIMER)
    result.assert_outcomes(passed=1, failed=1)
    report = recall_suite.report()
    claimed = recall_suite.records()["case_b"]
    # It printed the right answer before its claim: nothing a refused step printed is judged.
    assert (claimed["outcome"], claimed["score"], claimed["error"]) == ("rate_limited", 0.0, None)
    assert (report["score"], report["n_scored"], report["n_errors"]) == (0.5, 2, 0)
    # Its claimed Retry-After of a year paused the host for the backoff's cap at most.
    assert 0 < report["rate_limits"]["paused_s"] <= MAX_BACKOFF_S * 1.5
    result.stdout.fnmatch_lines(["*1 case rate limited past the retry budget (1 attempt): scored 0, not forgetting*"])
