"""The protocol block: pinned in every report, kept by merge, said by compare, shown by the card and the page."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from pytest_recall.cli import main

DATA = Path(__file__).resolve().parent / "data"
AMNESIAC = shlex.join([sys.executable, "-m", "pytest_recall.agents.amnesiac"])


def imported(folder: Path, source: Path = DATA / "longmemeval_tiny.json") -> Path:
    """A two-question LongMemEval import in ``folder/lme`` (the suite is named ``lme`` wherever it lives)."""
    out = folder / "lme"
    folder.mkdir(parents=True, exist_ok=True)
    assert main(["import", "longmemeval", str(source), "--out", str(out), "--limit", "2"]) == 0
    return out


def run(pytester: pytest.Pytester, suite: Path, name: str, *options: str) -> Path:
    report = pytester.path / name
    result = pytester.runpytest_subprocess(
        str(suite), f"--recall-cmd={AMNESIAC}", f"--recall-report={report}", *options, timeout=300
    )
    assert report.exists(), result.stdout.str()
    return report


def protocol(report: Path) -> dict[str, Any]:
    block: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))["protocol"]
    return block


def pytest_recall(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_recall.cli", *map(str, args)], capture_output=True, text=True, timeout=60
    )


def changed_copy(folder: Path) -> Path:
    """The tiny LongMemEval file with one answer changed: another data set, though it looks the same."""
    records = json.loads((DATA / "longmemeval_tiny.json").read_text(encoding="utf-8"))
    records[0]["answer"] = f"{records[0]['answer']} (revised)"
    path = folder / "longmemeval_tiny.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_two_runs_of_one_import_give_one_block_and_another_file_is_refused_by_compare(pytester):
    suite = imported(pytester.path / "a")
    first, second = run(pytester, suite, "first.json"), run(pytester, suite, "second.json")
    block = protocol(first)
    assert block == protocol(second)
    (data,) = block["data"]
    assert data["suite"] == "lme" and data["benchmark"] == "longmemeval"
    assert data["sources"][0]["sha256"] and data["options"]["limit"] == 2
    assert block["agent"] == {"command": AMNESIAC, "adapter": None, "cli_version": None}
    assert block["run"]["epochs"] == 1 and block["harness_version"]
    assert str(pytester.path) not in json.dumps(block)  # nothing of this machine

    same = pytest_recall("compare", first, second)
    assert same.returncode == 0 and "Protocol differs" not in same.stdout

    other = run(pytester, imported(pytester.path / "b", changed_copy(pytester.path)), "other.json")
    refused = pytest_recall("compare", first, other)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "data[lme].sources" in refused.stdout and "Verdict" not in refused.stdout
    assert "no verdict across data sets" in refused.stderr and "--allow-protocol-diff" in refused.stderr
    allowed = pytest_recall("compare", first, other, "--allow-protocol-diff")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    lines = allowed.stdout.splitlines()
    assert lines[0].startswith("Protocol differs in") and lines[-1].startswith("Verdict")

    # Merge keeps the block of shards of one run, and refuses reports of different data unless asked.
    merged = pytester.path / "merged.json"
    assert main(["merge", str(first), str(second), "-o", str(merged)]) == 1  # merged; the amnesiac fails its cases
    assert protocol(merged) == block
    mixed = pytest_recall("merge", first, other, "-o", pytester.path / "mixed.json")
    assert mixed.returncode == 2 and "another protocol" in mixed.stderr and len(mixed.stderr.splitlines()) == 1
    assert pytest_recall("merge", first, other, "-o", merged, "--allow-protocol-diff").returncode == 1

    # The card renders as Markdown and carries the protocol, folded; the HTML page shows it too.
    card = pytest_recall("card", first)
    assert card.returncode == 0, card.stderr
    tokens = MarkdownIt().enable("table").parse(card.stdout)
    assert any(token.type == "table_open" for token in tokens)
    assert any(token.type == "html_block" and "<details>" in token.content for token in tokens)
    fenced = next(token for token in tokens if token.type == "fence" and token.info == "json")
    assert json.loads(fenced.content) == block
    assert card.stdout.splitlines()[2].startswith("**Score ")
    html = pytester.path / "page.html"
    assert main(["report", str(first), "--html", str(html)]) == 0
    assert "<h2>Protocol</h2>" in html.read_text(encoding="utf-8")


def saved(folder: Path, name: str, **changes: Any) -> Path:
    """A report with a protocol block, as a run of a LoCoMo import writes it, with ``changes`` laid over it."""
    from pytest_recall.reporting.files import write_json_atomic
    from pytest_recall.reporting.merge import report_of_rows

    records = [
        {"id": f"q{i}", "suite": "loc", "nodeid": f"loc/q{i}::recall", "category": "temporal", "score": 1.0,
         "error": None, "epoch": 1, "control": False, "duration_s": 1.0, "cost_usd": None, "content_hash": f"h{i}",
         "steps": []}
        for i in range(4)
    ]  # fmt: skip
    block = {
        "data": [{"suite": "loc", "made_by": "pytest-recall import locomo", "sources": [{"sha256": "ab"}]}],
        "scoring": {"answer_judge": "answer", "benchmarks": {"locomo": {"category_map": {"2": "temporal"}}}},
        "judges": {"answer_judge": "answer", "llm_judge": {"command": "judge", "files_sha256": {"prompt.txt": "1"}}},
        "agent": {"command": "agent", "adapter": None, "cli_version": None},
        "run": {"epochs": 1},
        "harness_version": "0.1.0",
    }
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        place: Any = block
        for key in parents:
            place = place[key]
        place[leaf] = value
    report = report_of_rows(records, threshold=0.5, command="agent", protocol=block)
    write_json_atomic(folder / name, report.as_json())
    return folder / name


def test_a_judge_prompt_or_category_map_change_is_listed_before_the_verdict(tmp_path):
    base = saved(tmp_path, "base.json")
    new = saved(
        tmp_path,
        "new.json",
        judges__llm_judge__files_sha256={"prompt.txt": "2"},
        scoring__benchmarks__locomo__category_map={"2": "multi-hop"},
    )
    result = pytest_recall("compare", base, new)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Protocol differs in 2 field(s): the two numbers were not measured the same way"
    assert lines[1] == "  judges.llm_judge.files_sha256.prompt.txt: 1 -> 2"
    assert lines[2] == "  scoring.benchmarks.locomo.category_map.2: temporal -> multi-hop"
    assert lines[-1].startswith("Verdict: no significant change")


def test_a_report_without_a_block_is_a_listed_difference_yet_keeps_its_verdict(tmp_path):
    base = saved(tmp_path, "base.json")
    old = json.loads(base.read_text(encoding="utf-8"))
    del old["protocol"]
    (tmp_path / "old.json").write_text(json.dumps(old), encoding="utf-8")
    result = pytest_recall("compare", tmp_path / "old.json", base)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [
        "Protocol differs in 1 field(s): the two numbers were not measured the same way",
        "  protocol: none (a report from before the protocol block) -> present",
    ]
    assert result.stdout.splitlines()[-1].startswith("Verdict")


JUDGE = """
import json, sys
prompt = open(sys.argv[1], encoding="utf-8").read()
request = json.load(sys.stdin)
print(json.dumps({"score": int(str(request["gold"]).lower() in request["answer"].lower()), "reason": prompt[:20]}))
"""


def test_a_changed_judge_prompt_file_shows_in_compare_through_real_runs(pytester):
    suite = imported(pytester.path / "a")
    (pytester.path / "judge.py").write_text(JUDGE, encoding="utf-8")
    prompt = pytester.path / "prompt.txt"
    judge = f"--recall-judge-cmd={shlex.join([sys.executable, 'judge.py', 'prompt.txt'])}"
    prompt.write_text("Is the answer right?", encoding="utf-8")
    before = run(pytester, suite, "before.json", judge)
    prompt.write_text("Is the answer right? Be lenient.", encoding="utf-8")
    after = run(pytester, suite, "after.json", judge)
    files = protocol(before)["judges"]["llm_judge"]["files_sha256"]
    assert set(files) == {"judge.py", "prompt.txt"}
    result = pytest_recall("compare", before, after)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[:2] == [
        "Protocol differs in 1 field(s): the two numbers were not measured the same way",
        f"  judges.llm_judge.files_sha256.prompt.txt: {files['prompt.txt'][:12]} -> "
        f"{protocol(after)['judges']['llm_judge']['files_sha256']['prompt.txt'][:12]}",
    ]


FAKE_CLI = """#!/bin/sh
if [ "$1" = "--version" ]; then {version}; fi
exit 1
"""


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("echo '9.9.9 (Claude Code)'; exit 0", "9.9.9 (Claude Code)"),
        ("sleep 60 & echo $! > hung.pid; wait", None),
        ("exit 3", None),
    ],
)
def test_a_known_adapter_names_its_cli_version_asked_once_with_a_bound(pytester, monkeypatch, answer, expected):
    fake = pytester.path / "fake-claude"
    fake.write_text(FAKE_CLI.format(version=answer), encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("RECALL_CLAUDE_BIN", str(fake))
    suite = imported(pytester.path / "a")
    report = pytester.path / "report.json"
    adapter = Path(sys.executable).parent / "recall-claude"
    pytester.runpytest_subprocess(str(suite), f"--recall-cmd={adapter}", f"--recall-report={report}", timeout=120)
    agent = protocol(report)["agent"]
    assert agent["adapter"] == "recall-claude" and agent["cli_version"] == expected
    hung = pytester.path / "hung.pid"
    if hung.exists():  # a CLI that hangs is ended with what it started
        stat = Path(f"/proc/{hung.read_text().strip()}/stat")
        assert not stat.exists() or stat.read_text().split(")")[-1].split()[0] == "Z"


def test_every_seed_that_shaped_the_run_is_in_the_block_and_another_import_seed_shows_in_compare(pytester):
    def seeded(folder: str, seed: int) -> Path:
        out = pytester.path / folder / "lme"
        assert main(["import", "longmemeval", str(DATA / "longmemeval_tiny.json"), "--out", str(out), "--limit",
                     "2", "--seed", str(seed)]) == 0  # fmt: skip
        ledger = pytester.path / folder / "ledger"
        ledger.mkdir()
        (ledger / "suite.toml").write_text('family = "ledger"\nseed = 7\ncount = 2\n', encoding="utf-8")
        return pytester.path / folder

    decided = ("--recall-stop=decided", "--recall-gate=score")
    first = run(pytester, seeded("a", 1), "first.json", *decided)
    again = run(pytester, seeded("b", 1), "again.json", *decided)
    assert protocol(first)["seeds"] == {
        "import": {"lme": 1},
        "generator": {"ledger": 7},
        "case_order": "pytest-recall suite scope 1",
        "bootstrap": 0,
    }
    assert protocol(first) == protocol(again)  # the same seeds, the same block
    in_order = run(pytester, seeded("c", 2), "other.json")
    assert protocol(in_order)["seeds"]["case_order"] is None
    result = pytest_recall("compare", first, in_order)
    assert result.returncode == 2, result.stdout + result.stderr  # another sample of questions: no verdict
    assert "  seeds.import.lme: 1 -> 2" in result.stdout.splitlines()
    assert "  seeds.case_order: pytest-recall suite scope 1 -> none" in result.stdout.splitlines()


def test_the_block_carries_the_tables_the_importers_and_judges_read_so_a_changed_map_is_a_difference():
    from pytest_recall.reporting.protocol import scoring_entry
    from pytest_recall.scoring import beam_rubric
    from pytest_recall.suites import locomo, memoryagentbench

    notes = {name: {"benchmark": name} for name in ("locomo", "beam", "memoryagentbench", "longmemeval")}
    benchmarks = scoring_entry(notes, "answer")["benchmarks"]
    assert benchmarks["locomo"]["category_map"] == {str(n): name for n, name in locomo.CATEGORY_NAMES.items()}
    assert benchmarks["memoryagentbench"]["category_map"] == dict(memoryagentbench.COMPETENCY_BY_SOURCE)
    assert benchmarks["memoryagentbench"]["metric_by_source"] == dict(memoryagentbench.METRIC_BY_SOURCE)
    assert benchmarks["beam"]["judge_only"] == sorted(beam_rubric.LLM_ONLY)
    assert all(entry["metric"] and entry["definition"] for entry in benchmarks.values())
