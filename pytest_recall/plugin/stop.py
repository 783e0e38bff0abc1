"""``--recall-stop=decided``: stop starting cases once the score gate's answer is known.

The decision is the controller's (or the plain run's): it alone sees every
case's result. It feeds :class:`~pytest_recall.scoring.sequential.ScoreGate`
the results in the order the cases were drawn (the seeded order collection
put them in, each case's runs together), one mean per case however many
epochs it ran, holding back any case that finished ahead of an earlier one: a case
that fails by timing out finishes late, and feeding results as they finish
would lean towards the quick passes. Once decided it says so in a small file
in a folder every xdist worker on the host was handed, signed under a secret
handed with it (an agent can find the folder in default mode but cannot sign:
a planted decision is ignored with a warning); a worker looks at it
before each case starts, so no new case starts, and those in flight finish
and count. Cases that never started are pytest skips with the decision as
their reason: they have no record, so they count neither in the score nor
as failures or errors.

With ``--recall-control`` the run also asks whether memory helps: each case
(and epoch) paired with its control is one difference, memory minus
control, fed to :class:`~pytest_recall.scoring.sequential.LiftTest` in the
order the pairs were drawn. A pair is drawn when the later of its two items
is (the items are shuffled one by one, so that order is as random as the
cases'), and it counts only once both have finished. No new case starts once
the gate and the lift's sign are both decided. A pair whose other item is
still in flight then finishes and counts; a pair whose other item had not
started never counts, and the pairs drawn after it wait on it (the stop
block's ``n_fed`` says how far the test was fed).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.plugin.xdist_handoff import STOP_FILE_INPUT
from pytest_recall.reporting import CaseSummary
from pytest_recall.scoring import LiftTest, ScoreGate, case_draw_key, score_interval
from pytest_recall.sessions import SignedState, made_folder, new_secret

# The level of the gate's decision and of the interval the report gives; as the run's intervals, 95%.
STOP_ALPHA = 0.05
NOT_RUN_REASON = "recall: not run: the score gate was decided"
STOP_NEEDS_SCORE_GATE = (
    "--recall-stop=decided needs --recall-gate=score: the 'cases' gate fails on any single failed case, "
    "which only running every case can rule out"
)
# items.RUN_NAME and items.CONTROL_NAME, the two items of a case; not imported, since items imports the
# executor, which imports this module.
_MAIN_RUN = "recall"
_CONTROL_RUN = "control"


class StopSignal:
    """Whether the gate is decided, read the same way in the controller, a plain run and a worker.

    A plain run keeps it in memory; under xdist the controller also writes
    it, signed, to ``file``, and a worker (which has no gate) reads that file.
    """

    def __init__(self, file: SignedState | None) -> None:
        self.file = file
        self._reason: str | None = None

    def decide(self, reason: str) -> None:
        self._reason = reason
        if self.file is not None:
            self.file.write({"reason": reason})

    def reason(self) -> str | None:
        """Why no further case may start, or None while the gate is open."""
        if self._reason is None and self.file is not None:
            decided = self.file.read()
            if decided is None:
                return None
            reason = decided.get("reason")
            if not isinstance(reason, str) or not reason.startswith(NOT_RUN_REASON) or len(reason) > 500:
                self.file.ignore(f"{self.file.name} ({self.file.path}) holds no decision of the gate")
                return None
            self._reason = reason
        return self._reason

    def handoff(self) -> dict[str, str] | None:
        if self.file is None:
            return None
        return {"path": str(self.file.path), "secret": self.file.secret}


STOP_KEY = pytest.StashKey[StopSignal]()


def worker_signal(handed: Any) -> StopSignal | None:
    """The controller's signal as a worker was handed it (a path and the secret that signs it); None without."""
    if not isinstance(handed, dict) or not all(isinstance(handed.get(key), str) for key in ("path", "secret")):
        return None
    return StopSignal(_decision_file(Path(handed["path"]), handed["secret"]))


def _decision_file(path: Path, secret: str) -> SignedState:
    return SignedState(path, secret, "the run's stop decision (--recall-stop=decided)")


class StopGate:
    """Controller (or plain run) only: feeds the gate in drawn order and reports the decision."""

    def __init__(
        self,
        config: pytest.Config,
        threshold: float,
        case_scalars: Mapping[str, CaseSummary],
        *,
        under_xdist: bool,
    ) -> None:
        self.config = config
        self.threshold = threshold
        # The recorder's per-case scalars by node id: it takes each record off its report before other plugins look.
        self.case_scalars = case_scalars
        folder: Path | None = None
        if under_xdist:
            folder = made_folder("stop")
            config.add_cleanup(lambda: shutil.rmtree(str(folder), ignore_errors=True))
        self.signal = StopSignal(None if folder is None else _decision_file(folder / "decided", new_secret()))
        self._drawn: dict[str, int] = {}  # a run item's node id -> its case's place in drawn order
        self._waiting: dict[int, int] = {}  # a case's place -> how many of its runs have not finished
        self._runs: dict[int, list[float]] = {}  # a case's place -> the scores of its runs that have
        self._held: dict[int, float] = {}
        self._fed: list[float] = []
        self._gate: ScoreGate | None = None
        self.decided_after: int | None = None
        self.not_run = 0
        self.lift = LiftPairs()

    def _plan(self, nodeids: list[str]) -> None:
        main = [nodeid for nodeid in nodeids if nodeid.rsplit("::", 1)[-1].startswith(_MAIN_RUN)]
        # A case is one draw however many epochs it runs (--recall-epochs-from repeats some, not others): the
        # gate weighs each case's mean once, as the score does, in the order the cases were drawn.
        cases = list(dict.fromkeys(case_draw_key(nodeid) for nodeid in main))  # as collection ordered them
        place = {key: index for index, key in enumerate(cases)}
        self._drawn = {nodeid: place[case_draw_key(nodeid)] for nodeid in main}
        self._waiting = {index: 0 for index in range(len(cases))}
        for index in self._drawn.values():
            self._waiting[index] += 1
        self._gate = ScoreGate(len(cases), self.threshold, STOP_ALPHA) if cases else None
        self.lift.plan(nodeids)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._plan([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self._gate is None:
            self._plan(list(ids))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[STOP_FILE_INPUT] = self.signal.handoff()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped:
            # Not run (this gate, or --recall-max-cost): no score to feed; a gap stalls the gate, never biases it.
            self.not_run += NOT_RUN_REASON in str(report.longrepr)
            if (index := self._drawn.pop(report.nodeid, None)) is not None:
                self._waiting.pop(index, None)  # the case's mean is never whole: it never counts
            self.lift.drop(report.nodeid)
        if report.when != "teardown":
            return
        summary = self.case_scalars.get(report.nodeid)
        score = summary.score if summary is not None else None
        if self.lift.finished(report.nodeid, None if score is None else float(score)):
            self._decide_when_both()
        if report.nodeid not in self._drawn:
            return
        # A run with no score (its agent could not start) counts as 0: failing to answer never helps pass.
        index = self._drawn.pop(report.nodeid)
        self._runs.setdefault(index, []).append(float(score) if score is not None else 0.0)
        if index in self._waiting:
            self._waiting[index] -= 1
            if not self._waiting[index]:
                del self._waiting[index]
                runs = self._runs.pop(index)
                self._held[index] = sum(runs) / len(runs)
                self._feed()

    def _feed(self) -> None:
        while self._gate is not None and len(self._fed) in self._held:
            score = self._held.pop(len(self._fed))
            self._fed.append(min(1.0, max(0.0, score)))
            state = self._gate.add(self._fed[-1])
            if state.decision is not None and self.decided_after is None and state.seen < state.population:
                self.decided_after = state.seen
                self._decide_when_both()

    def _decide_when_both(self) -> None:
        """Stop starting cases once the gate is decided and, with a control, so is the lift's sign."""
        if self.decided_after is None or self.signal.reason() is not None or not self.lift.settled():
            return
        assert self._gate is not None  # decided_after is only set by a gate
        decision = self._gate.state.decision
        self.signal.decide(f"{NOT_RUN_REASON} {decision} {self.threshold:g} after {self.decided_after} cases")

    def block(self) -> dict[str, Any] | None:
        """The report's ``stop`` block, or None when no case was planned."""
        if self._gate is None:
            return None
        # Two-sided at 2 * alpha: each side errs at most alpha, as each side of the decision does, so the
        # interval excludes the threshold when (up to a grid step) the gate decided.
        low, high = score_interval(self._fed, self._gate.population, 2 * STOP_ALPHA)
        return {
            "mode": "decided",
            "decided_after": self.decided_after,
            "n_cases": self._gate.population,
            "n_fed": len(self._fed),
            "n_not_run": self.not_run,
            "decision": self._gate.state.decision if self.decided_after is not None else None,
            "estimate": round(sum(self._fed) / len(self._fed), 4) if self._fed else None,
            "interval": [round(low, 4), round(high, 4)],
            "alpha": STOP_ALPHA,
            "interval_level": 1 - 2 * STOP_ALPHA,
            "lift": self.lift.block(),
        }


def _is_control(nodeid: str) -> bool:
    return nodeid.rsplit("::", 1)[-1].startswith(_CONTROL_RUN)


def _pair_key(nodeid: str) -> str:
    """A case's run and its control share this: the node id with the control's name read as the run's."""
    base, name = nodeid.rsplit("::", 1)
    return f"{base}::{_MAIN_RUN}{name.removeprefix(_CONTROL_RUN)}" if name.startswith(_CONTROL_RUN) else nodeid


class LiftPairs:
    """With ``--recall-control``: each case's run paired with its control, fed to the lift test in drawn order."""

    def __init__(self) -> None:
        self._drawn: dict[str, int] = {}  # pair key -> its place in drawn order
        self._scores: dict[str, dict[bool, float | None]] = {}  # pair key -> {is control: score}
        self._held: dict[int, float] = {}
        self._fed: list[float] = []
        self._test: LiftTest | None = None
        self.decided_after: int | None = None

    def plan(self, nodeids: list[str]) -> None:
        runs = {nodeid for nodeid in nodeids if not _is_control(nodeid)}
        # A pair is drawn where its later item is: the items are shuffled one by one, so pairs are too.
        later: dict[str, int] = {}
        for index, nodeid in enumerate(nodeids):
            if _is_control(nodeid) and _pair_key(nodeid) in runs:
                later[_pair_key(nodeid)] = index
            elif nodeid in runs and nodeid in later:
                later[nodeid] = index
        ordered = sorted(later, key=later.__getitem__)
        self._drawn = {key: place for place, key in enumerate(ordered)}
        self._test = LiftTest(len(ordered), STOP_ALPHA) if ordered else None

    def drop(self, nodeid: str) -> None:
        """A pair with an item not run never counts: a gap after the call is made, a stall before it."""
        self._drawn.pop(_pair_key(nodeid), None)

    def finished(self, nodeid: str, score: float | None) -> bool:
        """Take an item's score; whether the lift was decided by it."""
        key = _pair_key(nodeid)
        if key not in self._drawn:
            return False
        sides = self._scores.setdefault(key, {})
        sides[_is_control(nodeid)] = score
        if len(sides) < 2:
            return False
        memory, control = sides[False], sides[True]
        # A side with no score (it could not start) makes the pair a 0: it neither helps nor harms memory.
        self._held[self._drawn.pop(key)] = 0.0 if memory is None or control is None else memory - control
        del self._scores[key]
        return self._feed()

    def _feed(self) -> bool:
        decided = False
        while self._test is not None and len(self._fed) in self._held:
            self._fed.append(max(-1.0, min(1.0, self._held.pop(len(self._fed)))))
            state = self._test.add(self._fed[-1])
            if state.decision is not None and self.decided_after is None:
                self.decided_after = state.seen
                decided = True
        return decided

    def settled(self) -> bool:
        """True without a control, or once the lift's sign is decided."""
        return self._test is None or self.decided_after is not None

    def block(self) -> dict[str, Any] | None:
        """The stop block's ``lift``: null without a control."""
        if self._test is None:
            return None
        return {
            "decided_after": self.decided_after,
            "decision": self._test.state.decision,
            "n_pairs": self._test.population,
            "n_fed": len(self._fed),
            "estimate": round(sum(self._fed) / len(self._fed), 4) if self._fed else None,
            "alpha": STOP_ALPHA,
        }
