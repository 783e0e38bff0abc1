"""Issue 54, holes 1 and 4: the numbers an agent reports are bounded before anything adds them up.

An agent with no memory that writes a cost it could never have spent (a
400-digit dollar figure, a 4000-digit token count, 1e308 at every step) must
score 0 for it as its own failure, with the reason, in the default mode and
under bwrap: never an error that leaves the score, never a report that
cannot be written.
"""

from __future__ import annotations

import math
import sys
from collections import UserList
from pathlib import Path
from typing import Any

import pytest
from test_agent_plants import STEPS, agent_tmp, assert_agent_failure, planter
from test_hostile import MODES, mode_args
from test_resume_records import strict_json
from test_traptask import run_task_agent
from test_workspace import add_workspace_case

from conftest import AGENTS_DIR
from pytest_recall.sessions.rooms import remove_tree

# The inner runs' TMPDIR, which the planter's area must be gone from.
pytestmark = pytest.mark.usefixtures(agent_tmp.__name__)

HUGE_DOLLARS = '{"cost_usd": 1' + "0" * 400 + "}"
HUGE_TOKENS = '{"cost_usd": 0.01, "tokens_in": 1' + "0" * 4000 + "}"
NEAR_MAX_FLOAT = '{"cost_usd": 1e308}'


def run_cases(recall_suite: Any, mode: str, *trick: str, cases: int = 4) -> Any:
    for number in range(cases):
        recall_suite.add(f"case_{number}", STEPS)
    return recall_suite.run(*mode_args(mode), command=planter(*trick))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("cost", "reason"),
    [(HUGE_DOLLARS, "cost_usd 1000000000"), (HUGE_TOKENS, "tokens_in 1000000000")],
    ids=["dollars", "tokens"],
)
def test_a_huge_number_at_the_last_step_is_the_agents_failure_not_an_error(
    recall_suite: Any, mode: str, cost: str, reason: str
) -> None:
    result = run_cases(recall_suite, mode, "cost-last", cost)
    result.assert_outcomes(failed=4)
    for record in recall_suite.records().values():
        assert_agent_failure(record, "RECALL_COST_FILE", reason, "more than")
        assert (record["cost_usd"], record["tokens_in"]) == (None, None)
    report = recall_suite.report()
    assert report["score"] == 0.0 and report["n_errors"] == 0


@pytest.mark.parametrize("mode", MODES)
def test_a_cost_no_sum_can_hold_still_leaves_a_report(recall_suite: Any, mode: str) -> None:
    result = run_cases(recall_suite, mode, "cost", NEAR_MAX_FLOAT, cases=2)
    for record in recall_suite.records().values():
        assert_agent_failure(record, "RECALL_COST_FILE", "cost_usd 1e+308", "more than")
    report = recall_suite.report()
    assert report["cost_usd_total"] is None and report["score"] == 0.0
    result.assert_outcomes(failed=2)


def test_the_report_writer_writes_a_non_finite_number_in_a_streamed_case_as_null(tmp_path: Path) -> None:
    """Defence in depth: were a NaN or an infinity to reach a case record, the report is still written, strict."""
    from pytest_recall.reporting.files import write_json_atomic

    # A sequence that is no list is what the writer streams, one case a line (the spool's records).
    cases = UserList([{"id": "a", "cost_usd": math.inf, "steps": [{"tokens_in": -math.inf, "cost_usd": math.nan}]}])
    path = tmp_path / "report.json"
    write_json_atomic(path, {"cost_usd_total": math.inf, "cases": cases}, line_each="cases")
    written = strict_json(path.read_text(encoding="utf-8"))
    assert written == {
        "cost_usd_total": None,
        "cases": [{"id": "a", "cost_usd": None, "steps": [{"tokens_in": None, "cost_usd": None}]}],
    }


# -- the general rule: what the agent prints is rendered, never raised on -----------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_control_sequence_with_a_5000_digit_count_is_rendered_and_scored(recall_suite: Any, mode: str) -> None:
    """pyte reads a sequence's count with int(), which refuses over 4300 digits: the case was an error."""
    result = run_cases(recall_suite, mode, "long-escape", "5000", cases=2)
    for record in recall_suite.records().values():
        assert (record["error"], record["score"], record["outcome"]) == (None, 0.0, "unknown"), record
    result.assert_outcomes(failed=2)


def test_a_live_screen_takes_a_5000_digit_count_in_pieces() -> None:
    from pytest_recall.sessions.render import LiveScreen

    screen, sequence = LiveScreen(), ("\x1b[" + "9" * 5000 + "D12345.67\r\n").encode("ascii")
    mark = screen.mark()
    for start in range(0, len(sequence), 1024):  # as a pty hands it over, a sequence cut across reads
        screen.feed(sequence[start : start + 1024])
    assert screen.changed_since(mark).strip() == "12345.67"


@pytest.mark.parametrize("mode", MODES)
def test_an_evidence_answer_nested_past_the_parser_is_a_malformed_answer(recall_suite: Any, mode: str) -> None:
    """The judge parsed the agent's last line with json.loads, whose RecursionError made the case an error."""
    expected: Any = {"value": "jade", "evidence": ["E1-2"]}
    recall_suite.add("nested", ["say noted", "say " + "[" * 5000], expected, kind="evidence_json")
    binds = [f"--recall-sandbox-bind={AGENTS_DIR}"] if mode == "bwrap" else []
    result = recall_suite.run(*mode_args(mode), *binds)
    record = recall_suite.records()["nested"]
    assert (record["error"], record["score"], record["outcome"]) == (None, 0.0, "wrong"), record
    assert "nested too deep" in record["reason"]
    result.assert_outcomes(failed=1)


def test_an_evidence_answer_of_a_million_citations_is_judged_in_one_pass() -> None:
    from pytest_recall.scoring.evidence_judge import score_evidence_json

    expected = {"id": "t", "category": "c", "answer": {"value": "jade", "evidence": ["E1-2"]}}
    cited = ",".join(f'"E{index % 400_000}"' for index in range(800_000))
    verdict = score_evidence_json('{"value": "jade", "evidence": [' + cited + "]}", expected)
    assert verdict["score"] == 0.0 and verdict["reason"].endswith("(400,000 in all) cited more than once")


# -- the general rule: an agent that breaks its own program ----------------------------------------


@pytest.mark.parametrize("how", ["unlink", "chmod"])
def test_an_agent_that_removes_its_own_program_fails_its_later_steps(
    recall_suite: Any, tmp_path_factory: pytest.TempPathFactory, how: str
) -> None:
    """Default mode only: under bwrap the agent's folder is bound read-only, and a missing program is bwrap's exit."""
    recall_suite.add("case_0", STEPS)
    program = tmp_path_factory.mktemp("programs") / "agent"
    source = (Path(__file__).parent / "hostile" / "self_remover.py").read_text(encoding="utf-8")
    program.write_text(f"#!{sys.executable}\n{source}", encoding="utf-8")
    program.chmod(0o755)
    recall_suite.run(command=f"{program} {how}").assert_outcomes(failed=1)
    record = recall_suite.records()["case_0"]
    assert_agent_failure(record, "its command no longer starts after step 1")
    assert len(record["steps"]) == 1


# -- the general rule: a file the agent leaves is judged, never raised on ----------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("name", "start"), [("data.json", ""), ("conf.toml", "a = ")], ids=["json", "toml"])
def test_a_judged_file_nested_past_the_parser_fails_its_check(
    recall_suite: Any, mode: str, name: str, start: str
) -> None:
    """Both parsers recurse per level: a file of 5000 brackets raised RecursionError and the case was an error."""
    test = name.rsplit(".", 1)[1]
    checks = [{"path": name, test: "a", "equals": 1}]
    add_workspace_case(recall_suite, "nested", ["WRITE notes.txt one", f"WRITE {name} {start}{'[' * 5000}"], checks)
    binds = [f"--recall-sandbox-bind={AGENTS_DIR}"] if mode == "bwrap" else []
    result = recall_suite.run(*mode_args(mode), *binds, command=recall_suite.agent("workspace_editor"))
    record = recall_suite.records()["nested"]
    assert (record["error"], record["score"]) == (None, 0.0), record
    assert f"{name} {test} a equals 1: it is {test.upper()} nested too deep to read" in record["reason"]
    result.assert_outcomes(failed=1)


# -- the general rule: what the agent plants beside its workspace --------------------------------


def test_a_folder_planted_where_the_workspace_is_carried_is_the_agents_failure(recall_suite: Any) -> None:
    """Default mode only: under bwrap the case's area, beside the step's folder, is out of the agent's sight."""
    recall_suite.add("case_0", STEPS, toml='workspace = "carry"\n')
    recall_suite.run(command=planter("plant-carried")).assert_outcomes(failed=1)
    record = recall_suite.records()["case_0"]
    assert_agent_failure(record, "the workspace could not be kept after step 1")
    assert len(record["steps"]) == 1


def test_a_value_no_report_can_hold_is_one_error_line_not_a_traceback(recall_suite: Any) -> None:
    """Defence in depth: a value the writer cannot write (here a hook's 5000-digit integer) is said in one line."""
    recall_suite.add("case_0", STEPS)
    recall_suite.pytester.makeconftest(
        "def pytest_recall_modify_report(report, config):\n    report['huge'] = 10 ** 5000\n"
    )
    result = recall_suite.run(command=planter("none"))
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(["  ERROR: could not write the report to *report.json: Exceeds the limit*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


# -- the general rule: another case's files, rewritten before that case is read again ------------


@pytest.mark.parametrize("name", ["answer.json", "case.toml"])
def test_a_case_file_an_agent_nested_past_its_parser_scores_that_case_0(recall_suite: Any, name: str) -> None:
    """Default mode: a case is read again as it starts, and its parser's RecursionError made it an error."""
    recall_suite.add("case_0", STEPS)
    later = recall_suite.add("case_1", STEPS, toml="timeout = 30\n")
    result = recall_suite.run(command=planter("nested-at", str(later / name)), timeout=60)
    result.assert_outcomes(failed=2)
    record = recall_suite.records()["case_1"]
    assert (record["error"], record["score"], record["outcome"]) == (None, 0.0, "wrong"), record
    assert "case files changed on disk before it ran" in record["reason"]


# A trap task's agent that replaces what the task judge reads, in default mode, and answers wrong.
TASK_VANDAL = """\
import os, sys
from pathlib import Path

task, how = Path(sys.argv[1]), sys.argv[2]
answer, judge = task / "expected" / "case_a" / "answer.json", task / "judge.py"
if os.environ["RECALL_STEP"] == "1":
    if how == "nested-answer":
        answer.write_text("[" * 5000)
    else:
        target = answer if how == "fifo-answer" else judge
        target.unlink()
        os.mkfifo(target)
print("anything")
"""


@pytest.mark.parametrize("how", ["nested-answer", "fifo-answer", "fifo-judge"])
def test_a_trap_task_file_an_agent_replaced_scores_0(recall_suite: Any, how: str) -> None:
    """Checked after the run, the task's answer nested past the parser raised; a FIFO in its place, or the
    judge's, blocked the open that read it, and the run with it."""
    run_task_agent(recall_suite, TASK_VANDAL, how).assert_outcomes(failed=1)
    record = recall_suite.records()["case_a"]
    assert (record["error"], record["score"]) == (None, 0.0), record
    assert record["reason"].startswith("case files changed on disk during the run: ")


@pytest.mark.parametrize("trick", ["deep-at", "sparse-at"])
def test_a_tree_planted_in_a_later_cases_workspace_scores_that_case_0(recall_suite: Any, trick: str) -> None:
    """Default mode: read again as it starts, a workspace 1100 deep raised os.walk's RecursionError (Python 3.11),
    and a sparse terabyte was read whole before its size was counted."""
    recall_suite.add("case_0", STEPS)
    later = recall_suite.add("case_1", STEPS)
    (later / "workspace" / "src").mkdir(parents=True)
    (later / "workspace" / "src" / "app.py").write_text("x = 1\n", encoding="utf-8")
    result = recall_suite.run(command=planter(trick, str(later / "workspace")), timeout=60)
    result.assert_outcomes(failed=2)
    record = recall_suite.records()["case_1"]
    assert (record["error"], record["score"], record["outcome"]) == (None, 0.0, "wrong"), record
    assert "case files changed on disk before it ran" in record["reason"]
    remove_tree(later / "workspace")  # iteratively: pytest's own clean-up of tmp_path recurses
