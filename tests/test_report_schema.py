"""The report's published JSON Schema, and the commands that read reports (issue 14, item 9;
issue 15's merge verdict): a bad file is one line and exit 2, a comparison with nothing to
compare exits 2, and merge prints and exits by the merged verdict.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_recall.reporting.document import SHARED_KEYS, STEP_DEFAULTS, write_report
from pytest_recall.reporting.files import write_json_atomic
from pytest_recall.reporting.merge import report_of_rows


def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        resources.files("pytest_recall.reporting").joinpath("report.schema.json").read_text(encoding="utf-8")
    )
    return loaded


def records(scores: Sequence[float | None], *, prefix: str = "case") -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}_{i:02d}",
            "suite": "suite",
            "nodeid": f"cases/suite/{prefix}_{i:02d}::recall",
            "category": "names",
            "score": score,
            "error": None if score is not None else "agent exited 1",
            "epoch": 1,
            "control": False,
            "duration_s": 1.0,
            "cost_usd": None,
            "content_hash": f"h{i}",
            "steps": [],
        }
        for i, score in enumerate(scores)
    ]


def saved(folder: Path, name: str, scores: Sequence[float | None], **options: Any) -> Path:
    path = folder / name
    write_json_atomic(path, report_of_rows(records(scores, **options), threshold=0.5, command="my-agent").as_json())
    return path


def pytest_recall(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_recall.cli", *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_a_real_run_report_fits_the_published_schema(recall_suite: Any) -> None:
    recall_suite.add("good", ["say 1.00", "say 12345.67"], "12345.67")
    recall_suite.add("bad", ["say 1.00", "say 0.00"], "12345.67")
    recall_suite.run("--recall-epochs=2", "--recall-control")
    jsonschema.Draft202012Validator.check_schema(schema())
    jsonschema.validate(recall_suite.report(), schema(), cls=jsonschema.Draft202012Validator)


def test_the_record_and_step_schemas_check_each_field_on_its_own() -> None:
    """What lets a reader check a case as written and the values it shares with the report once, apart.

    The top's shared values are held to the record's and the step's own
    schemas for those fields. A keyword that ties fields together (``if``,
    ``dependentRequired``, a ``oneOf`` over whole records) or a shared field
    made required would make a valid case with valid shared values an invalid
    record, or the reverse: ``ReportFile.records`` would then have to check
    each case whole again.
    """
    definitions, top = schema()["$defs"], schema()["properties"]
    for name in ("record", "step"):
        assert set(definitions[name]) - {"title", "description"} <= {"type", "required", "properties"}, name
    assert not set(definitions["record"]["required"]) & set(SHARED_KEYS)
    assert not set(definitions["step"]["required"]) & set(STEP_DEFAULTS)
    assert {key: top[key]["$ref"] for key in SHARED_KEYS} == {
        key: f"#/$defs/record/properties/{key}" for key in SHARED_KEYS
    }
    defaults = top["step_defaults"]
    assert defaults["additionalProperties"] is False
    assert {key: part["$ref"] for key, part in defaults["properties"].items()} == {
        key: f"#/$defs/step/properties/{key}" for key in STEP_DEFAULTS
    }


def broken_reports() -> list[Any]:
    good = report_of_rows(records([1.0, 0.0]), threshold=0.5, command="x").as_json()

    def edited(**changes: Any) -> str:
        return json.dumps({**good, **changes})

    def record_edited(**changes: Any) -> str:
        return json.dumps({**good, "cases": [{**good["cases"][0], **changes}]})

    cases = [
        ("not-json", "{oops", "*not JSON*"),
        ("cases-is-a-string", edited(cases="abc"), "*at cases: 'abc' is not of type 'array'*"),
        ("record-is-a-string", edited(cases=["abc"]), "*at cases[[]0[]]: 'abc' is not of type 'object'*"),
        ("record-without-score", json.dumps({**good, "cases": [{"id": "x"}]}), "*'score' is a required property*"),
        ("score-a-word", record_edited(score="high"), "*at cases[[]0[]].score: 'high' is not of type*"),
        ("epoch-a-word", record_edited(epoch="one"), "*at cases[[]0[]].epoch: 'one' is not of type 'integer'*"),
        ("score-nan", record_edited(score=float("nan")), "*at cases[[]0[]].score: NaN is not a JSON number*"),
        ("passed-missing", json.dumps({k: v for k, v in good.items() if k != "passed"}), "*'passed' is a required*"),
        (
            "step-default-no-step-could-hold",
            edited(step_defaults={**STEP_DEFAULTS, "memory": ["notes.txt"]}),
            "*at step_defaults.memory[[]0[]]: 'notes.txt' is not of type 'object'*",
        ),
    ]
    return [pytest.param(text, message, id=name) for name, text, message in cases]


def reading(command: str, good: Path, bad: Path, out: Path) -> list[str | Path]:
    """The arguments that make ``command`` read ``bad`` (beside ``good`` where it reads two)."""
    return {
        "merge": ["merge", good, bad, "-o", out],
        "report": ["report", bad],
        "compare": ["compare", good, bad],
    }[command]


@pytest.mark.parametrize(("text", "message"), broken_reports())
@pytest.mark.parametrize("command", ["merge", "report", "compare"])
def test_a_structurally_bad_report_is_one_line_and_exit_two(
    tmp_path: Path, command: str, text: str, message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text, encoding="utf-8")
    good = saved(tmp_path, "good.json", [1.0, 0.0])
    result = pytest_recall(*reading(command, good, bad, tmp_path / "out.json"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert pytest.LineMatcher(lines).fnmatch_lines([f"pytest-recall {command}: {bad}: {message}"]) is None
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("command", ["merge", "report", "compare"])
def test_a_one_case_a_line_report_with_a_default_no_step_could_hold_is_one_line(tmp_path: Path, command: str) -> None:
    """Its cases are checked as written, so the default is caught with the report's top, and named there."""
    good = tmp_path / "good.json"
    write_report(good, report_of_rows(records([1.0, 0.0]), threshold=0.5, command="my-agent"))
    text = good.read_text(encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text(text.replace('"memory": null,', '"memory": ["notes.txt"],', 1), encoding="utf-8")
    assert json.loads(bad.read_text(encoding="utf-8"))["step_defaults"]["memory"] == ["notes.txt"]
    result = pytest_recall(*reading(command, good, bad, tmp_path / "out.json"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"pytest-recall {command}: {bad}: not a pytest-recall report: "
        "at step_defaults.memory[0]: 'notes.txt' is not of type 'object'"
    ]


def test_merge_names_every_bad_file_on_a_line_of_its_own(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text('{"cases": "abc"}', encoding="utf-8")
    second.write_text("[]", encoding="utf-8")
    result = pytest_recall("merge", first, second, "-o", tmp_path / "out.json")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert [line.split(": ")[1] for line in lines] == [str(first), str(second)]


def test_compare_with_no_shared_case_exits_two(tmp_path: Path) -> None:
    base = saved(tmp_path, "base.json", [1.0, 1.0])
    new = saved(tmp_path, "new.json", [1.0, 1.0], prefix="other")
    result = pytest_recall("compare", base, new)
    assert result.returncode == 2
    assert "nothing to compare" in result.stderr


def test_compare_when_the_new_run_scored_nothing_exits_two(tmp_path: Path) -> None:
    base = saved(tmp_path, "base.json", [1.0, 1.0, 1.0])
    new = saved(tmp_path, "new.json", [None, None, None])
    result = pytest_recall("compare", base, new)
    assert result.returncode == 2
    assert f"{new} scored no case" in result.stderr


@pytest.mark.parametrize(
    ("scores", "gate", "verdict", "status"),
    [
        ([1.0, 1.0], "cases", "PASSED", 0),
        ([1.0, 0.0], "cases", "PASSED", 1),  # the run passes the threshold, but a case failed
        ([1.0, 0.0], "score", "PASSED", 0),
        ([0.0, 0.0], "score", "FAILED", 1),
        ([1.0, None], "cases", "PASSED", 1),  # an error fails the cases gate, as it fails pytest
    ],
)
def test_merge_prints_the_merged_verdict_and_exits_by_it_under_the_gate(
    tmp_path: Path, scores: list[float | None], gate: str, verdict: str, status: int
) -> None:
    first = saved(tmp_path, "a.json", scores[:1], prefix="a")
    second = saved(tmp_path, "b.json", scores[1:], prefix="b")
    result = pytest_recall("merge", first, second, "-o", tmp_path / "out.json", "--gate", gate)
    assert result.returncode == status, result.stderr
    assert any(line.startswith(f"recall: {verdict}  score") for line in result.stdout.splitlines()), result.stdout


def test_merge_of_an_interrupted_shard_says_so_and_exits_two(tmp_path: Path) -> None:
    first = saved(tmp_path, "a.json", [1.0], prefix="a")
    second = tmp_path / "b.json"
    write_json_atomic(
        second, report_of_rows(records([1.0], prefix="b"), threshold=0.5, command="x", interrupted=True).as_json()
    )
    result = pytest_recall("merge", first, second, "-o", tmp_path / "out.json")
    assert result.returncode == 2
    assert "interrupted" in result.stdout
