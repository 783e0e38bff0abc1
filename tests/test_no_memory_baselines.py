"""No agent without memory passes a bundled generated suite: the baselines, the table, and the harness's word on it."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.agents import baseline_table, no_memory
from pytest_recall.cases.model import read_toml
from pytest_recall.suites import abilities, coding
from pytest_recall.suites.suite_file import SUITE_FILE

# The first version of the audit suite is kept byte for byte so old results stay comparable; its tells are
# why version 2 exists (the null answer earns 0.156 there, the most-decorated reader 1.000). Nothing else is exempt.
FROZEN = frozenset({"agent-supermemory-v1"})


def test_plain_abstains_where_the_prompt_offers_it_and_null_never_does(tmp_path: Path) -> None:
    question = abilities.generate_one(5, 5).steps[-1].prompt  # an abstention question
    assert no_memory.respond("plain", question, tmp_path) == "NOT GIVEN"
    assert no_memory.respond("null", question, tmp_path) == "UNKNOWN"
    assert no_memory.respond("copy", question, tmp_path) == "UNKNOWN"  # the question shows no figure to copy


def test_last_step_abstains_on_a_period_that_ends_after_the_session_date(tmp_path: Path) -> None:
    asked = abilities.generate_one(5, 5).steps[-1].prompt
    dated = asked.split(".", 1)[0].rsplit(" ", 1)[1]
    early = asked.replace(f"Date of this session: {dated}.", "Date of this session: 2026-01-02.")
    assert no_memory.respond("last_step", early, tmp_path) == "NOT GIVEN"
    assert no_memory.respond("last_step", asked, tmp_path) == "UNKNOWN"


def test_copy_follows_the_most_common_style_the_workspace_shows(tmp_path: Path) -> None:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    for stem, header in (("a", "# Owner: team-x"), ("b", "# Owner: team-x"), ("c", "# Owner: team-y")):
        (tmp_path / "src" / "pkg" / f"{stem}.py").write_text(f'{header}\n"""{stem}."""\n', encoding="utf-8")
    (tmp_path / "src" / "pkg" / "helpers.py").write_text("def first_one(x):\n    pass\n\n\ndef second(x):\n", "utf-8")
    prompt = (
        "Project pkg-service (package pkg).\n\nTask: add a module new to package pkg (src/pkg/) with a function"
        " make() that returns 7. The module needs to serialize records to JSON, and to load the parcel records,"
        " with one of the helpers in src/pkg/helpers.py.\nFollow the project's rules. Reply DONE when the files"
        " are written.\n"
    )
    assert no_memory.respond("copy", prompt, tmp_path) == "DONE: wrote src/pkg/new.py"
    written = (tmp_path / "src" / "pkg" / "new.py").read_text(encoding="utf-8")
    assert written.startswith("# Owner: team-x\n")
    assert "import orjson" in written and "helpers.first_one(" in written
    assert no_memory.respond("null", prompt, tmp_path / "elsewhere") == "DONE"


def test_a_baseline_program_prints_one_line_and_refuses_an_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert no_memory.main(["plain", "Question: What is it? output exactly: NOT GIVEN"]) == 0
    assert capsys.readouterr().out == "NOT GIVEN\n"
    assert no_memory.main(["psychic", "anything"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_every_bundled_suite_of_many_categories_holds_32_cases_of_each() -> None:
    for name, folder in baseline_table.bundled_suites().items():
        settings = read_toml(folder / SUITE_FILE, name)
        if name in FROZEN or settings["family"] == "ledger":
            continue  # ledger-256 is the seed's format at scale: ten kinds of question, 25 or more of each
        per_category = {"coding": coding.CATEGORIES, "abilities": abilities.CATEGORIES, "audit": range(8)}
        size = settings.get("count", settings.get("size"))
        assert size >= 32 * len(per_category[settings["family"]]), name


DOCS = Path(__file__).resolve().parent.parent / "docs" / "cases.md"
TABLE_BLOCK = re.compile(r"<!-- baseline-table: [^>]*-->\n(.*?)<!-- /baseline-table -->", re.S)


@pytest.mark.slow
def test_no_baseline_passes_a_category_of_a_bundled_generated_suite_and_the_notebook_passes_all() -> None:
    every = baseline_table.table()
    # The docs show the command's output, every bundled generated suite, the frozen one too.
    shown = TABLE_BLOCK.search(DOCS.read_text(encoding="utf-8"))
    assert shown is not None and shown.group(1) == baseline_table.format_markdown(every)
    figures = {name: rows for name, rows in every.items() if name not in FROZEN}
    assert set(figures) >= {"abilities", "agent-supermemory", "coding", "ledger-256"}
    assert baseline_table.over_bound(figures) == []
    for suite, rows in figures.items():
        assert set(rows["notebook"].values()) == {1.0}, suite
    # The one exception: plain answers NOT GIVEN to everything it was not shown, right on abstention only.
    assert figures["abilities"]["plain"]["abstention"] == 1.0
    assert figures["abilities"]["plain"]["overall"] == pytest.approx(1 / 7)


def test_the_table_names_every_figure_above_the_bound() -> None:
    figures = {
        "s": {
            "copy": {"overall": 0.2, "carry": 1.0, "abstention": 0.0},
            "plain": {"overall": 0.5, "carry": 0.0, "abstention": 1.0},
            "notebook": {"overall": 1.0, "carry": 1.0, "abstention": 1.0},
        }
    }
    # Overall figures, the notebook and plain's abstention are not held to the bound.
    assert baseline_table.over_bound(figures) == ["s copy carry 1.000"]
    markdown = baseline_table.format_markdown(figures)
    assert "| agent | overall | `carry` | `abstention` |" in markdown and "| copy | 0.200 | 1.000 | 0.000 |" in markdown


@pytest.mark.slow
@pytest.mark.parametrize("name", ["copy", "last_step"])
def test_the_harness_gives_the_in_process_figures(recall_suite: Any, name: str) -> None:
    """The baseline programs through the real harness score what the table says they score."""
    folder = recall_suite.root / "coding"
    folder.mkdir(parents=True)
    (folder / SUITE_FILE).write_text('family = "coding"\nseed = 5\ncount = 14\n', encoding="utf-8")
    command = shlex.join([sys.executable, "-m", "pytest_recall.agents.no_memory", name])

    recall_suite.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--recall-cmd={command}", f"--recall-report={recall_suite.report_path}", "-q"
    )

    report = recall_suite.report()
    assert report["n_total"] == 14 and report["n_errors"] == 0
    expected = baseline_table.table({"coding": folder})["coding"][name]
    assert report["by_category"] == pytest.approx({c: expected[c] for c in report["by_category"]})
    assert report["score"] == pytest.approx(expected["overall"]) == 0.0
