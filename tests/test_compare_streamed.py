"""``compare`` reads each report a case at a time, keeping its scalars, and says what it said of whole reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_recall.reporting.compare import compare_reports
from pytest_recall.reporting.document import load_report, write_report
from pytest_recall.reporting.merge import report_of_rows
from pytest_recall.reporting.report_file import summarized_report
from pytest_recall.reporting.spool import CaseSummary
from pytest_recall.testing.synthetic import COMMAND, synthetic_record


def write(path: Path, records: list[dict[str, Any]], *, one_a_line: bool = True) -> Path:
    report = report_of_rows(records, threshold=0.5, command=COMMAND, run_mode={"home": "case"})
    if one_a_line:
        write_report(path, report)
    else:  # as another tool might write it: read whole, then summarized
        path.write_text(json.dumps(report.as_json()), encoding="utf-8")
    return path


def test_a_streamed_comparison_equals_the_comparison_of_whole_reports(tmp_path: Path) -> None:
    base = [synthetic_record(index) for index in range(1, 120)]
    new = [{**record, "score": 0.0} if index % 5 == 0 else record for index, record in enumerate(base)]
    new[3] = {**new[3], "content_hash": "f" * 64}
    paths = write(tmp_path / "base.json", base), write(tmp_path / "new.json", new, one_a_line=False)

    streamed = [summarized_report(path) for path in paths]
    assert all(isinstance(case, CaseSummary) for report in streamed for case in report.cases)
    whole = [load_report(path) for path in paths]
    result = compare_reports(*streamed)
    assert result == compare_reports(*whole)
    assert result["regression"] and result["changed"] and result["n_paired"] == len(base)
