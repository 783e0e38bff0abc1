"""pytest hooks for pytest-recall, and nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_recall.agents import bare_cli_advice, command_line_trap
from pytest_recall.cases import (
    BUILTIN_KINDS,
    KIND_FREE,
    is_case_dir,
    is_symlink_loop,
    is_trap_task_dir,
    looks_like_case_dir,
    unscoped_store_lines,
)
from pytest_recall.plugin import hookspecs
from pytest_recall.plugin.checks import check_adapter_cli, check_command_starts, check_mcp_agent, check_suite_arguments
from pytest_recall.plugin.config import CONFIG_KEY
from pytest_recall.plugin.configure import read_run_config
from pytest_recall.plugin.executor import EXECUTOR_KEY, CaseExecutor, session_settings
from pytest_recall.plugin.items import (
    KNOWN_KINDS_KEY,
    MALFORMED_KEY,
    CaseDirectory,
    CaseItem,
    MalformedCaseCounter,
    SuiteDirectory,
    TrapTaskDirectory,
    order_seed,
    seeded_order,
)
from pytest_recall.plugin.judge_fixture import RecallJudge
from pytest_recall.plugin.options import FREE_NEEDS_JUDGE, NO_COMMAND, OPTIONS, add_options, judge_only_refusal
from pytest_recall.plugin.preflight import preflight
from pytest_recall.plugin.progress import register_progress
from pytest_recall.plugin.rate_pause import RatePause, host_pause
from pytest_recall.plugin.recorder import Recorder
from pytest_recall.plugin.runlog import RESUME_KEY, load_records, open_run_log
from pytest_recall.plugin.sandbox_setup import check_sandbox
from pytest_recall.plugin.signals import TerminationSignals
from pytest_recall.plugin.stop import STOP_KEY, StopGate, worker_signal
from pytest_recall.plugin.task_graders import TaskGraders
from pytest_recall.plugin.xdist_handoff import (
    JUDGE_CACHE_INPUT,
    PAUSE_FOLDER_INPUT,
    RESUME_INPUT,
    STOP_FILE_INPUT,
    WorkerHandoff,
    dealt_batch,
    handed,
    is_worker,
)
from pytest_recall.reporting import durations_by_nodeid, nothing_judged, shard_members, shared_home_warning
from pytest_recall.scoring import FREE_FORM_KINDS, judge_answer, score_contains, score_evidence
from pytest_recall.sessions import SharedVerdicts, tracking_line
from pytest_recall.suites import is_suite_dir, wheel_nodeid

PREFLIGHT_NOTE_KEY = pytest.StashKey[str]()
CONTROLLER_PLUGINS_KEY = pytest.StashKey[list[object]]()


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
    run_config = read_run_config(config)
    config.stash[CONFIG_KEY] = run_config
    config.stash[MALFORMED_KEY] = 0
    config.pluginmanager.register(MalformedCaseCounter(config), "recall-malformed-cases")
    declared = config.hook.pytest_recall_answer_kinds(config=config)
    config.stash[KNOWN_KINDS_KEY] = frozenset(BUILTIN_KINDS.union(kind for kinds in declared for kind in kinds))
    if not is_worker(config):
        # Decided once, on the controller; workers take the outcome from workerinput.
        if run_config.command.argv:
            check_suite_arguments(config)
            check_command_starts(run_config.command.argv)
            if run_config.isolation.mcp_servers:
                check_mcp_agent(run_config.command.argv)
            if not config.getoption("collectonly"):  # listing cases starts no agent, so its CLI may be absent
                check_adapter_cli(run_config.command.argv, run_config.isolation.env)
        for judge_argv in {run_config.llm_judge.argv, *(judge.argv for judge in run_config.llm_judge.panel)} - {()}:
            check_command_starts(judge_argv, "--recall-judge-cmd", "judge command")
        check_sandbox(config, run_config)
        recorder = Recorder(config, run_config)
        config.stash[CONTROLLER_PLUGINS_KEY] = [recorder, TaskGraders(config)]
        if run_config.command.argv:
            recorder.rate_pause = RatePause(config)
            config.stash[CONTROLLER_PLUGINS_KEY].append(recorder.rate_pause)
        if run_config.scale_out.stop == "decided":
            under_xdist = config.pluginmanager.hasplugin("xdist")
            stop = StopGate(config, run_config.outputs.threshold, recorder.records, under_xdist=under_xdist)
            config.stash[STOP_KEY] = stop.signal
            recorder.stop_gate = stop
            config.stash[CONTROLLER_PLUGINS_KEY].append(stop)
        if config.pluginmanager.hasplugin("xdist"):
            config.stash[CONTROLLER_PLUGINS_KEY].append(
                WorkerHandoff(config, lambda: config.stash.get(RESUME_KEY, None))
            )
        for plugin in config.stash[CONTROLLER_PLUGINS_KEY]:
            config.pluginmanager.register(plugin)
        register_progress(config, recorder)
    open_run_log(config, run_config.outputs.log_path, run_config.scale_out.resume_path, handed(config, RESUME_INPUT))
    if run_config.command.argv:
        termination = TerminationSignals(forward_to_children=lambda: config.pluginmanager.has_plugin("dsession"))
        termination.install()
        config.pluginmanager.register(termination, "recall-termination-signals")


def pytest_unconfigure(config: pytest.Config) -> None:
    for plugin in config.stash.get(CONTROLLER_PLUGINS_KEY, []):
        config.pluginmanager.unregister(plugin)
    config.stash[CONTROLLER_PLUGINS_KEY] = []


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """``--recall-preflight``: before the header, collection and xdist's workers (its hook is trylast)."""
    note = preflight(session.config, session.config.stash[CONFIG_KEY])
    if note is not None:
        session.config.stash[PREFLIGHT_NOTE_KEY] = note


def pytest_report_header(config: pytest.Config) -> list[str]:
    run_config = config.stash[CONFIG_KEY]
    resume_path, shard, argv = run_config.scale_out.resume_path, run_config.scale_out.shard, run_config.command.argv
    lines: list[str] = []
    if PREFLIGHT_NOTE_KEY in config.stash:
        lines.append(f"recall: {config.stash[PREFLIGHT_NOTE_KEY]}")
    if resume_path is not None:
        lines.extend(f"recall: {refused}" for refused in config.stash[RESUME_KEY].refused)
        found = len(config.stash[RESUME_KEY])
        where = resume_path if resume_path.exists() else f"{resume_path} (not there yet)"
        lines.append(f"recall: resuming from {where}: {found} scored case records")
    if shard is not None:
        lines.append(f"recall: shard {shard[0]} of {shard[1]}")
    lines.extend(f"recall: {note}" for note in run_config.outputs.created_outside)
    if run_config.isolation.home == "user" and argv:
        lines.append(f"recall: {shared_home_warning(run_config.sandbox.mode == 'bwrap')}")
    isolation = run_config.isolation
    stores = unscoped_store_lines(isolation.mcp_servers, home_per_case=isolation.home == "case", run_env=isolation.env)
    lines.extend(f"recall: {line}" for line in stores)
    if argv:
        lines.append(f"recall: {tracking_line(verbose=config.get_verbosity() > 0)}")
    if (advice := bare_cli_advice(argv)) is not None:
        lines.append(f"recall: {advice}")
    for given, resolved in run_config.command.resolved_paths:
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
    """``--recall-shard``: keep this shard's share of whatever else selection left; ``--recall-scope=suite``
    and ``--recall-stop=decided``: order."""
    __tracebackhide__ = True
    run_config = config.stash[CONFIG_KEY]
    if order_seed(run_config) is not None:
        items[:] = seeded_order(items)
    shard, durations_path = run_config.scale_out.shard, run_config.scale_out.shard_durations_path
    if shard is None:
        return
    durations = None
    if durations_path is not None:
        try:
            durations = durations_by_nodeid(load_records(durations_path))
        except (OSError, UnicodeDecodeError) as exc:
            raise pytest.UsageError(f"--recall-shard-durations: cannot read {durations_path}: {exc}") from None
    groups = {item.nodeid: item.outline.group for item in items if isinstance(item, CaseItem) and item.outline.group}
    members = shard_members([item.nodeid for item in items], shard, durations, groups)
    deselected = [item for item in items if item.nodeid not in members]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item.nodeid in members]


def _print_plan(config: pytest.Config, estimate_from: Path | None, case_items: list[CaseItem]) -> None:
    from pytest_recall.reporting import load_report
    from pytest_recall.reporting.cost_plan import PlannedRun, plan_lines, planned_sessions, session_rates

    runs = [
        PlannedRun(item.outline.steps, item.outline.group, item.outline.ingest_steps, item.control, item.epoch)
        for item in case_items
    ]
    rates = None
    if estimate_from is not None:
        try:
            rates = session_rates(load_report(estimate_from))
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(f"--recall-estimate-from: cannot read {estimate_from}: {exc}") from None
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for line in plan_lines(planned_sessions(runs), len(runs), rates, str(estimate_from)):
        if reporter is not None:
            reporter.write_line(line)


def pytest_collection_finish(session: pytest.Session) -> None:
    case_items = [item for item in session.items if isinstance(item, CaseItem)]
    if not case_items:
        return
    config = session.config
    run_config = config.stash[CONFIG_KEY]
    if config.getoption("collectonly"):
        # Listing cases runs no agent, so it needs no command either; it says what a run would start.
        _print_plan(config, run_config.outputs.estimate_from, case_items)
        return
    if not run_config.command.argv:
        if is_worker(config):
            # A worker cannot stop the run cleanly; each case errors with this line instead.
            return
        raise pytest.UsageError(NO_COMMAND)
    free = next((item for item in case_items if item.outline.answer_kind == KIND_FREE), None)
    if free is not None and not run_config.llm_judge.on and not is_worker(config):
        # A worker cannot stop the run cleanly; each free case errors with this line instead (CaseItem.setup).
        raise pytest.UsageError(FREE_NEEDS_JUDGE.format(case=free.reportinfo()[2]))
    judge_only = [
        (str(item.reportinfo()[2]), item.outline.judge_only) for item in case_items if item.outline.judge_only
    ]
    if judge_only and not run_config.llm_judge.on and not is_worker(config):
        # Refused, not run and dropped: their sessions would be spent for a score that leaves the benchmark's whole.
        raise pytest.UsageError(judge_only_refusal(judge_only))
    judge = run_config.llm_judge
    judged = any(item.outline.answer_kind in FREE_FORM_KINDS for item in case_items)
    if judge.on and not judge.both and not judged and not is_worker(config):
        # Said before any session runs: judges given over exact answers would otherwise judge nothing in silence.
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"recall: {nothing_judged(bool(judge.panel))}", yellow=True)
    sessions = session_settings(config, run_config, (item.path for item in case_items))
    planned, concurrency = _planned_here(session, case_items, run_config.scale_out.concurrency)
    resume = config.stash.get(RESUME_KEY, None)
    shared_verdicts = handed(config, JUDGE_CACHE_INPUT)
    executor = CaseExecutor(
        config,
        run_config,
        sessions,
        concurrency=concurrency,
        resume=resume,
        shared_verdicts=SharedVerdicts.from_handoff(shared_verdicts),
    )
    executor.host_pause = host_pause(config, handed(config, PAUSE_FOLDER_INPUT))
    executor.plan(planned)
    executor.stop = config.stash.get(STOP_KEY, None) or worker_signal(handed(config, STOP_FILE_INPUT))
    session.config.stash[EXECUTOR_KEY] = executor


def _planned_here(session: pytest.Session, case_items: list[CaseItem], concurrency: int) -> tuple[list[CaseItem], int]:
    """The items this process will run, for the executor's look-ahead, and how many at once.

    A plain run runs them all. An xdist worker knows its share only when the
    controller dealt it in batches (see ``xdist_batches``); otherwise it
    runs one case at a time, since any look-ahead could start another
    worker's case.
    """
    if not is_worker(session.config):
        return case_items, concurrency
    dealt = dealt_batch(session.config)
    if dealt is None:
        return case_items, 1
    from pytest_recall.plugin.xdist_batches import batch_share, case_groups_of

    batch, position = dealt
    groups = case_groups_of([item.nodeid for item in session.items], session.config.rootpath)
    share = set(batch_share(len(session.items), *position, batch, groups))
    return [item for index, item in enumerate(session.items) if index in share and isinstance(item, CaseItem)], batch


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if call.when == "teardown" and isinstance(item, CaseItem):
        item.forget()
        executor = item.config.stash.get(EXECUTOR_KEY, None)
        if executor is not None:
            # Travels with the report to xdist's controller, whose progress line adds up every worker's.
            report.recall_in_flight = executor.in_flight
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
    run_config = config.stash.get(CONFIG_KEY, None)
    if run_config is not None and run_config.outputs.answer_judge == "contains":
        return score_contains(stdout, expected)
    if run_config is not None and run_config.outputs.answer_judge == "evidence":
        return score_evidence(stdout, expected)
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
