"""The pytest nodes: a case folder collects into items, and an item runs one case.

An item's setup phase runs the agent (so an agent that cannot start is a
pytest *error*), and its call phase judges the output (so a wrong answer is
a *failure*). Either way the user sees a readable verdict, not a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.cases import (
    KIND_FREE,
    Case,
    CaseError,
    CaseOutline,
    CaseRun,
    CaseUnreadable,
    ReadAgain,
    folder_digests,
    load_case_dir,
    load_task_case,
    task_case_ids,
)
from pytest_recall.plugin.config import CONFIG_KEY, RunConfig
from pytest_recall.plugin.executor import EXECUTOR_KEY, CaseExecutor
from pytest_recall.plugin.options import FREE_NEEDS_JUDGE, NO_COMMAND, judge_only_refusal
from pytest_recall.plugin.xdist_handoff import RECORD_PROPERTY, RESUMED_PROPERTY, entry_property, record_property
from pytest_recall.reporting import CaseFailed, CaseRecord, task_entry
from pytest_recall.scoring import DRAW_SEED, Verdict, case_draw_key, draw_key
from pytest_recall.sessions import argv_prompt_problem
from pytest_recall.suites import SUITE_FILE, generated_suite

RUN_NAME = "recall"
CONTROL_NAME = "control"
MALFORMED_PREFIX = "malformed case: "
CHANGED_BEFORE_IT_RAN = "case files changed on disk before it ran"


# The answer kinds the judge knows: the built-in ones and those plugins declare, fixed at configure time.
KNOWN_KINDS_KEY = pytest.StashKey[frozenset[str]]()


def item_name(epoch: int, epochs: int, control: bool) -> str:
    base = CONTROL_NAME if control else RUN_NAME
    return f"{base}[epoch{epoch}]" if epochs > 1 else base


class CaseItem(pytest.Item):
    """One run of one case: an epoch of it, or its no-memory control."""

    def __init__(
        self,
        *,
        outline: CaseOutline,
        loader: Callable[[], Case],
        epoch: int = 1,
        control: bool = False,
        on_disk: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.outline = outline
        # The case is read (or generated) again when it runs, so a suite never sits in memory whole.
        self._loader = loader
        self._case: Case | None = None
        self.epoch = epoch
        self.control = control
        # Digests of the case folder's files at collection; None for cases that live in memory.
        self.on_disk = on_disk
        self.run: CaseRun | None = None
        self.record: CaseRecord | None = None
        self.extra_keyword_matches.add(outline.case_id)
        if outline.category:
            self.extra_keyword_matches.add(outline.category)
        if control:
            self.extra_keyword_matches.add(CONTROL_NAME)

    @property
    def case(self) -> Case:
        """The whole case, read again (or generated) when first wanted, as it is about to start: only the
        cases in flight, or just ahead, are held whole, each until its teardown."""
        if self._case is None:
            self._case = self._loader()
        return self._case

    def _executor(self) -> CaseExecutor:
        return self.config.stash[EXECUTOR_KEY]

    def setup(self) -> None:
        if EXECUTOR_KEY not in self.config.stash:
            pytest.fail(NO_COMMAND, pytrace=False)
        executor = self._executor()
        if self.outline.answer_kind == KIND_FREE and executor.judging is None:
            pytest.fail(FREE_NEEDS_JUDGE.format(case=self.reportinfo()[2]), pytrace=False)
        if self.outline.judge_only and executor.judging is None:
            pytest.fail(judge_only_refusal([(str(self.reportinfo()[2]), self.outline.judge_only)]), pytrace=False)
        resumed = False
        try:
            stored = executor.stored(self)
            resumed = stored is not None
            if stored is None:
                stopped = executor.stops(self)
                if stopped is not None:
                    pytest.skip(stopped)
                self.run = executor.run(self)
        except CaseUnreadable as exc:
            if not exc.harness_short:
                stored = self._changed_before_it_ran(str(exc))
            else:
                # Out of descriptors or memory: the harness could not read it, so the case is an error, not a 0.
                self._publish(replace(self._lost(str(exc)), error=str(exc)))
                pytest.fail(f"{self.outline.case_id}: {exc}", pytrace=False)
        except CaseError as exc:
            # Read again as it starts, it no longer is the case collected: it scores 0, as a case rewritten
            # while it runs does, so changing a case on disk never excuses an agent from it.
            stored = self._changed_before_it_ran(str(exc))
        if stored is not None:
            # Resumed (an earlier run paid for this verdict) or changed: reported as it stands.
            self._publish(stored)
            if resumed:
                self.user_properties.append((RESUMED_PROPERTY, True))
            return
        assert self.run is not None
        if self.run.error:
            self._record_verdict(executor.verdict(self.run, None, None))
            # A setup failure is a pytest error; pytrace=False keeps it to the one line.
            pytest.fail(f"{self.outline.case_id}: {self.run.error}", pytrace=False)

    def runtest(self) -> None:
        if self.run is not None:
            self._record_verdict(self._executor().verdict(self.run, self.path, self.on_disk))
        # Fresh or resumed (an earlier run paid for this verdict, shown as it stands): one failure path.
        record = self.record
        assert record is not None
        if record.fails_item:
            # Compact unless asked for more: a failing 256-case run must stay readable in a CI log.
            compact = self.config.get_verbosity() < 1
            raise CaseFailed(record.failure_text(title=self.outline.case_id, compact=compact))
        if record.error and not record.control:
            # No score, for a reason found after the agent ran (its judge command failed): never a silent pass.
            pytest.fail(f"{self.outline.case_id}: {record.error}", pytrace=False)

    def _changed_before_it_ran(self, why: str) -> CaseRecord:
        changed = replace(self._lost(f"{CHANGED_BEFORE_IT_RAN}: {why}"), score=0.0)
        return replace(changed, error=None, outcome="wrong")

    def _lost(self, why: str) -> CaseRecord:
        """The record of this case when it could not run, named from its outline (no case was read)."""
        executor = self._executor()
        lost = CaseRecord.lost(self.nodeid, why, executor.command, executor.run_mode)
        outline = self.outline
        return replace(lost, id=outline.case_id, suite=outline.suite, category=outline.category)

    def _record_verdict(self, verdict: Verdict) -> CaseRecord:
        assert self.run is not None
        executor = self._executor()
        record = CaseRecord.of_run(
            self.run,
            verdict,
            nodeid=self.nodeid,
            command=executor.command,
            run_mode=executor.run_mode,
            full_prompts=executor.full_prompts,
        )
        self._publish(record)
        # A trap task's grader wants the verdict its own judge gave, whole; it travels beside the record.
        entry = task_entry(self.case, record, verdict)
        if entry is not None:
            self.user_properties.append(entry_property(self.config, entry))
        return record

    def _publish(self, record: CaseRecord) -> CaseRecord:
        self.record = record
        self.user_properties[:] = [p for p in self.user_properties if not str(p[0]).startswith("recall_")]
        self.user_properties.extend(record.junit_properties())
        self.user_properties.append(record_property(self.config, record))
        self._executor().finished(record)
        return record

    def teardown(self) -> None:
        # The record left with the setup or call report; kept here it would cost memory per case all run long.
        # The scalars stay: pytest's JUnit writer reads them off the teardown report.
        self.run = None
        self.record = None
        self._case = None
        self.user_properties[:] = [p for p in self.user_properties if p[0] not in (RECORD_PROPERTY, RESUMED_PROPERTY)]

    def forget(self) -> None:
        """Once the teardown report holds them, the per-case scalars are of no more use to the item."""
        self.user_properties[:] = [p for p in self.user_properties if not str(p[0]).startswith("recall_")]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        label = f"{self.outline.suite}/{self.outline.case_id}"
        if self.control:
            label += " (control)"
        return self.path, None, label


def case_items(
    parent: pytest.Collector,
    outline: CaseOutline,
    loader: Callable[[], Case],
    *,
    on_disk: Mapping[str, str] | None = None,
) -> Iterator[CaseItem]:
    """Every run of a case: one item per epoch, then its control when asked. A case an earlier report found
    stable (--recall-epochs-from) runs once, and with --recall-ci-width each case as often as the plan says, named
    as the first of its epochs."""
    scale_out = parent.config.stash[CONFIG_KEY].scale_out
    epochs, control = scale_out.epochs, scale_out.control
    choice = scale_out.epochs_from
    runs = epochs if choice is None else choice.runs_of((outline.suite, outline.case_id), epochs)
    for epoch in range(1, runs + 1):
        yield CaseItem.from_parent(
            parent, name=item_name(epoch, epochs, False), outline=outline, loader=loader, epoch=epoch, on_disk=on_disk
        )
    if control:
        for epoch in range(1, runs + 1):
            yield CaseItem.from_parent(
                parent,
                name=item_name(epoch, epochs, True),
                outline=outline,
                loader=loader,
                epoch=epoch,
                control=True,
                on_disk=on_disk,
            )


def collect_problem(config: pytest.Config, case: Case) -> str | None:
    """Why a case, good as a case, cannot run as this run is set up (a prompt argv cannot carry), or None."""
    if config.stash[CONFIG_KEY].command.prompt != "argv":
        return None
    problem = argv_prompt_problem(case)
    return None if problem is None else f"{MALFORMED_PREFIX}{case.source}: {problem}"


@contextmanager
def _one_line_case_errors(collector: pytest.Collector) -> Iterator[None]:
    """A malformed case becomes pytest's own one-line collection error, not a traceback."""
    try:
        yield
    except CaseError as exc:
        raise collector.CollectError(f"{MALFORMED_PREFIX}{exc}") from None


class CaseDirectory(pytest.Directory):
    """A case folder: ``stepN.txt`` files, ``answer.json`` and maybe ``case.toml``."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        known_kinds = self.config.stash[KNOWN_KINDS_KEY]
        source = self.nodeid or self.path.name
        on_disk = folder_digests(self.path)
        load = partial(load_case_dir, self.path, suite=self.path.parent.name, source=source, known_kinds=known_kinds)
        with _one_line_case_errors(self):
            case = load()
        yield from _items_of(self, case, ReadAgain.of(load, case, folder=self.path, on_disk=on_disk), on_disk=on_disk)


def _items_of(
    parent: pytest.Collector, case: Case, loader: Callable[[], Case], *, on_disk: Mapping[str, str] | None = None
) -> Iterator[CaseItem]:
    problem = collect_problem(parent.config, case)
    if problem is not None:
        raise parent.CollectError(problem)
    yield from case_items(parent, CaseOutline.of(case), loader, on_disk=on_disk)


class SuiteDirectory(pytest.Directory):
    """A folder with a ``suite.toml``: a generated suite, collected without touching disk.

    Each case is built here once, for its name and checks, and then again
    only when it runs: its node keeps the suite and its index, not its text.
    """

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        source = f"{self.nodeid or self.path.name}/{SUITE_FILE}"
        with _one_line_case_errors(self):
            suite = generated_suite(self.path, source)
            for index in range(suite.count):
                case = suite.case(index)
                yield CaseNode.from_parent(
                    self,
                    name=case.case_id,
                    outline=CaseOutline.of(case),
                    loader=partial(suite.case, index),
                    problem=collect_problem(self.config, case),
                )


class CaseNode(pytest.Collector):
    """A case of a generated suite: what collection needs of it, and how to build it again."""

    def __init__(
        self, *, outline: CaseOutline, loader: Callable[[], Case], problem: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.outline, self.loader, self.problem = outline, loader, problem

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        if self.problem is not None:
            raise self.CollectError(self.problem)
        yield from case_items(self, self.outline, self.loader)


class TrapTaskDirectory(pytest.Directory):
    """A trap-task directory: prompts in ``inputs/<id>/``, answers in ``expected/<id>/``, maybe a judge and grader."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        for folder_name in task_case_ids(self.path):
            yield TrapCaseNode.from_parent(self, name=folder_name)


class TrapCaseNode(pytest.Collector):
    """One case of a trap task, loaded on its own so that a malformed case spoils only itself."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        known_kinds = self.config.stash[KNOWN_KINDS_KEY]
        load = partial(load_task_case, self.path, self.name, source=self.nodeid, known_kinds=known_kinds)
        with _one_line_case_errors(self):
            case = load()
        yield from _items_of(self, case, ReadAgain.of(load, case))


MALFORMED_KEY = pytest.StashKey[int]()


class MalformedCaseCounter:
    """Counts collection errors that are malformed cases, so the rest of the suite still runs.

    A ``CollectReport`` carries no config, so the count lives in an object
    registered per config rather than in a module-level hook.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and str(report.longrepr).startswith(MALFORMED_PREFIX):
            self.config.stash[MALFORMED_KEY] += 1


# The order --recall-scope=suite runs cases in: fixed for every run and machine, and mixed, so that
# a case's notes sit among those of every kind of case before it, not only its neighbours'.
SUITE_ORDER_SEED = DRAW_SEED


def order_seed(run_config: RunConfig) -> str | None:
    """The seed the cases are shuffled by, when they are: --recall-scope=suite mixes them, and --recall-stop=decided
    needs them drawn at random for the gate's guarantee; else None (folder order)."""
    return SUITE_ORDER_SEED if run_config.isolation.scope == "suite" or run_config.scale_out.stop == "decided" else None


def seeded_order(items: Iterable[pytest.Item]) -> list[pytest.Item]:
    """The items sorted by a hash of the seed and their node id: a shuffle no run can vary. A case's runs (its
    epochs and control) stay together, so the gate can weigh each case once, as the score does, without waiting."""
    return sorted(items, key=lambda item: (case_draw_key(item.nodeid), draw_key(item.nodeid)))
