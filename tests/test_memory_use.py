"""What a case's tapped memory calls say: used or not, what the reads returned, and retrieval against reasoning."""

from __future__ import annotations

from pytest_recall.cases.runs import MemoryCall, MemoryCalls, SessionResult, StepRun
from pytest_recall.scoring import score_evidence
from pytest_recall.scoring.memory_use import MemoryUse, case_memory_use, evidence_of, memory_figures, retrieved

RESULT = SessionResult(None, None, False, 0.1, b"", b"", 0, 0, False)


def call(tool: str, kind: str, text: str = "", latency: float = 2.0, server: str = "memory") -> MemoryCall:
    return MemoryCall(server, tool, kind, 10, len(text.encode()), text, False, latency)


def step(number: int, *calls: MemoryCall, tapped: bool = True) -> StepRun:
    memory = MemoryCalls(offered=("memory/remember",), calls=calls) if tapped else None
    return StepRun(number, "prompt", RESULT, "", "", None, memory_calls=memory)


def test_writes_before_and_reads_in_the_last_step_are_counted_apart() -> None:
    use = case_memory_use(
        [step(1, call("remember", "write")), step(2, call("recall", "read", "the balance is 12,345.67"))],
        ["12,345.67"],
    )
    assert use is not None
    assert (use.writes_before, use.reads_last, use.calls, use.unused) == (1, 1, 2, False)
    assert use.returned_bytes == len("the balance is 12,345.67") and use.returned_tokens == 6
    assert use.evidence_retrieved is True
    assert use.latency_ms == {"memory": (2.0, 2.0)}


def test_a_case_that_never_wrote_nor_read_left_its_memory_unused() -> None:
    use = case_memory_use([step(1), step(2, call("remember", "write"))], ["12,345.67"])
    assert use is not None and use.unused and use.evidence_retrieved is False


def test_no_tapped_step_is_no_memory_use_at_all() -> None:
    assert case_memory_use([step(1, tapped=False), step(2, tapped=False)], ["x"]) is None


def test_evidence_is_matched_normalised_and_too_short_evidence_is_none() -> None:
    reads = [call("recall", "read", "Note: The Balance Is  12,345.67!")]
    assert retrieved(["the balance is 12 345 67"], reads) is True
    assert retrieved(["12,345.68"], reads) is False
    assert retrieved(["no"], reads) is None
    assert evidence_of({"answer": "Kestrel", "evidence_text": ["Kestrel moved to Ash Row"]}) == [
        "Kestrel moved to Ash Row"
    ]
    assert evidence_of({"answer": 12.5}) == ["12.5"]


def test_the_json_form_reads_back() -> None:
    use = case_memory_use([step(1, call("remember", "write")), step(2, call("recall", "read", "x"))], [])
    assert use is not None and MemoryUse.from_json(use.as_json()) == use


def test_memory_figures_give_the_score_with_and_without_unused_cases_and_the_two_by_two_table() -> None:
    used = MemoryUse(1, 1, 2, 0, 40, {"memory": (1.0, 3.0)}, evidence_retrieved=True)
    reasoning_failure = MemoryUse(1, 1, 2, 0, 40, {"memory": (2.0,)}, evidence_retrieved=True)
    unused = MemoryUse(0, 0, 0, 0, 0, {}, evidence_retrieved=False)
    control = MemoryUse(0, 1, 1, 0, 0, {"memory": (1.0,)})
    figures = memory_figures(
        [
            (used, 1.0, False, "facts"),
            (reasoning_failure, 0.0, False, "facts"),
            (unused, 0.0, False, "dates"),
            (control, 0.0, True, "facts"),
        ]
    )
    assert figures is not None
    assert (figures["cases"], figures["unused"], figures["control_calls"]) == (3, 1, 1)
    assert figures["score_all"] == 1 / 3 and figures["score_used"] == 0.5
    assert figures["retrieval_table"] == {
        "retrieved_right": 1,
        "retrieved_wrong": 1,
        "missed_right": 0,
        "missed_wrong": 1,
    }
    assert figures["evidence_recall_by_category"] == {"dates": 0.0, "facts": 1.0}
    assert figures["latency_ms"]["memory"] == {"p50": 2.0, "p95": 3.0, "calls": 3}


def test_the_evidence_judge_scores_the_evidence_not_the_answer() -> None:
    expected = {"category": "single-hop", "answer": "a dance studio", "evidence_text": ["I'm opening a dance studio."]}
    returned = '[{"text": "Jon: I lost my job, so I\'m opening a Dance Studio!"}]'
    found = score_evidence(returned, expected)
    assert (found["score"], found["category"]) == (1.0, "single-hop")
    assert found["reason"] == f"evidence found in {len(returned)} bytes returned (of 1 evidence text)"
    # The answer alone, without the evidence turn, is not the evidence retrieved.
    assert score_evidence("a dance studio", expected)["score"] == 0.0
    # No evidence_text: the answer is the evidence; too short to look for is said, and scores 0.
    assert score_evidence("the balance is 12,345.67", {"answer": "12,345.67"})["score"] == 1.0
    assert "needs the case's evidence_text" in score_evidence("no", {"answer": "no"})["reason"]


def test_a_summary_holds_the_memory_use_object_read_from_a_row_once() -> None:
    """No round trip in process: the aggregates read the tap's object, made from JSON only at a row's edge."""
    from pytest_recall.reporting.spool import summary_of_row
    from pytest_recall.scoring.figures import memory_section

    use = MemoryUse(1, 1, 2, 0, 40, {"notes": (1.0, 3.0)}, evidence_retrieved=True)
    summary = summary_of_row({"nodeid": "s/a::recall", "score": 1.0, "memory_use": use.as_json()})

    assert summary.memory_use == use
    section = memory_section([summary])
    assert section is not None and section["cases"] == 1 and section["unused"] == 0
