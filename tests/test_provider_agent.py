"""``recall-provider``: a memory library run as the agent, through the harness, with the tiny keyword store.

Each step is a fresh process, so the question is answered only from what the
provider kept in the case's scope; the record keeps what the search returned
(``memory_use``), and a provider that raises is the agent's failure.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from conftest import SEED_SUITE
from pytest_recall.agents import provider
from pytest_recall.testing import FakeModelServer
from pytest_recall.testing.fake_brain import read_memories, recalled

PROVIDER = str(Path(sys.executable).with_name("recall-provider"))
KEYWORDS = "pytest_recall.agents.keyword_provider:KeywordStore"


def command(*args: str) -> str:
    return shlex.join([PROVIDER, *args])


def test_the_question_is_answered_from_what_search_returned_and_the_report_has_its_figures(recall_suite: Any) -> None:
    shutil.copytree(SEED_SUITE / "case_01", recall_suite.root / "seed" / "case_01")
    with FakeModelServer("plain") as model:
        result = recall_suite.run(
            "--recall-control", command=command(KEYWORDS, "--model-url", f"{model.base_url}/v1", "--name", "keywords")
        )
    cases = {record["control"]: record for record in recall_suite.report()["cases"]}
    assert (cases[False]["score"], cases[True]["score"]) == (1.0, 0.0)
    use = cases[False]["memory_use"]
    assert (use["writes_before"], use["reads_last"], use["errors"]) == (1, 1, 0), use
    assert use["returned_bytes"] > 1000 and len(use["latency_ms"]["keywords"]) == 2
    # The control searched an empty store: one call, nothing returned.
    assert cases[True]["memory_use"]["calls"] == 1 and cases[True]["memory_use"]["returned_bytes"] == 0
    figures = recall_suite.report()["memory"]["latency_ms"]["keywords"]
    assert figures["calls"] == 2 and figures["p50"] is not None and figures["p95"] >= figures["p50"]
    result.stdout.fnmatch_lines(
        [
            "*control (no memory): score 0.000*",
            "*memory (the agent's own log): 1 of 1 case used it*",
            f"*returned to the question: median {use['returned_tokens']} tokens (the last step's reads)*",
            "*keywords: 2 calls, p50 * ms, p95 * ms*",
        ]
    )


def test_retrieval_only_prints_what_search_returned_for_the_evidence_judge(recall_suite: Any) -> None:
    recall_suite.add(
        "race",
        [
            "Session 1 of 1, held on 8 May 2023:\nMel: I ran a charity race for mental health.\n"
            "Reply OK once you have stored what you need.",
            "Question: What did the charity race raise awareness for?",
        ],
        answer="mental health",
        kind="locomo",
    )
    recall_suite.run(
        "--recall-control", "--recall-answer-judge=evidence", command=command(KEYWORDS, "--retrieval-only")
    )
    cases = {record["control"]: record for record in recall_suite.report()["cases"]}
    assert (cases[False]["score"], cases[True]["score"]) == (1.0, 0.0)
    assert "charity race for mental health" in cases[False]["steps"][-1]["stdout"]
    assert cases[False]["memory_use"]["evidence_retrieved"] is True


RAISING = """
    from pytest_recall.agents.keyword_provider import KeywordStore

    class Broken(KeywordStore):
        def search(self, query, limit):
            raise RuntimeError("the index is corrupt\\nsecond line")

    def refusing(scope):
        raise ValueError("no API key for the vector store")
"""


@pytest.mark.parametrize(
    ("factory", "reason"),
    [
        ("broken_provider:Broken", "*the provider's search raised RuntimeError: the index is corrupt*"),
        ("broken_provider:refusing", "*the provider's FACTORY raised ValueError: no API key for the vector store*"),
    ],
)
def test_a_provider_that_raises_is_the_agents_failure(
    recall_suite: Any, monkeypatch: pytest.MonkeyPatch, factory: str, reason: str
) -> None:
    (recall_suite.pytester.path / "broken_provider.py").write_text(textwrap.dedent(RAISING), encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(recall_suite.pytester.path))
    recall_suite.add("balance", ["Remember the balance 12345.67.", "Question: What was the balance?"])
    result = recall_suite.run(command=command(factory, "--retrieval-only"))
    result.assert_outcomes(failed=1)
    (record,) = recall_suite.report()["cases"]
    assert (record["score"], record["outcome"]) == (0.0, "agent_failed")
    result.stdout.fnmatch_lines([reason])
    assert "second line" not in result.stdout.str()


def test_a_step_outside_the_harness_says_how_to_run_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RECALL_SCOPE_DIR", str(tmp_path))
    monkeypatch.delenv("RECALL_LAST_STEP", raising=False)
    assert provider.main([KEYWORDS, "hello"]) == provider.FAILED
    assert capsys.readouterr().err == (
        "recall-provider: RECALL_STEP and RECALL_LAST_STEP are not set; run it under pytest-recall\n"
    )


@pytest.mark.parametrize(
    ("prompt", "query"),
    [
        ("Answer this.\n\nQuestion: Where did Mel run?\n\nAnswer briefly.", "Where did Mel run?"),
        ("Report the closing balance.", "Report the closing balance."),
    ],
)
def test_the_question_line_is_what_is_searched(prompt: str, query: str) -> None:
    assert provider.query_of(prompt) == query


def test_the_fake_model_answers_only_from_the_memories_it_is_shown() -> None:
    ledger = (SEED_SUITE / "case_01" / "step1.txt").read_text(encoding="utf-8")
    question = (SEED_SUITE / "case_01" / "step2.txt").read_text(encoding="utf-8")
    assert recalled(read_memories(provider.memory_block([ledger])), question) == "27436.42"
    assert recalled(read_memories(provider.memory_block([])), question) == "UNKNOWN"
    assert provider.memories_in(provider.memory_block(["one", "two\nlines"])) == ["one", "two\nlines"]


ECHOING = """
    import os

    class Echo:
        def __init__(self, scope):
            pass

        def add(self, text):
            pass

        def search(self, query, limit):
            return ["OPENAI_BASE_URL=" + os.environ.get("OPENAI_BASE_URL", "unset")]
"""


def test_the_model_url_is_the_providers_openai_base_url_when_that_is_unset(
    recall_suite: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (recall_suite.pytester.path / "echo_provider.py").write_text(textwrap.dedent(ECHOING), encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(recall_suite.pytester.path))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    recall_suite.add(
        "url", ["Nothing to keep.", "Question: Which endpoint?"], answer="http://127.0.0.1:9/v1", kind="locomo"
    )
    recall_suite.run(command=command("echo_provider:Echo", "--retrieval-only", "--model-url", "http://127.0.0.1:9/v1"))
    (record,) = recall_suite.report()["cases"]
    assert record["steps"][-1]["stdout"].strip() == "OPENAI_BASE_URL=http://127.0.0.1:9/v1"
