"""The judge command in a run: each judged case's last answer put to it on a thread, while other cases run on.

A case's flow (:func:`judged_flow`) ends, when the run has a judge command
that applies to its kind, by handing the request to a thread and pausing
(a :class:`~pytest_recall.sessions.pool.Pause`) until the verdict is in: the
event loop keeps every other case's sessions moving meanwhile. The judge runs
outside the agent's sandbox, in a folder of its own, and sees only the
request (:mod:`pytest_recall.sessions.judge_command`), never the agent's memory.

Verdicts are cached per run by (judge command, question, gold, answer, kind):
an answer given twice (by two epochs, say, or a control that answers as the
run did) is judged once. In one process a request already in flight is
waited for, not asked again; across xdist workers on one host the verdicts
are shared through signed files in a folder the controller makes
(:mod:`pytest_recall.sessions.shared_verdicts`, which says why signed), so two
workers asking the very same thing at the very same moment may both pay. A
judge error is never cached: the next asking tries again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from pytest_recall.cases import CaseRun, LlmJudgement
from pytest_recall.scoring import (
    FreeFormJudge,
    answer_to_judge,
    judge_cache_key,
    judge_request,
    judged_by_llm,
    llm_decides,
    majority_reason,
    sample_majority,
)
from pytest_recall.sessions.judge_command import DEFAULT_JUDGE_TIMEOUT_S, Judge, run_judge_command
from pytest_recall.sessions.pool import Flow, Pause
from pytest_recall.sessions.shared_verdicts import SharedVerdicts, VerdictFolder

# How often a case waiting for its verdict looks again; a judge takes seconds, other cases run meanwhile.
VERDICT_POLL_S = 0.05


@dataclass(frozen=True, slots=True)
class LlmJudgeSettings:
    """``--recall-judge-cmd`` and the flags beside it: the command, which kinds it judges, whose score counts.

    ``text`` and ``argv`` are the scoring judge's; with several judges,
    ``panel`` holds them all in the order given and ``name`` the scoring one's.
    """

    text: str | None = None
    argv: tuple[str, ...] = ()
    both: bool = False
    free_form: FreeFormJudge = "deterministic"
    timeout_s: float = DEFAULT_JUDGE_TIMEOUT_S
    name: str = "judge1"
    panel: tuple[Judge, ...] = ()
    # --recall-judge-samples: each judge is asked this many times per answer, its verdict the majority.
    samples: int = 1

    @property
    def others(self) -> tuple[Judge, ...]:
        """The judges whose verdicts are kept beside the score, not the score."""
        return tuple(judge for judge in self.panel if judge.name != self.name)

    @property
    def on(self) -> bool:
        return bool(self.argv)

    def run_mode(self) -> dict[str, Any]:
        """What a record says of its judge, so a resumed run reuses only verdicts of this judge and choice."""
        if not self.on:
            return {}
        mode: dict[str, Any] = {"cmd": self.text, "both": self.both, "free_form": self.free_form}
        if self.panel:
            mode |= {"judges": {judge.name: judge.text for judge in self.panel}, "score_by": self.name}
        if self.samples > 1:
            mode |= {"samples": self.samples, "score_by": self.name}
        return {"llm_judge": mode}


class LlmJudging:
    """One per process: the judge command's threads and the run's cache of its verdicts."""

    def __init__(
        self,
        settings: LlmJudgeSettings,
        *,
        retries: int,
        retry_delay_s: float,
        workers: int,
        shared: SharedVerdicts | None = None,
    ) -> None:
        self.settings = settings
        self.retries = retries
        self.retry_delay_s = retry_delay_s
        self._shared = VerdictFolder(shared) if shared is not None else None
        self._threads = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="recall-judge")
        # Set by close: a judge in flight is killed, with all it started, and no judge keeps the process alive.
        self._stop = threading.Event()
        self._verdicts: dict[str, Future[LlmJudgement]] = {}

    def applies(self, run: CaseRun) -> bool:
        """A run with an answer to judge, of a kind the judge sees; an agent failure has none."""
        if not self.settings.on or answer_to_judge(run) is None:
            return False
        return judged_by_llm(run.case.expected, both=self.settings.both)

    def submit(self, run: CaseRun, other: Judge | None = None) -> Future[LlmJudgement]:
        """The verdict on a run's last answer: from the cache, or asked of the judge on a thread. ``other``
        names a judge beside the scoring one: its verdict never decides. With samples, the majority of that
        many askings, each cached apart."""
        request = judge_request(run.case, run.judged_stdout)
        argv = self.settings.argv if other is None else other.argv
        decides = other is None and llm_decides(run.case.expected, self.settings.free_form)
        if self.settings.samples == 1:
            return self._submit(argv, request, judge_cache_key(argv, request), decides)
        sampled = [
            self._submit(argv, request, judge_cache_key(argv, request, sample), decides)
            for sample in range(self.settings.samples)
        ]
        return _all_of(sampled)

    def _submit(
        self, argv: tuple[str, ...], request: Mapping[str, Any], key: str, decides: bool
    ) -> Future[LlmJudgement]:
        earlier = self._verdicts.get(key)
        if earlier is not None and not (earlier.done() and earlier.result().error):
            return self._after(earlier, argv, request, decides)
        stored = self._stored(key)
        if stored is not None:
            done: Future[LlmJudgement] = Future()
            done.set_result(replace(stored, decides=decides))
            return done
        future = self._threads.submit(self._ask, argv, request, key, decides)
        self._verdicts[key] = future
        return future

    def _after(
        self, earlier: Future[LlmJudgement], argv: tuple[str, ...], request: Mapping[str, Any], decides: bool
    ) -> Future[LlmJudgement]:
        """The verdict of a request already asked: the earlier one, marked cached, once it is in;
        asked again if it turns out a judge error, which is never cached."""
        mine: Future[LlmJudgement] = Future()

        def settle(done: Future[LlmJudgement]) -> None:
            try:
                verdict = done.result()
                if verdict.error is None:
                    mine.set_result(replace(cached_copy(verdict), decides=decides))
                else:
                    mine.set_result(self._ask(argv, request, verdict.key, decides))
            except BaseException as exc:  # the case's flow raises it, as its own error
                mine.set_exception(exc)

        # Run on a thread of the pool, not in the one that finished ``earlier``: asking again takes a while.
        earlier.add_done_callback(lambda done: self._threads.submit(settle, done))
        return mine

    def _ask(self, argv: tuple[str, ...], request: Mapping[str, Any], key: str, decides: bool) -> LlmJudgement:
        call = run_judge_command(
            argv,
            request,
            timeout_s=self.settings.timeout_s,
            retries=self.retries,
            retry_delay_s=self.retry_delay_s,
            stop=self._stop,
        )
        reply = call.reply
        judgement = LlmJudgement(
            score=reply.score,
            reason=reply.reason,
            error=reply.error,
            decides=decides,
            attempts=call.attempts,
            duration_s=round(call.duration_s, 4),
            cost_usd=call.cost_usd,
            tokens_in=call.tokens_in,
            tokens_out=call.tokens_out,
            key=key,
            prompt_sha256=call.prompt_sha256,
        )
        if judgement.error is None:
            self._store(judgement)
        return judgement

    def _stored(self, key: str) -> LlmJudgement | None:
        """A verdict another xdist worker of this run gave, taken as cached."""
        found = self._shared.load(key) if self._shared is not None else None
        if found is None:
            return None
        score, reason, prompt_sha256 = found
        return cached_copy(LlmJudgement(score, reason, key=key, prompt_sha256=prompt_sha256))

    def _store(self, judgement: LlmJudgement) -> None:
        if self._shared is not None:
            self._shared.save(judgement.key, judgement.score, judgement.reason, judgement.prompt_sha256)

    def close(self) -> None:
        self._stop.set()
        self._threads.shutdown(wait=False, cancel_futures=True)
        if self._shared is not None:
            self._shared.close()


def _all_of(sampled: list[Future[LlmJudgement]]) -> Future[LlmJudgement]:
    """One verdict once every sample's is in: their majority (see :func:`majority_of`)."""
    mine: Future[LlmJudgement] = Future()
    left = [len(sampled)]
    lock = threading.Lock()

    def one_done(_: Future[LlmJudgement]) -> None:
        with lock:
            left[0] -= 1
            if left[0]:
                return
        try:
            mine.set_result(majority_of([future.result() for future in sampled]))
        except BaseException as exc:  # the case's flow raises it, as its own error
            mine.set_exception(exc)

    for future in sampled:
        future.add_done_callback(one_done)
    return mine


def majority_of(sampled: list[LlmJudgement]) -> LlmJudgement:
    """A judge's samples of one answer as one verdict: the majority of those that gave one (a tie fails), a judge
    error only when none did; the cost and attempts of them all, cached only when every sample was."""
    scores = tuple(judgement.score for judgement in sampled)
    score, flipped = sample_majority(scores)
    costs = [judgement.cost_usd for judgement in sampled if judgement.cost_usd is not None]
    first = sampled[0]
    return replace(
        first,
        score=score,
        reason=majority_reason(scores),
        error=None if score is not None else first.error,
        attempts=sum(judgement.attempts for judgement in sampled),
        duration_s=round(sum(judgement.duration_s for judgement in sampled), 4),
        cost_usd=round(sum(costs), 6) if costs else None,
        tokens_in=_total(judgement.tokens_in for judgement in sampled),
        tokens_out=_total(judgement.tokens_out for judgement in sampled),
        cached=all(judgement.cached for judgement in sampled),
        prompt_sha256=next((j.prompt_sha256 for j in sampled if j.prompt_sha256), None),
        samples=scores,
        flipped=flipped,
    )


def _total(counts: Iterable[int | None]) -> int | None:
    given = [count for count in counts if count is not None]
    return sum(given) if given else None


def cached_copy(judgement: LlmJudgement) -> LlmJudgement:
    """A verdict given earlier, as this case reports it: the same words, no new cost, no attempt made."""
    return replace(judgement, cached=True, attempts=0, duration_s=0.0, cost_usd=None, tokens_in=None, tokens_out=None)


def judged_flow(flow: Flow, judging: LlmJudging) -> Flow:
    """A case's flow, then its last answer judged by every judge command when they apply; the loop runs on
    meanwhile."""
    run = yield from flow
    if not judging.applies(run):
        return run
    scoring = judging.submit(run)
    others = [(judge.name, judging.submit(run, judge)) for judge in judging.settings.others]
    while not (scoring.done() and all(future.done() for _, future in others)):
        yield Pause(time.monotonic() + VERDICT_POLL_S)
    return replace(
        run, llm_judge=scoring.result(), other_judges=tuple((name, future.result()) for name, future in others)
    )
