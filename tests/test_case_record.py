"""One case record: a fresh, a failed-to-start and a lost case all have the same keys, the schema
describes every field of the dataclass, and one predicate says whether a run passed."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from report_docs import run_report

import pytest_recall
from pytest_recall.cases.model import Case, Step
from pytest_recall.cases.runs import CaseRun, SessionResult, StepRun
from pytest_recall.reporting.document import case_compactor
from pytest_recall.reporting.records import BENCHMARK_FIELDS, OPTIONAL_FIELDS, BenchmarkFacts, CaseRecord
from pytest_recall.scoring.judge import judge_answer
from pytest_recall.scoring.passing import scored_a_pass
from pytest_recall.scoring.verdict import decide

SCHEMA = json.loads(resources.files("pytest_recall.reporting").joinpath("report.schema.json").read_text("utf-8"))


def a_case() -> Case:
    expected = {"id": "case_01", "category": "closing_balance", "answer": "12345.67", "answer_kind": "money"}
    steps = (Step(1, "remember 12345.67"), Step(2, "recall"))
    return Case(case_id="case_01", suite="suite", steps=steps, expected=expected, source="suite/case_01")


def a_run(stdout: str, *, error: str | None = None) -> CaseRun:
    steps = []
    if error is None:
        for number, text in enumerate(("noted", stdout), start=1):
            raw = text.encode()
            result = SessionResult(0, None, False, 0.1, raw, b"", len(raw), 0, False)
            steps.append(StepRun(number, "p", result, text, "", None))
    return CaseRun(case=a_case(), steps=tuple(steps), error=error)


def record_of(run: CaseRun) -> dict[str, Any]:
    verdict = decide(run, answer_judge=judge_answer)
    record = CaseRecord.of_run(run, verdict, nodeid="suite/case_01::recall", command="agent", run_mode={"home": "case"})
    return record.as_json()


def lost_record(nodeid: str, reason: str, command: str) -> dict[str, Any]:
    return CaseRecord.lost(nodeid, reason, command).as_json()


def test_a_lost_record_has_the_keys_of_a_normal_one() -> None:
    normal = record_of(a_run("12345.67"))
    could_not_start = record_of(a_run("", error="agent not found"))
    lost = lost_record("suite/case_01::recall[epoch2]", "lost: worker crashed", "agent")
    assert set(normal) == set(could_not_start) == set(lost)
    assert lost["outcome"] == "error" and lost["epoch"] == 2 and lost["score"] is None


def test_the_schema_describes_every_field_of_the_record() -> None:
    described = set(SCHEMA["$defs"]["record"]["properties"])
    # The benchmark group is flattened on disk: its fields are the record's, by their own names.
    grouped = {field.name for field in dataclasses.fields(CaseRecord)} - {"benchmark", "absent"}
    assert described == grouped | set(BENCHMARK_FIELDS)
    for record in (record_of(a_run("12345.67")), lost_record("s/c::recall", "lost: x", "agent")):
        jsonschema.validate(record, SCHEMA["$defs"]["record"] | {"$defs": SCHEMA["$defs"]})


def test_optional_keys_appear_only_when_they_apply() -> None:
    record = record_of(a_run("12345.67"))
    assert not set(OPTIONAL_FIELDS) & set(record)
    assert list(record)[-1] == "steps"


@pytest.mark.parametrize(
    ("fields", "passed", "fails_item"),
    [
        ({"score": 1.0, "error": None, "control": False}, True, False),
        ({"score": 0.0, "error": None, "control": False}, False, True),
        ({"score": 0.5, "error": None, "control": False}, False, True),
        ({"score": 0.0, "error": None, "control": True}, False, False),
        ({"score": None, "error": "agent not found", "control": False}, False, False),
        ({"score": True, "error": None, "control": False}, False, True),
    ],
)
def test_one_predicate_says_whether_a_run_passed(fields: dict[str, Any], passed: bool, fails_item: bool) -> None:
    record = dataclasses.replace(CaseRecord.lost("s/c::recall", "x", "agent"), **fields)
    assert scored_a_pass(record.score, record.error) is passed
    assert record.fails_item is fails_item


def test_the_dataclass_and_its_json_agree() -> None:
    run = a_run("12345.67")
    record = CaseRecord.of_run(run, decide(run, answer_judge=judge_answer), nodeid="s/c::recall", command="agent")
    assert scored_a_pass(record.score, record.error) and not record.fails_item
    assert CaseRecord.from_json(record.as_json()) == record
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.score = 0.0  # type: ignore[misc]


def test_the_summary_and_junit_keys_are_fields_of_the_record() -> None:
    from pytest_recall.reporting.records import JUNIT_CASE_FIELDS
    from pytest_recall.reporting.spool import DERIVED_SUMMARY_KEYS, SUMMARY_FIELDS

    names = {field.name for field in dataclasses.fields(CaseRecord)}
    assert set(JUNIT_CASE_FIELDS) <= names
    own = set(SUMMARY_FIELDS) - set(DERIVED_SUMMARY_KEYS) - {"content_digest"}
    assert own | {"content_hash"} <= names | set(BENCHMARK_FIELDS)


def benchmark_record() -> CaseRecord:
    run = a_run("12345.67")
    record = CaseRecord.of_run(run, decide(run, answer_judge=judge_answer), nodeid="s/c::recall", command="agent")
    facts = BenchmarkFacts(question_id="q7", question_type="temporal", sessions_per_step=3)
    return dataclasses.replace(record, benchmark=facts, group="g1", run_mode={"home": "case"})


def test_the_benchmark_group_is_flattened_on_disk_in_the_old_keys_and_order() -> None:
    data = benchmark_record().as_json()
    keys = list(data)
    assert "benchmark" not in data
    assert keys[keys.index("question_id") :][:4] == ["question_id", "question_type", "sessions_per_step", "group"]
    assert data["question_id"] == "q7" and "metric" not in data and "locomo_category" not in data
    # A case of no benchmark has no group, and none of its keys.
    plain = record_of(a_run("12345.67"))
    assert not set(BENCHMARK_FIELDS) & set(plain)
    assert CaseRecord.from_json(plain).benchmark is None


def test_one_reader_takes_every_schema_version_back_to_the_same_record() -> None:
    record = benchmark_record()
    version_1 = record.as_json()
    step_defaults = {"signal": None, "timed_out": False}
    report_top = {"command": "agent", "run_mode": {"home": "case"}, "step_defaults": step_defaults}
    version_2 = case_compactor(run_report(report_top))(version_1)
    assert "command" not in version_2 and "run_mode" not in version_2
    assert CaseRecord.from_json(version_1) == record
    assert CaseRecord.from_json(version_2, report_top) == record
    assert CaseRecord.from_json(version_2, report_top).as_json() == version_1


def test_a_record_of_an_older_version_is_written_back_with_the_keys_it_had() -> None:
    older = {key: value for key, value in record_of(a_run("12345.67")).items() if key not in ("attempts", "tokens_in")}
    record = CaseRecord.from_json(older)
    assert record.as_json() == older and list(record.as_json()) == list(older)


PACKAGE = Path(pytest_recall.__file__).parent
# Spellings of "did it pass?" and "does the item fail?" that the record's and the scoring's one place replaced.
REMOVED_PREDICATES = ("record_passed", "record_fails_item", "published_record", "_PUBLISHED")


def test_one_predicate_for_passed_and_one_for_failing_the_item() -> None:
    texts = {path: path.read_text("utf-8") for path in PACKAGE.rglob("*.py")}
    for name in REMOVED_PREDICATES:
        assert not [path for path, text in texts.items() if re.search(rf"\b{name}\b", text)], name
    defined = [path.name for path, text in texts.items() for _ in re.finditer(r"def (fails_item|passed)\(", text)]
    assert defined == ["records.py"]
    assert [path.name for path, text in texts.items() if "def scored_a_pass(" in text] == ["passing.py"]


# Names a whole case record, or its per-case view, goes by; none of them is a bare mapping in the package.
RECORD_NAMES = frozenset({"record", "records", "summary", "summaries"})
# The public hooks hand a plugin the record's JSON, as the README describes it: a boundary like a file.
PUBLIC_HOOK_FILES = frozenset({"hookspecs.py", "hooks.py", "runlog.py"})


def _mapping_typed(annotation: ast.expr | None) -> bool:
    text = ast.unparse(annotation) if annotation is not None else ""
    return re.match(r"(Mapping|dict|Sequence\[Mapping|list\[dict|Iterable\[Mapping)\b", text) is not None


def record_params_typed_as_mappings(files: Iterable[Path]) -> list[str]:
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if path.name in PUBLIC_HOOK_FILES and node.name.startswith("pytest_recall_"):
                continue  # a hook's argument names are its public API
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            for arg in args:
                if arg.arg in RECORD_NAMES and _mapping_typed(arg.annotation):
                    found.append(f"{path.name}:{node.lineno} {node.name}({arg.arg})")
    return found


# The modules a record crosses in one process, from the item to the spool: it is the object all the way.
IN_PROCESS_PATH = ("items", "recorder", "junit", "xdist_handoff", "executor", "task_graders", "records", "spool")


def test_no_record_is_a_bare_mapping_on_its_way_from_the_item_to_the_spool() -> None:
    on_the_path = [path for path in PACKAGE.rglob("*.py") if path.stem in IN_PROCESS_PATH]
    assert len(on_the_path) == len(IN_PROCESS_PATH)
    assert record_params_typed_as_mappings(on_the_path) == []
    # Elsewhere too: where a function reads a record's JSON (a report file, the log, a schema migration), its
    # parameter says so (``row``, ``case_rows``); the hooks that hand a plugin the record's JSON keep their names.
    assert record_params_typed_as_mappings(PACKAGE.rglob("*.py")) == []


def test_the_summary_is_a_slotted_frozen_dataclass_that_both_edges_make_alike() -> None:
    from pytest_recall.reporting.spool import CaseSummary, summary_of, summary_of_row

    record = dataclasses.replace(benchmark_record(), content_hash="ab" * 32)
    summary = summary_of(record)
    assert dataclasses.is_dataclass(summary) and isinstance(summary, CaseSummary)
    assert not hasattr(summary, "__dict__"), "slots: no per-instance dict"
    with pytest.raises(dataclasses.FrozenInstanceError):
        summary.score = 0.0  # type: ignore[misc]
    assert summary.content_digest == bytes.fromhex("ab" * 32) and summary.content_hash == "ab" * 32
    assert (summary.score, summary.sessions_per_step, summary.run_home) == (1.0, 3, "case")
    assert summary_of_row(record.as_json()) == summary


# A comparison with 1.0 that is no score: chance agreement in the two kappas, which is 1 when raters cannot disagree.
NOT_A_SCORE = frozenset({"expected >= 1.0", "chance >= 1.0"})


def _one_operand(node: ast.expr) -> bool:
    named = isinstance(node, ast.Name) and node.id == "PASS_SCORE"
    return named or (isinstance(node, ast.Constant) and type(node.value) is float and node.value == 1.0)


def _a_pass_asked(node: ast.Compare) -> bool:
    """A comparison with 1.0 (or ``PASS_SCORE``), but not a range's check ``0.0 <= x <= 1.0``, which asks no pass."""
    ranged = len(node.comparators) == 2 and all(isinstance(op, (ast.LtE, ast.Lt)) for op in node.ops)
    return not ranged and any(_one_operand(operand) for operand in [node.left, *node.comparators])


def test_no_score_is_compared_with_a_pass_outside_the_pass_predicate() -> None:
    compared = [
        f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node)}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "scoring" / "passing.py"
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.Compare) and _a_pass_asked(node) and ast.unparse(node) not in NOT_A_SCORE
    ]
    assert compared == [], "ask scoring.passing.scored_a_pass whether a score is a pass"
    assert not [path for path in PACKAGE.rglob("*.py") if re.search(r"\bPASS_SCORE\b", path.read_text("utf-8"))]
