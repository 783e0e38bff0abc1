"""Which answers the judge command sees, when its verdict is the score, and how the report counts it (issue 30)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from report_docs import run_report

from pytest_recall.cases.model import Case, Step
from pytest_recall.cases.runs import CaseRun, LlmJudgement, SessionResult, StepRun
from pytest_recall.reporting.judge_section import judge_section, judge_summary_lines
from pytest_recall.reporting.spool import summary_of_row
from pytest_recall.scoring.judge_scope import judge_cache_key, judge_request, judged_by_llm, llm_decides
from pytest_recall.scoring.llm_verdict import settle
from pytest_recall.scoring.verdict import Verdict
from pytest_recall.sessions.llm_judging import LlmJudgeSettings, LlmJudging
from pytest_recall.sessions.shared_verdicts import SharedVerdicts


@pytest.mark.parametrize(
    ("expected", "both", "judged"),
    [
        ({"answer_kind": "longmemeval", "answer": "Paris"}, False, True),
        ({"answer_kind": "locomo", "answer": "Paris"}, False, True),
        ({"answer_kind": "free", "answer": "Postgres"}, False, True),
        ({"answer_kind": "money", "answer": "12345.67"}, False, False),
        ({"answer_kind": "money", "answer": "12345.67"}, True, True),
        ({"answer_kind": "voucher", "answer": "AR-2026-0042"}, True, True),
        ({"answer_kind": "files", "answer": [{"path": "a.py"}]}, True, False),
        ({"answer_kind": "evidence_json", "answer": {"value": "x", "evidence": []}}, True, False),
    ],
)
def test_free_form_kinds_always_go_to_the_judge_and_the_rest_with_both(
    expected: dict[str, Any], both: bool, judged: bool
) -> None:
    assert judged_by_llm(expected, both=both) is judged


@pytest.mark.parametrize(
    ("kind", "free_form", "decides"),
    [
        ("free", "deterministic", True),
        ("longmemeval", "deterministic", False),
        ("longmemeval", "llm", True),
        ("locomo", "llm", True),
        ("money", "llm", False),
    ],
)
def test_the_judge_decides_a_free_case_and_a_free_form_one_only_by_choice(
    kind: str, free_form: Any, decides: bool
) -> None:
    assert llm_decides({"answer_kind": kind}, free_form) is decides


@pytest.mark.parametrize(
    ("expected", "decides"),
    [
        ({"answer_kind": "beam", "beam_ability": "instruction_following"}, True),
        ({"answer_kind": "beam", "beam_ability": "information_extraction"}, False),
        ({"answer_kind": "memoryagentbench", "mab_metric": "llm_judge", "mab_source": "infbench_sum"}, True),
        ({"answer_kind": "memoryagentbench", "mab_metric": "substring_exact_match"}, False),
    ],
)
def test_the_judge_decides_an_imported_question_no_metric_can_read(expected: dict[str, Any], decides: bool) -> None:
    assert llm_decides(expected, "deterministic") is decides


def a_case(expected: dict[str, Any]) -> Case:
    base = {"id": "c", "category": "recall", "answer": "Paris", "answer_kind": "longmemeval"}
    return Case("c_abs", "lme", (Step(1, "the haystack"), Step(2, "Where did I move?")), {**base, **expected}, "lme/c")


def test_a_request_carries_the_question_its_type_and_the_answer_tail() -> None:
    request = judge_request(a_case({"question_type": "knowledge-update"}), "  I think Paris.\n")
    assert request == {
        "case_id": "lme/c_abs",
        "kind": "longmemeval",
        "question": "Where did I move?",
        "gold": "Paris",
        "answer": "I think Paris.",
        "question_type": "knowledge-update",
    }
    assert judge_request(a_case({"question": "Which city?", "abstention": True}), "x")["question_type"] == "abstention"
    assert judge_request(a_case({}), "x" * 10_000)["answer"] == "x" * 4000


def test_the_cache_key_is_the_command_and_the_request_but_not_which_case_asked() -> None:
    request = judge_request(a_case({}), "Paris")
    same = {**request, "case_id": "lme/another"}
    assert judge_cache_key(["j"], request) == judge_cache_key(["j"], same)
    assert judge_cache_key(["j"], request) != judge_cache_key(["j", "-m", "x"], request)
    assert judge_cache_key(["j"], request) != judge_cache_key(["j"], {**request, "answer": "Rome"})


def deterministic(score: float | None, outcome: str = "wrong") -> Verdict:
    return Verdict(score, "built-in", outcome=outcome)


@pytest.mark.parametrize(
    ("verdict", "judgement", "score", "outcome", "error"),
    [
        (deterministic(0.0), LlmJudgement(1.0, "fine"), 0.0, "wrong", None),
        (deterministic(0.0), LlmJudgement(1.0, "fine", decides=True), 1.0, "correct", None),
        (deterministic(None, "error"), LlmJudgement(0.0, decides=True), 0.0, "wrong", None),
        (deterministic(0.0, "unknown"), LlmJudgement(0.0, decides=True), 0.0, "unknown", None),
        (deterministic(1.0, "correct"), LlmJudgement(None, error="timed out", decides=True), None, "error", "judge"),
        (deterministic(0.0, "timed_out"), LlmJudgement(1.0, decides=True), 0.0, "timed_out", None),
    ],
)
def test_the_judge_replaces_the_score_only_where_it_decides_and_an_error_is_no_zero(
    verdict: Verdict, judgement: LlmJudgement, score: float | None, outcome: str, error: str | None
) -> None:
    settled = settle(verdict, judgement)
    assert (settled.score, settled.outcome) == (score, outcome)
    assert (settled.error or "").startswith(error or "") and bool(settled.error) is bool(error)
    if judgement.decides and verdict.outcome != "timed_out":
        assert settled.details["deterministic_score"] == verdict.score


def judged(case: str, kind: str, built_in: float | None, llm: float | None, **more: Any) -> dict[str, Any]:
    verdict = {"score": llm, "error": None if llm is not None else "boom", "deterministic_score": built_in}
    return {"suite": "s", "id": case, "answer_kind": kind, "score": built_in, "llm_judge": {**verdict, **more}}


def test_the_report_section_counts_errors_apart_and_lists_each_disagreement() -> None:
    records = [
        judged("a", "money", 1.0, 1.0, tokens_in=5, cost_usd=0.01),
        judged("b", "money", 0.0, 1.0, tokens_in=5, cost_usd=0.01),
        judged("c", "voucher", 0.0, 0.0, cached=True),
        judged("d", "voucher", 1.0, None),
        judged("e", "free", None, 1.0, decides=True),
        {"suite": "s", "id": "f", "answer_kind": "money", "score": 1.0},
    ]
    section = judge_section([summary_of_row(r) for r in records])["llm_judge"]
    assert (section["n_judged"], section["n_errors"], section["n_cached"], section["n_decided"]) == (5, 1, 1, 1)
    assert section["cost_usd"] == 0.02 and section["tokens_in"] == 10 and section["tokens_out"] is None
    assert section["agreement"]["n"] == 3 and section["agreement"]["agreed"] == 2
    assert section["agreement"]["disagreements"] == [
        {"case": "s/b", "kind": "money", "deterministic": False, "llm": True}
    ]
    lines = judge_summary_lines(run_report({"llm_judge": section}))
    assert "5 answers judged (1 cached), 1 judge error (not agent failures); cost $0.0200" in lines[0]
    assert lines[-1] == "    disagree: s/b (money): built-in judge fail, LLM judge pass"
    assert judge_section([summary_of_row(records[-1])]) == {}


# Says yes to Paris and something unreadable (a judge error) to anything else, slowly enough to be asked twice at once;
# it names its prompt's hash in its cost file, as recall-judge does.
STUB = (
    "import json,os,sys,time; a = json.load(sys.stdin)['answer']; time.sleep(0.3); "
    "open(os.environ['RECALL_COST_FILE'], 'w').write(json.dumps({'prompt_sha256': 'ab' * 32})); "
    "print('yes' if a=='Paris' else '?')"
)


def a_run(answer: str) -> CaseRun:
    raw = answer.encode()
    result = SessionResult(0, None, False, 0.1, raw, b"", len(raw), 0, False)
    return CaseRun(a_case({}), (StepRun(2, "p", result, answer, "", None),))


def test_the_same_answer_is_judged_once_even_in_flight_and_an_error_is_asked_again(tmp_path: Path) -> None:
    settings = LlmJudgeSettings(text="stub", argv=(sys.executable, "-c", STUB))
    shared = SharedVerdicts(str(tmp_path), "ab" * 32)
    judging = LlmJudging(settings, retries=0, retry_delay_s=0.0, workers=2, shared=shared)
    try:
        first, second = judging.submit(a_run("Paris")), judging.submit(a_run("Paris"))
        broken, again = judging.submit(a_run("Rome")), judging.submit(a_run("Rome"))
        verdicts = [future.result(timeout=60) for future in (first, second, broken, again)]
    finally:
        judging.close()
    assert [(v.score, v.cached, v.attempts) for v in verdicts[:2]] == [(1.0, False, 1), (1.0, True, 0)]
    assert all(v.error and not v.cached and v.attempts == 1 for v in verdicts[2:])
    # Shared with the run's other workers through the folder: another process takes it as cached.
    other = LlmJudging(settings, retries=0, retry_delay_s=0.0, workers=1, shared=shared)
    try:
        shared = other.submit(a_run("Paris")).result(timeout=5)
    finally:
        other.close()
    assert shared.score == 1.0 and shared.cached
    # The prompt that gave it travels with it: the worker that took it says which, as the one that asked does.
    assert verdicts[0].prompt_sha256 == shared.prompt_sha256 == "ab" * 32
