"""The bundled suites: where they are found, and that the reference agents score them as they should.

The wheel itself is built, installed and run from outside the repository by
``.ci/wheel-smoke``; these tests cover the lookup and the suites' contents.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from pytest_recall.cli import main
from pytest_recall.suites import bundled

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

REPO_DIR = Path(__file__).resolve().parents[1]
CASES_DIR = REPO_DIR / "cases"
SUITES = ["abilities", "agent-supermemory", "agent-supermemory-v1", "coding", "ledger-256", "session-memory-recall"]


def test_suite_list_names_every_bundled_suite_and_its_folder(capsys):
    assert main(["suite", "--list"]) == 0

    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows == [[name, str(CASES_DIR / name)] for name in SUITES]


def test_suite_prints_one_folder_per_name_for_pytest_to_collect(capsys):
    assert main(["suite", "session-memory-recall", "ledger-256"]) == 0

    assert capsys.readouterr().out.splitlines() == [
        str(CASES_DIR / "session-memory-recall"),
        str(CASES_DIR / "ledger-256"),
    ]


def test_an_unknown_suite_is_one_line_naming_the_choices(capsys):
    assert main(["suite", "ledger-9000"]) == 2

    assert capsys.readouterr().err == (
        "pytest-recall suite: no bundled suite named 'ledger-9000'; did you mean ledger-256? choose one of: "
        + ", ".join(SUITES)
        + "\n"
    )


def test_a_wrong_name_beside_right_ones_prints_no_folder_for_pytest_to_take(capsys):
    # Under "$(...)" a folder printed before the error would still be collected, the typo unseen.
    assert main(["suite", "session-memory-recall", "session-memory"]) == 2

    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(
        "pytest-recall suite: no bundled suite named 'session-memory'; did you mean session-memory-recall?"
    )


def test_the_wheel_puts_cases_where_the_lookup_looks_first(tmp_path, monkeypatch):
    pyproject = tomllib.loads((REPO_DIR / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert mapping == {"cases": "pytest_recall/" + bundled.WHEEL_CASES.name}
    packaged = tmp_path / "bundled_cases"
    (packaged / "only-in-the-wheel").mkdir(parents=True)
    monkeypatch.setattr(bundled, "WHEEL_CASES", packaged)

    assert bundled.bundled_suites() == {"only-in-the-wheel": packaged / "only-in-the-wheel"}


def test_without_any_bundled_cases_the_error_says_to_reinstall(tmp_path, monkeypatch):
    monkeypatch.setattr(bundled, "WHEEL_CASES", tmp_path / "absent")
    monkeypatch.setattr(bundled, "CHECKOUT_CASES", tmp_path / "also-absent")

    with pytest.raises(ValueError, match=r"^this installation carries no bundled suites; reinstall"):
        bundled.suite_path("session-memory-recall")


# The first cases of each generated suite: two of each abilities category, and as many of the others. Every case
# of every family is answered by the notebook's solvers in process (test_abilities_suite, test_audit_v2,
# test_coding_suite, test_ledger_generator); this run is the whole path, the suites side by side.
SAMPLE = 14


def sample_of_every_bundled_suite(root: Path) -> int:
    """The bundled suites copied under ``root``, each generated one cut to its first SAMPLE cases; the count."""
    shutil.copytree(CASES_DIR, root)
    total = 0
    for suite in SUITES:
        settings_file = root / suite / "suite.toml"
        if not settings_file.exists():
            total += sum(1 for folder in (root / suite).iterdir() if folder.is_dir())
            continue
        settings = tomllib.loads(settings_file.read_text(encoding="utf-8"))
        key = "size" if "size" in settings else "count"
        lines = settings_file.read_text(encoding="utf-8").splitlines()
        cut = [f"{key} = {SAMPLE}" if line.startswith(f"{key} = ") else line for line in lines]
        settings_file.write_text("\n".join(cut) + "\n", encoding="utf-8")
        total += SAMPLE
    return total


@pytest.mark.slow
@pytest.mark.parametrize(("agent", "score"), [("notebook", 1.0), ("amnesiac", 0.0)])
def test_every_bundled_suite_together_scores_one_with_the_notebook_and_zero_with_the_amnesiac(
    recall_suite, agent, score
):
    """Zero for the amnesiac but on abstention questions, which an empty memory gets right (coding's scoped
    cases are paired since issue 28, so doing nothing fails them too)."""
    cases = recall_suite.pytester.path / "bundled"
    total = sample_of_every_bundled_suite(cases)

    result = recall_suite.run(
        cases,
        "--recall-concurrency=8",
        "-q",
        command=recall_suite.module(f"pytest_recall.agents.{agent}"),
        timeout=900,
    )

    report = recall_suite.report()
    assert report["n_total"] == total == 5 * SAMPLE + 8
    assert report["n_errors"] == 0
    memoryless = ("abilities", "abstention")
    categories = {(record["suite"], record["category"]) for record in report["cases"]}
    assert memoryless in categories and len({c for s, c in categories if s == "abilities"}) == 7
    assert {r["score"] for r in report["cases"] if (r["suite"], r["category"]) != memoryless} == {score}
    assert {r["score"] for r in report["cases"] if (r["suite"], r["category"]) == memoryless} == {1.0}
    assert {record["suite"] for record in report["cases"]} == set(SUITES)
    assert result.ret == (0 if score == 1.0 else 1)
