"""Issue 26, item 8: reports and logs that no writer makes, given to ``report``, ``merge``, ``compare`` and resume.

A report nested 100,000 levels deep, a line of more than 64 MiB, a record
with a key twice, a report followed by garbage: each is one line saying what
is wrong and exit 2 (a usage error, under ``--recall-resume``), never a
traceback, an INTERNALERROR, or a report read as if nothing were wrong.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from test_cli_report_compare import pytest_recall, saved_report

from pytest_recall.cases import strict_json
from pytest_recall.reporting.files import write_json_atomic

DEEP = 100_000


def nested(path: Path) -> None:
    path.write_text('{"cases": ' + "[" * DEEP + "]" * DEEP + "}", encoding="ascii")


def nested_case_line(path: Path) -> None:
    """A report laid out one case a line, whose second case line nests 100,000 levels."""
    lines = path.read_bytes().split(b"\n")
    index = next(i for i, line in enumerate(lines) if line.startswith(b'    {"id"')) + 1
    lines[index] = b'    {"id": ' + b"[" * DEEP + b"]" * DEEP + b"},"
    path.write_bytes(b"\n".join(lines))


def duplicate_key(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('    {"id"', '    {"score":1.0,"id"', 1), encoding="utf-8")


def trailing_garbage(path: Path) -> None:
    with open(path, "ab") as handle:
        handle.write(b"\n" + b"garbage " * 125_000)


def long_line(path: Path) -> None:
    pad = b'    {"pad":"' + b"x" * (strict_json.MAX_LINE_BYTES + 1) + b'","id"'
    path.write_bytes(path.read_bytes().replace(b'    {"id"', pad, 1))


DAMAGE = [
    pytest.param(nested, "too deep", id="nested-document"),
    pytest.param(nested_case_line, "too deep", id="nested-case-line"),
    pytest.param(duplicate_key, "duplicate key 'score'", id="duplicate-key"),
    pytest.param(trailing_garbage, "data after its end|Extra data", id="trailing-garbage"),
    pytest.param(long_line, "longer than 64 MiB", id="line-over-the-bound", marks=pytest.mark.slow),
]


def damaged_report(tmp_path: Path, damage) -> Path:  # type: ignore[no-untyped-def]
    """A report as the plugin writes it (one case a line), then damaged."""
    path = saved_report(tmp_path, "report.json", [1.0, 0.0, 1.0, 1.0])
    write_json_atomic(path, json.loads(path.read_text(encoding="utf-8")), line_each="cases")
    damage(path)
    return path


@pytest.mark.parametrize(("damage", "said"), DAMAGE)
@pytest.mark.parametrize("command", ["report", "merge", "compare"])
def test_a_damaged_report_is_one_line_and_exit_two(tmp_path: Path, damage, said: str, command: str) -> None:  # type: ignore[no-untyped-def]
    path = damaged_report(tmp_path, damage)
    good = saved_report(tmp_path, "good.json", [1.0, 0.0, 1.0, 1.0])
    args = {"report": [path], "merge": [path, "-o", tmp_path / "merged.json"], "compare": [good, path]}[command]
    result = pytest_recall(command, *args)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith(f"pytest-recall {command}: ") and re.search(said, lines[0]), lines[0]
    assert not (tmp_path / "merged.json").exists()


@pytest.mark.parametrize(("damage", "said"), DAMAGE)
def test_resuming_from_a_damaged_report_is_one_usage_line(recall_suite, damage, said: str) -> None:  # type: ignore[no-untyped-def]
    recall_suite.add("case_a", ["Say 12345.67"])
    path = damaged_report(recall_suite.pytester.path, damage)
    result = recall_suite.run(f"--recall-resume={path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.re_match_lines([f"ERROR: --recall-resume: cannot read {re.escape(str(path))}: .*({said})"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_lines_are_read_to_the_bound_and_never_past_it() -> None:
    lines = list(strict_json.bounded_lines(io.BytesIO(b"ab\ncd\n"), limit=3))
    assert lines == [b"ab\n", b"cd\n"]
    with pytest.raises(ValueError, match="a line at byte 3 is longer than"):
        list(strict_json.bounded_lines(io.BytesIO(b"ab\n" + b"x" * 10), limit=3))
