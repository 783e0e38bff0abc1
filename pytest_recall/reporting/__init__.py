"""Reporting: records, the report, the terminal summary, HTML, JUnit, the run log, shards, merge and compare.

The names below are the package's public API: what the pytest glue (``pytest_recall.plugin``)
uses, imported from here and not from the modules.
"""

from __future__ import annotations

from pytest_recall.reporting.document import (
    SHARED_KEYS,
    build_report,
    load_report,
    report_order,
    with_shared,
    write_report,
)
from pytest_recall.reporting.failure import CaseFailed, fold_repeated_stderr, verdict_report
from pytest_recall.reporting.files import write_chunks_atomic, write_json_atomic
from pytest_recall.reporting.html import html_chunks
from pytest_recall.reporting.judge_rows import case_name, deterministic_score
from pytest_recall.reporting.judge_section import (
    JUNIT_JUDGE_PROPERTIES,
    judge_run_properties,
    nothing_judged,
    prompts_sha256,
)
from pytest_recall.reporting.lazy_records import LazyRecords
from pytest_recall.reporting.merge import (
    Gate,
    case_scalars,
    close_files,
    merge_report_files,
    merged_exit_status,
    report_of_rows,
)
from pytest_recall.reporting.protocol import build_protocol, content_hashes, data_entry, differs_in_data, scoring_entry
from pytest_recall.reporting.records import (
    ENTRY_PROPERTY,
    JUNIT_CASE_FIELDS,
    CaseRecord,
    judges_both,
    property_text,
    task_entry,
)
from pytest_recall.reporting.report_file import (
    CASES_OPEN,
    check_report_tail,
    line_at,
    parse_line,
    report_shared_values,
    streamed_report,
    summarized_report,
)
from pytest_recall.reporting.run_report import RateLimits, RunEnding, RunReport
from pytest_recall.reporting.schema import json_line, record_problem
from pytest_recall.reporting.shard import (
    AUTO,
    ShardError,
    durations_by_nodeid,
    parse_shard,
    shard_from_environment,
    shard_members,
)
from pytest_recall.reporting.spool import CaseSummary, RecordSpool, StreamedCases, summary_of, summary_of_row
from pytest_recall.reporting.summary import (
    error_lines,
    format_summary,
    rate_limit_lines,
    shared_home_warning,
    stop_line,
    warning_lines,
)
from pytest_recall.reporting.transcripts import DEFAULT_TRANSCRIPTS, TranscriptMode, transcripts_view
from pytest_recall.reporting.wording import counted

__all__ = [
    "AUTO",
    "CASES_OPEN",
    "DEFAULT_TRANSCRIPTS",
    "ENTRY_PROPERTY",
    "JUNIT_CASE_FIELDS",
    "JUNIT_JUDGE_PROPERTIES",
    "SHARED_KEYS",
    "CaseFailed",
    "CaseRecord",
    "CaseSummary",
    "Gate",
    "LazyRecords",
    "RateLimits",
    "RecordSpool",
    "RunEnding",
    "RunReport",
    "ShardError",
    "StreamedCases",
    "TranscriptMode",
    "build_protocol",
    "build_report",
    "case_name",
    "case_scalars",
    "check_report_tail",
    "close_files",
    "content_hashes",
    "counted",
    "data_entry",
    "deterministic_score",
    "differs_in_data",
    "durations_by_nodeid",
    "error_lines",
    "fold_repeated_stderr",
    "format_summary",
    "html_chunks",
    "json_line",
    "judge_run_properties",
    "judges_both",
    "line_at",
    "load_report",
    "merge_report_files",
    "merged_exit_status",
    "nothing_judged",
    "parse_line",
    "parse_shard",
    "prompts_sha256",
    "property_text",
    "rate_limit_lines",
    "record_problem",
    "report_of_rows",
    "report_order",
    "report_shared_values",
    "scoring_entry",
    "shard_from_environment",
    "shard_members",
    "shared_home_warning",
    "stop_line",
    "streamed_report",
    "summarized_report",
    "summary_of",
    "summary_of_row",
    "task_entry",
    "transcripts_view",
    "verdict_report",
    "warning_lines",
    "with_shared",
    "write_chunks_atomic",
    "write_json_atomic",
    "write_report",
]
