"""Issue 66, a newcomer's first hour, fourth pass: each trap a test that fails on the commit before its fix.

The inner runs use one or two cases each: the mechanism is the point, never a suite's size.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from mcp_servers import LEAKY_SERVER, RECALL_MCP_REMEMBER
from report_docs import run_report
from test_junit_schema import schema_for
from test_protocol import pytest_recall, saved
from test_rejudge import add_open, cli, counting_agent, judge

from conftest import AGENTS_DIR, RecallSuite
from pytest_recall.plugin.junit import parse_figures_block
from pytest_recall.testing.fake_model import FakeModelServer, RateLimitStretch


def recipe_args(recall_suite: RecallSuite, recipe: str) -> list[str]:
    """One documented recipe's flags over one or two cases built for it."""
    folder = recall_suite.pytester.path
    if recipe == "several judges":
        add_open(recall_suite, "case_01_right", "We chose Postgres")
        strict, lenient = judge(folder, "strict"), judge(folder, "lenient")
        return [f"--recall-judge-cmd=strict={strict}", f"--recall-judge-cmd=lenient={lenient}", "--recall-judge-both"]
    recall_suite.add("remembers", ["remember 12345.67", "recall"])
    if recipe == "mcp":
        config = folder / "mcp.json"
        entry = {"command": sys.executable, "args": [str(LEAKY_SERVER), "{scope}/store.txt"]}
        config.write_text(json.dumps({"mcpServers": {"memory": entry}}), encoding="utf-8")
        return [f"--recall-mcp={config}", "--recall-answer-judge=contains", "--recall-control"]
    if recipe == "epochs and stop":
        return ["--recall-epochs=2", "--recall-stop=decided", "--recall-gate=score"]
    recall_suite.add("limited", ["remember 2.25", "recall"], "2.25")
    return ["--recall-rate-limit-attempts=1"]


@pytest.mark.parametrize("family", ["xunit2", "xunit1"])
@pytest.mark.parametrize(
    "recipe", ["several judges", pytest.param("mcp", marks=pytest.mark.slow), "epochs and stop", "rate limits"]
)
def test_every_recipes_junit_file_is_valid_in_both_families(
    recall_suite: RecallSuite, monkeypatch: pytest.MonkeyPatch, recipe: str, family: str
) -> None:
    junit = recall_suite.pytester.path / "junit.xml"
    args = [*recipe_args(recall_suite, recipe), f"--junitxml={junit}", "-o", f"junit_family={family}"]
    command = {"mcp": RECALL_MCP_REMEMBER, "rate limits": recall_suite.agent("model_caller")}.get(recipe)
    with FakeModelServer("plain", rate_limit=RateLimitStretch(after=2, seconds=600, retry_after=1)) as server:
        monkeypatch.setenv("RECALL_TEST_MODEL_URL", server.base_url)
        result = recall_suite.run(*args, command=command)
    assert result.ret in (0, 1), result.stdout.str()
    schema_for(family).validate(str(junit))
    first = ET.parse(junit).getroot().iter("testcase").__next__()
    if family == "xunit2":
        out = first.find("system-out")
        assert out is not None and out.text is not None
        figures = parse_figures_block(out.text)
    else:
        figures = {p.get("name", ""): p.get("value", "") for p in first.iter("property")}
    expected = {"several judges": "recall_judge_lenient_score", "mcp": "recall_memory_reads_last"}
    if recipe in expected:
        assert expected[recipe] in figures, figures


def test_a_resume_under_another_rootdir_reuses_every_record_and_says_how_many(recall_suite: RecallSuite) -> None:
    # Named from the folder above first (``suite/one::recall``), then from here (``cases/suite/one::recall``),
    # as an install that adds a pyproject.toml above the bundled suites does to their node ids.
    recall_suite.add("one", ["remember 12345.67", "recall"])
    recall_suite.add("two", ["remember 12345.67", "say 1.00"])
    command, counter = counting_agent(recall_suite.pytester.path)
    recall_suite.run(f"--rootdir={recall_suite.root}", command=command).assert_outcomes(passed=1, failed=1)
    assert recall_suite.records()["one"]["nodeid"] == "suite/one::recall"
    mine = recall_suite.pytester.path / "mine.json"
    recall_suite.report_path.rename(mine)
    assert len(counter.read_text().splitlines()) == 4

    again = recall_suite.run(f"--recall-resume={mine}", command=command)

    again.assert_outcomes(passed=1, failed=1)
    again.stdout.fnmatch_lines([f"*resume: reused 2 of 2 scored records in {mine}"])
    assert len(counter.read_text().splitlines()) == 4, "a resume ran a case its file held"
    assert sorted(recall_suite.records()[name]["nodeid"] for name in ("one", "two")) == [
        "cases/suite/one::recall",
        "cases/suite/two::recall",
    ]


def test_a_resume_that_reuses_fewer_records_than_it_read_says_so(recall_suite: RecallSuite) -> None:
    recall_suite.add("one", ["remember 12345.67", "recall"])
    mine = recall_suite.pytester.path / "mine.json"
    recall_suite.run(f"--recall-report={mine}", report=False).assert_outcomes(passed=1)

    again = recall_suite.run(
        f"--recall-resume={mine}", "-q", command=f"{sys.executable} -B {AGENTS_DIR / 'scripted.py'}"
    )

    again.stdout.fnmatch_lines([f"*resume: reused 0 of 1 scored record in {mine}; 1 matched no case of this run (*"])


def test_judges_given_over_exact_answers_say_the_built_in_judge_judged_them(recall_suite: RecallSuite) -> None:
    recall_suite.add("money", ["remember 12345.67", "recall"])
    folder = recall_suite.pytester.path
    judges = [
        f"--recall-judge-cmd=strict={judge(folder, 'strict')}",
        f"--recall-judge-cmd=lenient={judge(folder, 'lenient')}",
    ]

    result = recall_suite.run(*judges)

    result.assert_outcomes(passed=1)
    said = (
        "LLM judge: these cases are judged by the built-in judge, none by the judges; "
        "add --recall-judge-both to put them to the judges too"
    )
    # At start-up, before any session, and again in the summary.
    result.stdout.fnmatch_lines([f"recall: {said}", "*recall: PASSED*", f"  {said}"])


# A judge as ``recall-judge -m gpt-nope`` fails: its CLI's error, then the wrapper's own last line.
FAILING_JUDGE = """
import sys
sys.stdin.read()
print("Error: 'Unknown model: gpt-nope'", file=sys.stderr)
print("llm printed no JSON response", file=sys.stderr)
raise SystemExit(1)
"""


def test_a_judge_error_keeps_its_cause_and_the_summary_shows_the_first(recall_suite: RecallSuite) -> None:
    add_open(recall_suite, "case_01_right", "We chose Postgres")
    script = recall_suite.pytester.path / "failing_judge.py"
    script.write_text(FAILING_JUDGE, encoding="utf-8")

    result = recall_suite.run(f"--recall-judge-cmd={sys.executable} {script}")

    cause = "the judge exited 1: Error: 'Unknown model: gpt-nope' | llm printed no JSON response"
    assert recall_suite.records()["case_01_right"]["llm_judge"]["error"] == cause
    result.stdout.fnmatch_lines(
        [
            "*LLM judge: 1 answer judged (0 cached), 1 judge error (not agent failures)*",
            f"*first judge error: *case_01_right*: {cause}",
        ]
    )


def test_the_agreement_line_names_the_scoring_judge_it_compares(recall_suite: RecallSuite) -> None:
    recall_suite.add("money", ["remember 12345.67", "recall"], "12345.67")
    folder = recall_suite.pytester.path
    judges = [
        f"--recall-judge-cmd=strict={judge(folder, 'strict')}",
        f"--recall-judge-cmd=lenient={judge(folder, 'lenient')}",
    ]

    result = recall_suite.run(*judges, "--recall-judge-both")

    result.stdout.fnmatch_lines(["*the scoring judge (strict) and the built-in judge agree on 1/1 answers (1.000)*"])


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("recall-claude", "--recall-cmd: recall-claude cannot find RECALL_CLAUDE_BIN=*no-such-claude; install *"),
        (
            "recall-acp -- no-such-agent-cli --acp",
            "--recall-cmd: recall-acp runs 'no-such-agent-cli', which was not found*",
        ),
    ],
)
def test_an_adapter_whose_cli_is_missing_is_refused_before_any_case(
    recall_suite: RecallSuite, monkeypatch: pytest.MonkeyPatch, command: str, said: str
) -> None:
    recall_suite.add("remembers", ["remember 12345.67", "recall"])
    monkeypatch.setenv("RECALL_CLAUDE_BIN", str(recall_suite.pytester.path / "no-such-claude"))
    script, _, rest = command.partition(" ")
    full = " ".join([str(Path(sys.executable).with_name(script)), rest]).strip()

    result = recall_suite.run(command=full)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {said}"])


def test_rejudge_of_a_run_without_judge_both_names_that_flag(recall_suite: RecallSuite) -> None:
    recall_suite.add("money", ["remember 12345.67", "recall"])
    recall_suite.run().assert_outcomes(passed=1)

    done = cli("rejudge", recall_suite.report_path, f"--judge-cmd={judge(recall_suite.pytester.path, 'strict')}")

    assert done.returncode == 2
    assert "(the run had no --recall-judge-both, so only free-form answers were kept for a judge: " in done.stderr


def test_compare_lists_only_real_protocol_differences_with_hashes_cut_short(tmp_path: Path) -> None:
    prompts = {f"prompt_{kind}.txt": f"{kind:x}" * 64 for kind in range(11)}
    judged = {"command": "recall-judge -m fake", "files_sha256": prompts, "both": True}
    base = saved(tmp_path, "base.json", judges__llm_judge=None)
    unjudged = json.loads(base.read_text(encoding="utf-8"))
    unjudged["protocol"]["run"].pop("epochs_from", None)  # an older report, without the field
    base.write_text(json.dumps(unjudged), encoding="utf-8")
    new = saved(tmp_path, "new.json", judges__llm_judge=judged, run__epochs_from=None)

    result = pytest_recall("compare", base, new)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [
        "Protocol differs in 1 field(s): the two numbers were not measured the same way",
        "  judges.llm_judge: none -> set (3 fields)",
    ]


def baseline(path: Path, epochs: int) -> Path:
    """A report in which ``suite/steady`` scored 1 in each of ``epochs`` epochs, as an earlier run writes it."""
    from pytest_recall.reporting.files import write_json_atomic
    from pytest_recall.reporting.merge import report_of_rows

    records = [
        {"id": "steady", "suite": "suite", "nodeid": f"suite/steady::recall[epoch{epoch}]", "category": "recall",
         "score": 1.0, "error": None, "epoch": epoch, "control": False, "duration_s": 1.0, "cost_usd": None,
         "content_hash": "h", "steps": []}
        for epoch in range(1, epochs + 1)
    ]  # fmt: skip
    write_json_atomic(path, report_of_rows(records, threshold=0.5, command="agent").as_json())
    return path


@pytest.mark.parametrize("suite", ["suite", "other"])
def test_epochs_from_says_how_many_cases_its_baseline_settled_and_warns_when_none_are_this_runs(
    recall_suite: RecallSuite, suite: str
) -> None:
    recall_suite.add("steady", ["remember 12345.67", "recall"], suite=suite)
    chosen = baseline(recall_suite.pytester.path / "baseline.json", epochs=2)

    # The count is a detail of the summary; the warning stays under -q.
    quiet = ["-q"] if suite == "other" else []
    result = recall_suite.run("--recall-epochs=2", f"--recall-epochs-from={chosen}", *quiet)

    said = {
        "suite": "*epochs from a baseline: 1 of 1 case ran once, settled by it (1 settled)",
        "other": "*WARNING: --recall-epochs-from: the baseline settled 1 case, none of them in this run (a report of*",
    }
    result.stdout.fnmatch_lines([said[suite]])


def test_epochs_from_a_one_epoch_baseline_is_refused(recall_suite: RecallSuite) -> None:
    recall_suite.add("steady", ["remember 12345.67", "recall"])
    chosen = baseline(recall_suite.pytester.path / "baseline.json", epochs=1)

    again = recall_suite.run("--recall-epochs=2", f"--recall-epochs-from={chosen}")

    assert again.ret == pytest.ExitCode.USAGE_ERROR
    again.stderr.fnmatch_lines(
        ["ERROR: --recall-epochs-from: *baseline.json ran each case once, so it settles no case*"]
    )


REPO = Path(__file__).resolve().parent.parent


def test_no_doc_example_runs_every_bundled_case() -> None:
    """``pytest cases`` in the clone collects all the bundled suites (2,494 sessions): examples name one suite."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    whole = [
        f"{page.name}:{number}"
        for page in pages
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"\bpytest cases(\s|$)", line)
    ]
    assert whole == []


def test_the_one_line_verdict_says_the_run_was_decided_early() -> None:
    from pytest_recall.reporting.summary import verdict_line

    stop = {"decided_after": 486, "n_cases": 600, "n_not_run": 114}
    report = run_report(
        {"score": 0.737, "threshold": 0.7, "passed": True, "n_passed": 358, "n_total": 486, "stop": stop}
    )

    assert verdict_line(report) == (
        "recall: PASSED  score 0.737  (threshold 0.7)  358/486 cases passed; "
        "decided after 486 of 600 cases, 114 not run"
    )


def test_an_agent_over_an_empty_folder_is_told_how_to_name_a_suite(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(f"--recall-cmd={sys.executable} -c pass", "-p", "no:cacheprovider")

    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [f'recall: no case folder under {pytester.path}; name a suite folder: pytest "$(pytest-recall suite *'],
    )


def test_compare_says_why_a_large_category_drop_is_no_verdict(tmp_path: Path) -> None:
    from pytest_recall.reporting.files import write_json_atomic
    from pytest_recall.reporting.merge import report_of_rows

    def report(name: str, closing: float) -> Path:
        records = [
            {"id": f"q{i}", "suite": "s", "nodeid": f"s/q{i}::recall", "score": closing if i == 0 else 1.0,
             "category": "closing_balance" if i == 0 else "recall", "error": None, "epoch": 1, "control": False,
             "duration_s": 1.0, "cost_usd": None, "content_hash": f"h{i}", "steps": []}
            for i in range(8)
        ]  # fmt: skip
        write_json_atomic(tmp_path / name, report_of_rows(records, threshold=0.5, command="agent").as_json())
        return tmp_path / name

    result = pytest_recall("compare", report("base.json", 1.0), report("new.json", 0.0))

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("closing_balance") and "-100.0" in line for line in lines), lines
    assert lines[-2:] == [
        "No verdict from 8 paired cases: at alpha 0.05 a paired test needs at least 6 cases moving the same way, "
        "and none the other, to call a change; 1 went down and 0 up, and a category's row is never the verdict",
        "Verdict: no significant change (-12.5 points, p = 1.000).",
    ]


def fenced(page: Path, info: str) -> str:
    """The body of the one fenced block of ``page`` whose info string is ``info``."""
    blocks = re.findall(rf"^```{re.escape(info)}\n(.*?)^```$", page.read_text(encoding="utf-8"), re.M | re.S)
    assert len(blocks) == 1, f"{page.name} holds {len(blocks)} blocks marked {info!r}"
    return str(blocks[0])


def test_the_readmes_starter_agent_remembers_through_its_scope(recall_suite: RecallSuite) -> None:
    agent = fenced(REPO / "README.md", "python my_agent.py")
    assert len([line for line in agent.splitlines() if line.strip()]) <= 16, "a starter, not a framework"
    (recall_suite.pytester.path / "my_agent.py").write_text(agent, encoding="utf-8")
    suite = recall_suite.copy_seed_suite()

    result = recall_suite.run(suite, "-k", "case_01 or case_03", command="python my_agent.py")

    # case_01's answer is the last amount of its table, which the toy keeps; case_03 needs arithmetic.
    result.assert_outcomes(passed=1, failed=1)
    assert recall_suite.records()["case_01"]["steps"][0]["memory"], "step 1 kept nothing in RECALL_SCOPE_DIR"


@pytest.mark.parametrize("benchmark", ["longmemeval", "locomo"])
def test_the_documented_import_records_import_as_written(tmp_path: Path, benchmark: str) -> None:
    record = json.loads(fenced(REPO / "docs" / "public-benchmarks.md", f"json {benchmark}-record"))
    source = tmp_path / f"{benchmark}.json"
    source.write_text(json.dumps([record]), encoding="utf-8")

    done = cli("import", benchmark, source, "--out", tmp_path / "suite")

    assert done.returncode == 0, done.stderr
    assert "imported 1 " in done.stdout


def test_small_things_read_as_a_person_would_write_them(tmp_path: Path) -> None:
    from pytest_recall.cases.command_paths import resolve_command_paths
    from pytest_recall.reporting.card import results_card
    from pytest_recall.reporting.failure import verdict_report

    failure = verdict_report({"score": 2 / 9, "reason": "mean of epochs", "reported": None}, {"answer": "1.00"})
    assert failure.splitlines()[:3] == ["scored 0.222: mean of epochs", "  expected: '1.00'", "  reported: no answer"]

    (tmp_path / "forgetful.py").write_text("", encoding="utf-8")
    resolved = resolve_command_paths(("./forgetful.py", "--fast"), str(tmp_path))[1]
    assert resolved == (("./forgetful.py", str(tmp_path / "forgetful.py")),), "the header names what it made absolute"

    report = run_report({"score": 0.875, "passed": True, "threshold": 0.5, "n_scored": 8, "latency_ms_median": 40})
    card = results_card(report)
    assert "**Score 87.5%: PASSED at threshold 50.0%**" in card
    assert "| 0.04 s |" in card, card


@pytest.mark.parametrize(
    "left", ["llm-fake/keys.json", "mcp/node_modules/x", "memory.json", "abilities-small/a", "mcp.json"]
)
def test_what_the_recipes_leave_in_the_clone_is_ignored_by_git(left: str) -> None:
    done = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", left], check=False)
    assert done.returncode == 0, f"{left} would show as untracked after a docs recipe"


def test_the_page_tells_a_rate_limited_case_from_forgetting_and_a_measurement_from_a_pass(
    recall_suite: RecallSuite, monkeypatch: pytest.MonkeyPatch
) -> None:
    recall_suite.add("remembers", ["remember 12345.67", "recall"])
    recall_suite.add("limited", ["remember 2.25", "recall"], "2.25")
    html = recall_suite.pytester.path / "page.html"
    with FakeModelServer("plain", rate_limit=RateLimitStretch(after=2, seconds=600, retry_after=1)) as server:
        monkeypatch.setenv("RECALL_TEST_MODEL_URL", server.base_url)
        recall_suite.run(
            "--recall-rate-limit-attempts=1", "--recall-threshold=0", f"--recall-html={html}",
            command=recall_suite.agent("model_caller"),
        )  # fmt: skip

    assert [record["outcome"] for record in recall_suite.records().values()].count("rate_limited") == 1
    page = html.read_text(encoding="utf-8")
    assert '<div class="badge">MEASURED</div>' in page and "Threshold 0: this run measures" in page
    rows = json.loads(re.search(r'<script type="application/json" id="recall-rows">(.*?)</script>', page, re.S)[1])
    assert sorted(row[1] for row in rows) == ["PASS 1.00", "RATE LIMITED"]


def test_no_memory_figures_are_printed_over_cases_whose_agent_never_ran(recall_suite: RecallSuite) -> None:
    recall_suite.add("remembers", ["remember 12345.67", "recall"])
    config = recall_suite.pytester.path / "mcp.json"
    entry = {"command": sys.executable, "args": [str(LEAKY_SERVER), "{scope}/store.txt"]}
    config.write_text(json.dumps({"mcpServers": {"memory": entry}}), encoding="utf-8")
    missing_cli = f"{sys.executable} -c \"import sys; sys.exit('recall-claude: cannot find claude on PATH')\""

    result = recall_suite.run(f"--recall-mcp={config}", "--recall-answer-judge=contains", command=missing_cli)

    assert recall_suite.records()["remembers"]["outcome"] == "agent_failed"
    result.stdout.no_fnmatch_line("*memory (MCP tap)*")
    result.stdout.no_fnmatch_line("*evidence recall*")


def test_the_pages_stop_line_writes_its_interval_as_the_page_writes_scores() -> None:
    from pytest_recall.reporting.html import render_html
    from pytest_recall.reporting.merge import report_of_rows

    records = [
        {"id": f"q{i}", "suite": "s", "nodeid": f"s/q{i}::recall", "category": "recall", "score": 1.0, "error": None,
         "epoch": 1, "control": False, "duration_s": 1.0, "cost_usd": None, "content_hash": f"h{i}", "steps": []}
        for i in range(7)
    ]  # fmt: skip
    stop = {
        "decided_after": 7, "n_cases": 60, "n_not_run": 53, "decision": "above", "alpha": 0.05,
        "interval_level": 0.9, "estimate": 1.0, "interval": [0.532, 1.0],
    }  # fmt: skip
    report = replace(report_of_rows(records, threshold=0.5, command="agent"), stop=stop)

    page = render_html(report)

    assert "90% anytime-valid interval 53.2% – 100.0%" in page
    assert "[0.532, 1.000]" not in page


def test_the_pages_protocol_is_a_table_of_fields_with_hashes_cut_short() -> None:
    from pytest_recall.reporting.html import render_html
    from pytest_recall.reporting.merge import report_of_rows

    digest = "ab" * 32
    judges = [{"name": name, "command": f"judge {name}", "files_sha256": {"prompt.txt": digest}} for name in "xy"]
    block = {"judges": {"llm_judge": {"command": "judge x", "files_sha256": {"prompt.txt": digest}, "judges": judges}}}
    record = {
        "id": "q", "suite": "s", "nodeid": "s/q::recall", "category": "recall", "score": 1.0, "error": None,
        "epoch": 1, "control": False, "duration_s": 1.0, "cost_usd": None, "content_hash": "h", "steps": [],
    }  # fmt: skip

    page = render_html(report_of_rows([record], threshold=0.5, command="agent", protocol=block))

    # A file the panel's judges share is hashed once, the judges by name beside it (tests/test_html_judges_protocol.py).
    assert "<tr><td>judges.llm_judge.files_sha256.prompt.txt</td><td>abababababab (judges x, y)</td></tr>" in page
    assert "<tr><td>judges.llm_judge.judges[y].files_sha256</td><td>prompt.txt (hashes above)</td></tr>" in page


def test_the_pages_memory_use_has_the_retrieval_table_and_each_cases_reads_and_writes() -> None:
    from pytest_recall.reporting.html import render_html
    from pytest_recall.reporting.merge import report_of_rows

    use = {"writes_before": 2, "reads_last": 1, "calls": 3, "errors": 0, "returned_bytes": 40, "latency_ms": {},
           "evidence_retrieved": True}  # fmt: skip
    record = {
        "id": "q", "suite": "s", "nodeid": "s/q::recall", "category": "recall", "score": 0.0, "error": None,
        "epoch": 1, "control": False, "duration_s": 1.0, "cost_usd": None, "content_hash": "h", "steps": [],
        "memory_use": use, "memory_bytes": 2048,
    }  # fmt: skip

    page = render_html(report_of_rows([record], threshold=0.5, command="agent"))

    assert "<tr><td>evidence retrieved</td><td>0</td><td>1</td></tr>" in page
    assert "2 writes, 1 reads" in page
