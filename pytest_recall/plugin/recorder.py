"""The controller's recorder: gathers case records, and writes the report at the end.

Modelled on pytest's JUnit writer: registered only where no ``workerinput``
exists (the controller, or a plain run), it collects in
``pytest_runtest_logreport`` and writes in ``pytest_sessionfinish``. Records
arrive in ``user_properties``, as the object in one process and as JSON text
from an xdist worker (:mod:`pytest_recall.plugin.xdist_handoff`); it takes
them out there, so the JUnit file carries the readable scalars and not the
whole record.

Memory stays flat however many cases run: each record goes straight to a
spool file, memory keeps only the scalars the verdict needs, and the report
streams the records back from disk when it is written.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pytest

from pytest_recall.plugin.checks import NAME_A_SUITE
from pytest_recall.plugin.config import RunConfig
from pytest_recall.plugin.executor import BUDGET_REASON
from pytest_recall.plugin.junit import add_run_properties, is_case_figure, place_case_figures, shorten_failure
from pytest_recall.plugin.protocol_facts import ProtocolFacts
from pytest_recall.plugin.runlog import LOG_ERROR_PROPERTY, RESUME_KEY, log_error_lines
from pytest_recall.plugin.xdist_handoff import RECORD_PROPERTY, RESUMED_PROPERTY, received_record
from pytest_recall.reporting import (
    CaseRecord,
    CaseSummary,
    RecordSpool,
    RunEnding,
    RunReport,
    StreamedCases,
    build_report,
    counted,
    error_lines,
    format_summary,
    html_chunks,
    summary_of,
    transcripts_view,
    warning_lines,
    write_chunks_atomic,
    write_report,
)

if TYPE_CHECKING:
    from pytest_recall.plugin.rate_pause import RatePause
    from pytest_recall.plugin.stop import StopGate


class Recorder:
    def __init__(self, config: pytest.Config, run_config: RunConfig) -> None:
        self.config = config
        self.outputs = run_config.outputs
        self.max_cost_usd = run_config.scale_out.max_cost_usd
        self.resume_path = run_config.scale_out.resume_path
        self.found_nothing = False
        # Records --recall-resume reused instead of running their case, told from the ones it read.
        self.resumed: set[str] = set()
        self.command = run_config.command
        # Written once at the top of the report; a case whose own differs keeps its own.
        self.run_mode = run_config.run_mode()
        # What the protocol block needs from this machine (import notes, the CLI's version), asked once now.
        self.protocol = ProtocolFacts(config, run_config) if run_config.command.argv else None
        self.spool = RecordSpool()
        config.add_cleanup(self.spool.close)
        # Per case only the scalars the aggregates read; the full records wait in the spool.
        self.records: dict[str, CaseSummary] = self.spool.summaries
        self.unrecorded_failures: dict[str, str] = {}
        self.report: RunReport | None = None
        # The plugins whose blocks the report takes at the end, when the run has them (``plugin/hooks.py``).
        self.stop_gate: StopGate | None = None
        self.rate_pause: RatePause | None = None
        self.write_error: str | None = None
        # Collection errors make no record, yet a run with one is never green, whatever the gate.
        self.collection_errors = 0
        # Case runs --recall-max-cost kept from starting: the report and the summary say how many.
        self.not_started = 0
        self.planned_runs: int | None = None
        self.html_error: str | None = None
        # Run-log append failures, by message, with how many records each cost.
        self.log_errors: dict[str, int] = {}
        self.summaries: list[CaseSummary] = []
        # Each stderr block a failure section showed, and the case that showed it first.
        self.seen_stderr: dict[tuple[str, ...], str] = {}

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        if report.skipped and BUDGET_REASON in str(report.longrepr):
            self.not_started += 1
        self._take_record(report)
        yield
        # The run log adds a failed append to the report in its own wrapper, which runs inside this one.
        # pytest keeps every report to the end (the terminal reporter's stats); once every plugin has
        # seen this one, its per-case scalars would only cost memory per case. The JUnit writer has them.
        properties = report.user_properties
        kept = []
        for name, value in properties:
            if name == LOG_ERROR_PROPERTY:
                self.log_errors[str(value)] = self.log_errors.get(str(value), 0) + 1
            elif not is_case_figure(name):
                kept.append((name, value))
        if len(kept) != len(properties):
            report.user_properties = kept

    def _take_record(self, report: pytest.TestReport) -> None:
        received = received_record(report.user_properties)
        resumed = any(name == RESUMED_PROPERTY for name, _ in report.user_properties)
        if received is not None or resumed:
            if received is not None and resumed:
                # Every phase's report carries the record: a case counts once.
                self.resumed.add(report.nodeid)
            dropped = (RECORD_PROPERTY, RESUMED_PROPERTY)
            report.user_properties = [p for p in report.user_properties if p[0] not in dropped]
        place_case_figures(self.config, report)
        if received is not None:
            record, text = received
            self.spool.add(record, text)
            shorten_failure(report, record, self.seen_stderr)
            self.unrecorded_failures.pop(report.nodeid, None)
        elif report.failed and report.nodeid not in self.records and _looks_like_case(report.nodeid):
            lines = str(report.longrepr).strip().splitlines()
            self.unrecorded_failures[report.nodeid] = lines[-1] if lines else "case was lost"

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors += 1

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.planned_runs = _main_runs(item.nodeid for item in session.items)
        if self.planned_runs:
            self.spool.open()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # Under xdist the controller collects nothing itself; every worker collects the same ids.
        self.planned_runs = _main_runs(ids)
        if self.planned_runs:
            self.spool.open()

    def build(self, interrupted: bool) -> RunReport:
        """The report, with its ``cases`` streamed from the spool when read or written."""
        command = self.command.text
        lost = [
            CaseRecord.lost(nodeid, f"lost: {why}", command or "") for nodeid, why in self.unrecorded_failures.items()
        ]
        summaries = [*self.records.values(), *(summary_of(record) for record in lost)]
        self.summaries = summaries
        ending = RunEnding(
            n_planned=self.planned_runs if interrupted and self.planned_runs else None,
            max_cost={"max_cost_usd": self.max_cost_usd, "n_not_started": self.not_started}
            if self.not_started
            else None,
            n_collection_errors=self.collection_errors,
            stop=self.stop_gate.block() if self.stop_gate is not None else None,
            rate_limits=self.rate_pause.rate_limits() if self.rate_pause is not None else None,
        )
        report = build_report(
            summaries,
            threshold=self.outputs.threshold,
            command=command,
            interrupted=interrupted,
            run_mode=self.run_mode,
            protocol=self.protocol.block(summaries) if self.protocol else None,
            ending=ending,
        )
        lost_by_node = {record.nodeid: record for record in lost}
        order = (str(summary.nodeid) for summary in report.cases)
        entries: list[str | CaseRecord] = [lost_by_node.get(nodeid, nodeid) for nodeid in order]
        return replace(report, cases=StreamedCases(self.spool, entries, transcripts_view(self.outputs.transcripts)))

    def added_by_plugins(self, report: RunReport) -> RunReport:
        """The report with what other plugins add through ``pytest_recall_modify_report``: they get its JSON,
        the public edge, and may add keys; what the report already says stays as built."""
        document = report.as_json()
        own = set(document)
        self.config.hook.pytest_recall_modify_report(report=document, config=self.config)
        added = {key: value for key, value in document.items() if key not in own}
        return replace(report, added=MappingProxyType(added)) if added else report

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        # An agent to measure and no case found: pytest's "no tests ran" alone leaves a newcomer in an empty folder.
        self.found_nothing = exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and bool(self.command.argv)
        if not self.records and not self.unrecorded_failures and not (interrupted and self.command.argv):
            # No case ran and nothing was cut short: this was not a recall run.
            return
        self.report = self.added_by_plugins(self.build(interrupted))
        add_run_properties(self.config, self.report)
        if self.collection_errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.outputs.gate == "score" and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            # The run verdict alone decides; interrupts and internal errors still show as such.
            session.exitstatus = pytest.ExitCode.OK if self.report.passed else pytest.ExitCode.TESTS_FAILED
        if self.outputs.report_path is not None:
            try:
                write_report(self.outputs.report_path, self.report)
            except (OSError, ValueError) as exc:
                # ValueError: a value JSON cannot hold that no bound upstream caught (a hook's 5000-digit integer).
                why = getattr(exc, "strerror", None) or exc
                self.write_error = f"could not write the report to {self.outputs.report_path}: {why}"
                session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        if self.outputs.html_path is not None:
            try:
                write_chunks_atomic(self.outputs.html_path, html_chunks(self.report))
            except OSError as exc:
                self.html_error = f"could not write the HTML report to {self.outputs.html_path}: {exc.strerror or exc}"
                session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    def resume_hint(self) -> str:
        """How to pick an interrupted run up where it stopped, from what this run wrote."""
        if self.collection_errors and not self.records:
            # Nothing ran, so nothing was paid for: there is nothing to resume, only errors to fix.
            return "no case ran: pytest stops at collection errors; fix them (ERRORS above) and run again"
        kept = self.outputs.log_path or (self.outputs.report_path if self.write_error is None else None)
        if kept is None:
            return "to resume, run again with --recall-log=FILE this time: a log keeps each case as it finishes"
        return f"to resume, run the same command again with --recall-resume={kept}"

    def resume_line(self) -> tuple[str, bool] | None:
        """How many of the records ``--recall-resume`` read it reused, and whether some went unused."""
        index = self.config.stash.get(RESUME_KEY, None)
        if index is None or not len(index):
            return None
        found = len(index)
        reused = len(self.resumed)
        line = f"resume: reused {reused} of {counted(found, 'scored record')} in {self.resume_path}"
        if reused >= found:
            return line, False
        unused = found - reused
        why = "its case changed, the command or run mode differs, or it was not selected"
        return f"{line}; {unused} matched no case of this run ({why})", True

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The verdict in colour; ``-q`` keeps the verdict, the warnings and the errors, ``-qq`` the verdict alone."""
        if self.report is None:
            if self.found_nothing:
                here = self.config.invocation_params.dir
                terminalreporter.write_line(f"recall: no case folder under {here}; {NAME_A_SUITE}", yellow=True)
            return
        verbosity = self.config.get_verbosity()
        verdict, *details = format_summary(self.report, self.summaries)
        if verbosity >= 0:
            terminalreporter.section("pytest-recall", sep="=", bold=True)
        terminalreporter.write_line(verdict, green=self.report.passed, red=not self.report.passed)
        if verbosity <= -2:
            return
        for line in details if verbosity >= 0 else warning_lines(self.report, self.summaries):
            terminalreporter.write_line(line)
        for line in error_lines(self.summaries):
            terminalreporter.write_line(line, red=True)
        resume = self.resume_line()
        if resume is not None and (verbosity >= 0 or resume[1]):
            terminalreporter.write_line(f"  {resume[0]}", yellow=resume[1])
        if self.report.interrupted:
            terminalreporter.write_line(f"  {self.resume_hint()}", yellow=True)
        if self.not_started:
            terminalreporter.write_line(
                f"  --recall-max-cost=${self.max_cost_usd:g} reached: {self.not_started} case runs not "
                f"started; {self.resume_hint()}",
                yellow=True,
            )
        if self.outputs.report_path is not None and self.write_error is None:
            terminalreporter.write_line(f"  report: {self.outputs.report_path}")
        if self.outputs.html_path is not None and self.html_error is None:
            terminalreporter.write_line(f"  html: {self.outputs.html_path}")
        for error in (self.write_error, self.html_error):
            if error:
                terminalreporter.write_line(f"  ERROR: {error}", red=True)
        for line in log_error_lines(self.log_errors):
            terminalreporter.write_line(f"  {line}", red=True)


def _main_runs(nodeids: Iterable[str]) -> int:
    """How many runs count toward the verdict: every recall item but the controls."""
    return sum(1 for nodeid in nodeids if nodeid.rsplit("::", 1)[-1].startswith("recall"))


def _looks_like_case(nodeid: str) -> bool:
    name = nodeid.rsplit("::", 1)[-1]
    return name.startswith(("recall", "control"))
