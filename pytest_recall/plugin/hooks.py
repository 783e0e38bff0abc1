"""pytest hooks for pytest-recall, and nothing else."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.agents.adapters.advice import bare_cli_advice, command_line_trap
from pytest_recall.cases.answer_forms import BUILTIN_KINDS
from pytest_recall.cases.model import is_case_dir, is_symlink_loop, looks_like_case_dir
from pytest_recall.cases.traptask import is_trap_task_dir
from pytest_recall.plugin import hookspecs
from pytest_recall.plugin.executor import EXECUTOR_KEY, CaseExecutor, run_settings_for
from pytest_recall.plugin.items import (
    COLLECTION_KEY,
    MALFORMED_KEY,
    CaseDirectory,
    CaseItem,
    CollectionOptions,
    MalformedCaseCounter,
    SuiteDirectory,
    TrapTaskDirectory,
    seeded_order,
)
from pytest_recall.plugin.judge_fixture import RecallJudge
from pytest_recall.plugin.options import NO_COMMAND, OPTIONS, SHARD_INPUT, Settings, add_options, check_command_starts
from pytest_recall.plugin.preflight import preflight
from pytest_recall.plugin.progress import register_progress
from pytest_recall.plugin.recorder import Recorder
from pytest_recall.plugin.runlog import RESUME_KEY, load_records, open_run_log
from pytest_recall.plugin.sandbox_setup import check_sandbox
from pytest_recall.plugin.signals import TerminationSignals
from pytest_recall.plugin.task_graders import TaskGraders
from pytest_recall.reporting.shard import durations_by_nodeid, shard_members
from pytest_recall.reporting.summary import shared_home_warning
from pytest_recall.scoring.judge import judge_answer
from pytest_recall.sessions.cgroup import tracking_line
from pytest_recall.suites.bundled import wheel_nodeid
from pytest_recall.suites.suite_file import is_suite_dir

SETTINGS_KEY = pytest.StashKey[Settings]()
PREFLIGHT_NOTE_KEY = pytest.StashKey[str]()
CONTROLLER_PLUGINS_KEY = pytest.StashKey[list[object]]()
# The resumable records the controller read, handed to each xdist worker.
RESUME_INPUT = "recall_resume_index"
TRANSCRIPTS_INPUT = "recall_transcripts"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """Before pytest parses the command line: a misspelt flag or a split --recall-cmd is one line with the fix."""
    trap = command_line_trap(args, tuple(option.flag for option in OPTIONS))
    if trap is not None:
        raise pytest.UsageError(trap)


def pytest_configure(config: pytest.Config) -> None:
    settings = Settings.from_config(config)
    config.stash[SETTINGS_KEY] = settings
    config.stash[MALFORMED_KEY] = 0
    config.pluginmanager.register(MalformedCaseCounter(config), "recall-malformed-cases")
    declared = config.hook.pytest_recall_answer_kinds(config=config)
    kinds = BUILTIN_KINDS.union(kind for kinds in declared for kind in kinds)
    config.stash[COLLECTION_KEY] = CollectionOptions(
        known_kinds=frozenset(kinds), epochs=settings.epochs, control=settings.control, prompt_mode=settings.prompt_mode
    )
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None and TRANSCRIPTS_INPUT in worker_input:
        # What a record keeps is the controller's call: a remote worker sees none of its ini or environment.
        settings = dataclasses.replace(settings, transcripts=worker_input[TRANSCRIPTS_INPUT])
        config.stash[SETTINGS_KEY] = settings
    if worker_input is None:
        # Decided once, on the controller; workers take the outcome from workerinput.
        if settings.argv:
            check_command_starts(settings.argv)
        check_sandbox(config, settings)
        recorder = Recorder(config, settings)
        config.stash[CONTROLLER_PLUGINS_KEY] = [recorder, TaskGraders(config)]
        if config.pluginmanager.hasplugin("xdist"):
            config.stash[CONTROLLER_PLUGINS_KEY].append(WorkerHandoff(config))
        for plugin in config.stash[CONTROLLER_PLUGINS_KEY]:
            config.pluginmanager.register(plugin)
        register_progress(config, recorder)
    resume_handoff = worker_input.get(RESUME_INPUT) if worker_input is not None else None
    open_run_log(config, settings.log_path, settings.resume_path, resume_handoff)
    if settings.argv:
        termination = TerminationSignals(forward_to_children=lambda: config.pluginmanager.has_plugin("dsession"))
        termination.install()
        config.pluginmanager.register(termination, "recall-termination-signals")


def pytest_unconfigure(config: pytest.Config) -> None:
    for plugin in config.stash.get(CONTROLLER_PLUGINS_KEY, []):
        config.pluginmanager.unregister(plugin)
    config.stash[CONTROLLER_PLUGINS_KEY] = []


class WorkerHandoff:
    """Controller only, under xdist: what the controller read once goes to every worker.

    Each worker would otherwise read the resume file again and probe bwrap
    and the agent command again, for the same answer.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: Any) -> None:
        index = self.config.stash.get(RESUME_KEY, None)
        same_host = bool(getattr(getattr(node.gateway, "spec", None), "popen", False))
        node.workerinput[RESUME_INPUT] = index.handoff(same_host=same_host) if index is not None else None
        node.workerinput[SHARD_INPUT] = self.config.stash[SETTINGS_KEY].shard
        node.workerinput[TRANSCRIPTS_INPUT] = self.config.stash[SETTINGS_KEY].transcripts
        if self._batch() is not None:
            from pytest_recall.plugin.xdist_batches import BATCH_INPUT

            node.workerinput[BATCH_INPUT] = self._batch()

    def _batch(self) -> int | None:
        """The batch each worker is dealt: --recall-concurrency, when above 1 and xdist balances load."""
        concurrency = self.config.stash[SETTINGS_KEY].concurrency
        return concurrency if concurrency > 1 and self.config.getoption("dist", None) == "load" else None

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        batch = self._batch()
        if batch is None:
            return None
        from pytest_recall.plugin.xdist_batches import BatchScheduling

        return BatchScheduling(config, log, batch)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """``--recall-preflight``: before the header, collection and xdist's workers (its hook is trylast)."""
    note = preflight(session.config, session.config.stash[SETTINGS_KEY])
    if note is not None:
        session.config.stash[PREFLIGHT_NOTE_KEY] = note


def pytest_report_header(config: pytest.Config) -> list[str]:
    settings = config.stash[SETTINGS_KEY]
    lines: list[str] = []
    if PREFLIGHT_NOTE_KEY in config.stash:
        lines.append(f"recall: {config.stash[PREFLIGHT_NOTE_KEY]}")
    if settings.resume_path is not None:
        lines.extend(f"recall: {refused}" for refused in config.stash[RESUME_KEY].refused)
        found = len(config.stash[RESUME_KEY])
        where = settings.resume_path if settings.resume_path.exists() else f"{settings.resume_path} (not there yet)"
        lines.append(f"recall: resuming from {where}: {found} scored case records")
    if settings.shard is not None:
        lines.append(f"recall: shard {settings.shard[0]} of {settings.shard[1]}")
    lines.extend(f"recall: {note}" for note in settings.created_outside)
    if settings.home_mode == "user" and settings.argv:
        lines.append(f"recall: {shared_home_warning(settings.sandbox == 'bwrap')}")
    if settings.argv:
        lines.append(f"recall: {tracking_line()}")
    if (advice := bare_cli_advice(settings.argv)) is not None:
        lines.append(f"recall: {advice}")
    for given, resolved in settings.resolved_paths:
        lines.append(f"recall: --recall-cmd names {given!r}; sessions run elsewhere, so it runs as {resolved}")
    return lines


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A directory symlink cycle is followed no further, so each case is collected once."""
    return True if is_symlink_loop(collection_path) else None


def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    nodeid = wheel_nodeid(path)  # None lets pytest name it from the rootdir, as usual
    if is_case_dir(path):
        return CaseDirectory.from_parent(parent, path=path, nodeid=nodeid)
    if is_suite_dir(path):
        return SuiteDirectory.from_parent(parent, path=path, nodeid=nodeid)
    if is_trap_task_dir(path):
        return TrapTaskDirectory.from_parent(parent, path=path, nodeid=nodeid)
    if looks_like_case_dir(path):
        # Step files without answer.json: collected so that loading it names the missing file.
        return CaseDirectory.from_parent(parent, path=path, nodeid=nodeid)
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--recall-shard``: keep this shard's share of whatever else selection left; ``--recall-scope=suite``: order."""
    __tracebackhide__ = True
    settings = config.stash[SETTINGS_KEY]
    if settings.scope == "suite":
        items[:] = seeded_order(items)
    if settings.shard is None:
        return
    durations = None
    if settings.shard_durations_path is not None:
        try:
            durations = durations_by_nodeid(load_records(settings.shard_durations_path))
        except (OSError, UnicodeDecodeError) as exc:
            path = settings.shard_durations_path
            raise pytest.UsageError(f"--recall-shard-durations: cannot read {path}: {exc}") from None
    members = shard_members([item.nodeid for item in items], settings.shard, durations)
    deselected = [item for item in items if item.nodeid not in members]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item.nodeid in members]


def pytest_collection_finish(session: pytest.Session) -> None:
    case_items = [item for item in session.items if isinstance(item, CaseItem)]
    if not case_items:
        return
    settings = session.config.stash[SETTINGS_KEY]
    if session.config.getoption("collectonly"):
        # Listing cases runs no agent, so it needs no command either.
        return
    if not settings.argv:
        if hasattr(session.config, "workerinput"):
            # A worker cannot stop the run cleanly; each case errors with this line instead.
            return
        raise pytest.UsageError(NO_COMMAND)
    run_settings = run_settings_for(session.config, settings, (item.path for item in case_items))
    planned, concurrency = _planned_here(session, case_items, settings.concurrency)
    executor = CaseExecutor(
        session.config,
        run_settings,
        command=settings.command or "",
        concurrency=concurrency,
        resume=session.config.stash.get(RESUME_KEY, None),
        run_mode=settings.run_mode(),
        shared_scope=settings.scope == "suite",
        retries=settings.retries,
        retry_delay_s=settings.retry_delay_s,
        full_prompts=settings.transcripts == "all",
    )
    executor.plan(planned)
    session.config.stash[EXECUTOR_KEY] = executor


def _planned_here(session: pytest.Session, case_items: list[CaseItem], concurrency: int) -> tuple[list[CaseItem], int]:
    """The items this process will run, for the executor's look-ahead, and how many at once.

    A plain run runs them all. An xdist worker knows its share only when the
    controller dealt it in batches (see ``xdist_batches``); otherwise it
    runs one case at a time, since any look-ahead could start another
    worker's case.
    """
    worker_input = getattr(session.config, "workerinput", None)
    if worker_input is None:
        return case_items, concurrency
    from pytest_recall.plugin.xdist_batches import BATCH_INPUT, batch_share, worker_position

    batch, position = worker_input.get(BATCH_INPUT), worker_position(worker_input)
    if not batch or position is None:
        return case_items, 1
    share = set(batch_share(len(session.items), *position, batch))
    return [item for index, item in enumerate(session.items) if index in share and isinstance(item, CaseItem)], batch


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if call.when == "teardown" and isinstance(item, CaseItem):
        item.forget()
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> Any:
    malformed = session.config.stash.get(MALFORMED_KEY, 0)
    if malformed and session.testsfailed == malformed:
        # Only malformed cases failed to collect: run the rest of the suite.
        session.config.option.continue_on_collection_errors = True
    try:
        return (yield)
    finally:
        executor = session.config.stash.get(EXECUTOR_KEY, None)
        if executor is not None:
            executor.close()


@pytest.hookimpl(trylast=True)
def pytest_recall_judge(stdout: str, expected: dict[str, Any], config: pytest.Config) -> dict[str, Any]:
    return judge_answer(stdout, expected)


def pytest_recall_case_finished(record: dict[str, Any], config: pytest.Config) -> None:
    """Nothing to do by default; the run log implements it."""


@pytest.fixture
def judge(request: pytest.FixtureRequest) -> RecallJudge:
    """The plugin's judge for your own tests: ``judge(stdout, expected)`` fails unless it scores 1.0."""
    config = request.config
    return RecallJudge(
        lambda stdout, expected: config.hook.pytest_recall_judge(stdout=stdout, expected=expected, config=config)
    )
