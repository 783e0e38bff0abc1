"""Issue 56's "Prompts as files" and "Self-consistency": ``recall-judge --prompt-file`` and ``rejudge --judge-samples``.

The slow tests go through the real ``llm`` and ``recall-judge`` to the fake
model: a run judged under a LongMemEval-style prompt file of the user's keeps
that file's hash with every verdict, in its report and its protocol block, and
a changed file changes both; a fickle fake judge asked three times per answer
gets a flip rate above zero and majority verdicts, each sample asked of the
model (none folded by the cache), while one sample re-judges as without the flag.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_wiring import real_cli
from test_rejudge import add_open, cli, fake_judge, judge, judged_run

from conftest import RecallSuite
from pytest_recall.agents.adapters.llm import ADAPTER
from pytest_recall.agents.prompt_file import builtin_prompts_sha256
from pytest_recall.agents.rejudge import majority
from pytest_recall.sessions.cost_file import read_cost
from pytest_recall.testing import FakeModelServer
from pytest_recall.testing.fake_judge import fickle

__all__ = ["judged_run"]

RECALL_JUDGE = Path(sys.executable).with_name("recall-judge")
# LongMemEval's own judge prompt in shape (its words are the paper's; these are ours), with the tagged blocks the
# fake model reads its verdicts from, and a literal brace written doubled.
PROMPT = """I will give you a question, a correct answer, and a response from a model. Answer yes if the response
contains the correct answer, otherwise no. Grade as of {question_date}; question type {{{question_type}}}.
<type>
{question_type}
</type>
<question>
{question}
</question>
<gold>
{gold}
</gold>
<response>
{answer}
</response>
Is the model response correct? Answer yes or no only.
"""


def sample(score: float | None, *, cached: bool = False) -> dict[str, object]:
    return {
        "score": score,
        "reason": None,
        "error": None if score is not None else "the judge exited 1",
        "cached": cached,
        "attempts": 0 if cached else 1,
        "cost_usd": None,
        "tokens_in": None if cached else 5,
        "tokens_out": None if cached else 1,
        "prompt_sha256": None,
    }


def test_the_majority_of_samples_is_the_verdict_and_a_tie_fails() -> None:
    assert majority([sample(1.0)]) == sample(1.0), "one sample is that sample, as without --judge-samples"
    two_of_three = majority([sample(1.0), sample(0.0), sample(1.0, cached=True)])
    assert two_of_three["score"] == 1.0 and two_of_three["flipped"] is True and two_of_three["samples"] == [1, 0, 1]
    assert two_of_three["calls"] == 2 and two_of_three["tokens_in"] == 10
    tie = majority([sample(1.0), sample(0.0)])
    assert tie["score"] == 0.0 and tie["flipped"] is True
    one_verdict = majority([sample(1.0), sample(None), sample(None)])
    assert one_verdict["score"] == 1.0 and one_verdict["flipped"] is None and "2 judge errors" in one_verdict["reason"]
    none = majority([sample(None), sample(None)])
    assert none["score"] is None and none["error"] == "the judge exited 1"


def test_the_fickle_judge_turns_some_askings_over_and_the_same_ones_every_time() -> None:
    turned = [fickle("yes", "a judge prompt", asking) for asking in range(30)]
    assert turned == [fickle("yes", "a judge prompt", asking) for asking in range(30)]
    assert 0 < turned.count("no") < 30


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Answer {answr} yes or no", "names {answr}; the fields are {question}, {gold}, {answer}, {question_type}"),
        ("Answer {answer.__class__}", "names {answer.__class__}"),
        ("Answer {answer!r}", "names {answer!r}"),
        ("A set { of braces", "has a lone brace"),
        (None, "cannot read the prompt file"),
    ],
)
def test_a_prompt_file_that_cannot_be_used_is_one_line_and_a_judge_error(
    tmp_path: Path, text: str | None, said: str
) -> None:
    path = tmp_path / "prompt.txt"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    request = json.dumps({"question": "q?", "gold": "Paris", "answer": "Paris"})
    # No llm is reachable: the file is refused before any model is asked.
    env = {**os.environ, "RECALL_LLM_BIN": str(tmp_path / "no-llm")}
    done = subprocess.run(
        [str(RECALL_JUDGE), f"--prompt-file={path}", "-m", "fake"],
        input=request,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("recall-judge: ") and len(done.stderr.splitlines()) == 1, done.stderr
    assert said in done.stderr
    if text is not None and "{" in said:
        assert "write {{ and }} for a literal brace" in done.stderr


def judge_prompts_sent(log: Path) -> list[str]:
    return [
        entry["prompt"] for line in log.read_text().splitlines() if (entry := json.loads(line)).get("kind") == "judge"
    ]


@pytest.mark.real_cli
def test_a_prompt_file_judges_a_run_and_its_hash_is_in_the_record_the_report_and_the_protocol(
    recall_suite: RecallSuite,
) -> None:
    real_cli(ADAPTER)
    folder = recall_suite.pytester.path
    add_open(recall_suite, "case_01_right", "We chose Postgres")
    add_open(recall_suite, "case_02_declines", "I don't know")
    prompt, log = folder / "longmemeval-judge.txt", folder / "fake-model.jsonl"
    prompt.write_text(PROMPT, encoding="utf-8")

    def run_and_read() -> tuple[str, dict[str, object]]:
        with FakeModelServer("memory", log_path=log) as server:
            command = f"{fake_judge(folder / 'llm', server)} --prompt-file={prompt}"
            recall_suite.run(f"--recall-judge-cmd={command}").assert_outcomes(passed=1, failed=1)
        report = recall_suite.report()
        digest = hashlib.sha256(prompt.read_bytes()).hexdigest()
        for record in report["cases"]:
            assert record["llm_judge"]["prompt_sha256"] == digest, record["id"]
        assert report["llm_judge"]["prompts_sha256"] == [digest]
        protocol_judge = report["protocol"]["judges"]["llm_judge"]
        assert protocol_judge["files_sha256"][prompt.name] == digest
        # A prompt file replaces the built-in prompts: their hashes are not the protocol's.
        assert not any(name.startswith("prompt:") for name in protocol_judge["files_sha256"])
        return digest, report["protocol"]

    first_hash, first_protocol = run_and_read()
    sent = judge_prompts_sent(log)
    assert len(sent) == 2 and all(text.startswith("I will give you a question") for text in sent)
    assert all("question type {free}." in text and "\n<gold>\nPostgres\n</gold>\n" in text for text in sent)

    prompt.write_text(PROMPT.replace("Answer yes if", "Say yes only if"), encoding="utf-8")
    second_hash, second_protocol = run_and_read()
    assert second_hash != first_hash and second_protocol != first_protocol


@pytest.mark.real_cli
def test_three_samples_of_a_fickle_judge_give_a_flip_rate_and_majority_verdicts(
    judged_run: tuple[RecallSuite, Path],
) -> None:
    real_cli(ADAPTER)
    recall_suite, counter = judged_run
    folder = recall_suite.pytester.path
    strict = judge(folder, "strict")
    once, today = folder / "once.json", folder / "today.json"
    assert cli("rejudge", recall_suite.report_path, f"--judge-cmd={strict}", "-o", today).returncode == 0
    assert (
        cli("rejudge", recall_suite.report_path, f"--judge-cmd={strict}", "--judge-samples=1", "-o", once).returncode
        == 0
    )
    today_result, once_result = json.loads(today.read_text()), json.loads(once.read_text())
    assert once_result["cases"] == today_result["cases"] and once_result["table"] == today_result["table"]
    assert "self_consistency" not in once_result["table"]

    out, log = folder / "sampled.json", folder / "fickle.jsonl"
    with FakeModelServer("fickle", log_path=log) as fickle_server, FakeModelServer("memory") as steady_server:
        done = cli(
            "rejudge",
            recall_suite.report_path,
            f"--judge-cmd=fickle={fake_judge(folder / 'llm-fickle', fickle_server)}",
            f"--judge-cmd=steady={fake_judge(folder / 'llm-steady', steady_server)}",
            "--judge-samples=3",
            "--workers=3",
            "-o",
            out,
        )
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    assert len(counter.read_text().splitlines()) == 10, "rejudge started an agent"
    result = json.loads(out.read_text())
    consistency = result["table"]["self_consistency"]
    assert consistency["steady"] == {"n": 4, "flipped": 0, "flip_rate": 0.0}
    assert consistency["fickle"]["n"] == 4 and consistency["fickle"]["flip_rate"] > 0
    for case in result["cases"]:
        verdict = case["verdicts"]["fickle"]
        assert len(verdict["samples"]) == 3
        assert verdict["score"] == (1.0 if sum(verdict["samples"]) >= 2 else 0.0), case["case"]
        assert verdict["flipped"] == (len(set(verdict["samples"])) > 1)
    # Every sample reached the model: 4 answers, 3 samples each, none folded into another by the cache.
    assert len(judge_prompts_sent(log)) == 12 and result["judge_cost"]["fickle"]["calls"] == 12
    # The built-in prompt's hash, of the question type these answers have (none: the default rule's).
    assert result["prompts_sha256"] == {name: [builtin_prompts_sha256()["default"]] for name in ("fickle", "steady")}
    flipped = consistency["fickle"]["flipped"]
    assert f"fickle against itself: {flipped} of 4 answers flip between samples" in done.stdout
    assert "3 samples each (the majority; a tie fails)" in done.stdout


def test_a_cost_file_gives_a_prompt_hash_only_in_the_form_of_one(tmp_path: Path) -> None:
    digest = hashlib.sha256(b"a prompt").hexdigest()
    for written, read in [(digest, digest), ("not a hash", None), (digest.upper(), None), (7, None), (None, None)]:
        cost_file = tmp_path / "cost.json"
        cost_file.write_text(json.dumps({"tokens_in": 3, "prompt_sha256": written}), encoding="utf-8")
        cost, fault = read_cost(cost_file)
        assert fault is None and cost.tokens_in == 3 and cost.prompt_sha256 == read, written
