"""``--recall-judge-both`` with the real ``llm`` CLI and ``recall-judge`` against the fake model's judge mode.

Two runs, each checking several things (issue 30's "must hold"): on the seed
suite the notebook agent's answers are judged alike by the strict fake judge
and the built-in judge (agreement 1.0); a shotgun agent's hedge is failed by
the built-in judge and passed by the lenient fake judge, and the summary, the
HTML page, JUnit, ``merge``, ``compare`` and a resumed run all carry it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_wiring import llm_wiring, real_cli

from conftest import RecallSuite
from pytest_recall.agents.adapters.llm import ADAPTER
from pytest_recall.testing import FakeModelServer

CLI = (sys.executable, "-m", "pytest_recall.cli")
RECALL_JUDGE = f"{Path(sys.executable).with_name('recall-judge')} -m fake"


def wire_llm(recall_suite: RecallSuite, monkeypatch: pytest.MonkeyPatch, server: FakeModelServer, name: str) -> Path:
    """The inner run's judge reaches this fake model: llm's own folder, fresh, named in the environment."""
    folder = recall_suite.pytester.path / f"llm-{name}"
    for file_name, text in llm_wiring(server.base_url).home_files.items():
        target = folder / Path(file_name).name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    monkeypatch.setenv("LLM_USER_PATH", str(folder))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    return folder


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.real_cli
def test_the_notebook_on_the_seed_suite_gets_the_same_verdicts_from_both_judges(
    recall_suite: RecallSuite, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_cli(ADAPTER)
    recall_suite.copy_seed_suite()
    junit = recall_suite.pytester.path / "junit.xml"
    with FakeModelServer("memory") as server:
        llm_folder = wire_llm(recall_suite, monkeypatch, server, "strict")
        result = recall_suite.run(
            f"--recall-judge-cmd={RECALL_JUDGE}",
            "--recall-judge-both",
            "--recall-concurrency=4",
            f"--junitxml={junit}",
            command="recall-notebook",
        )
    result.assert_outcomes(passed=8)
    section = recall_suite.report()["llm_judge"]
    assert section["n_judged"] == 8 and section["n_errors"] == 0, section
    assert section["agreement"]["rate"] == 1.0 and section["agreement"]["disagreements"] == []
    assert set(section["agreement"]["by_kind"]) == {"money", "voucher"}
    # The judge's tokens are its own, apart from the agent's (the notebook reports none).
    assert section["tokens_in"] > 0 and recall_suite.report()["cost_usd_total"] is None
    result.stdout.fnmatch_lines(
        ["*LLM judge: 8 answers judged (0 cached), 0 judge errors*", "*and the built-in judge agree on 8/8*"]
    )
    assert 'name="recall_llm_judge_agreement" value="1.0"' in junit.read_text()
    # Eight judges at once wrote nothing into the user's llm folder: no log database, no lock.
    assert sorted(path.name for path in llm_folder.iterdir()) == ["extra-openai-models.yaml"]


@pytest.mark.real_cli
def test_a_lenient_judge_passes_a_shotgun_and_every_output_shows_the_disagreement(
    recall_suite: RecallSuite, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_cli(ADAPTER)
    remember = "remember 12345.67\nsay noted"
    recall_suite.add("case_01_shotgun", [remember, "say 12345.67 or 23456.78"])
    recall_suite.add("case_02_recalls", [remember, "recall"])
    html, log = recall_suite.pytester.path / "report.html", recall_suite.pytester.path / "run.jsonl"
    flags = (f"--recall-judge-cmd={RECALL_JUDGE}", "--recall-judge-both", f"--recall-log={log}")
    with FakeModelServer("lenient") as server:
        wire_llm(recall_suite, monkeypatch, server, "lenient")
        result = recall_suite.run(*flags, f"--recall-html={html}", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*and the built-in judge agree on 1/2 answers (0.500)*",
            "*disagree: suite/case_01_shotgun (money): built-in judge fail, LLM judge pass",
        ]
    )
    page = html.read_text(encoding="utf-8")
    assert "Disagreements (1)" in page and "suite/case_01_shotgun" in page.split("Disagreements (1)")[1]
    junit = (recall_suite.pytester.path / "junit.xml").read_text()
    assert 'name="recall_llm_judge_n_disagreements" value="1"' in junit
    # Under xunit2 (the default) a case's figures are a block in its <system-out>, the judge's verdict among them.
    assert "recall_score=0.0\n" in junit and "recall_llm_judge_score=1.0\nrecall_llm_judge_passed=true\n" in junit
    report = recall_suite.report_path

    # Merged, the report keeps the verdicts and recomputes the same agreement.
    merged = recall_suite.pytester.path / "merged.json"
    assert cli("merge", report, "-o", merged, "--gate", "score").returncode == 0
    assert json.loads(merged.read_text())["llm_judge"] == recall_suite.report()["llm_judge"]
    compared = cli("compare", report, merged)
    assert "LLM judge agreement with the built-in judge: base: 1/2 answers (0.500)" in compared.stdout

    # Resumed with the fake model gone: no judge is asked again, and the stored verdicts stand.
    before = recall_suite.records()
    again = recall_suite.run(*flags, f"--recall-resume={log}")
    again.assert_outcomes(passed=1, failed=1)
    again.stdout.fnmatch_lines(["*disagree: suite/case_01_shotgun (money)*"])
    assert {key: record["llm_judge"] for key, record in recall_suite.records().items()} == {
        key: record["llm_judge"] for key, record in before.items()
    }
