"""``pytest-recall generate``: generated suites written as case folders, byte for byte the same every time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_recall.cases.model import case_files, load_case_dir
from pytest_recall.cli import main
from pytest_recall.suites import audit, audit_v2, ledger


def tree(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def load(folder: Path):
    return load_case_dir(folder, suite=folder.parent.name, source=folder.name, known_kinds=None)


def test_generate_ledger_writes_the_same_bytes_for_the_same_arguments(tmp_path, capsys):
    for out in ("first", "second"):
        assert main(["generate", "ledger", "--seed", "11", "--count", "12", "--out", str(tmp_path / out)]) == 0

    first, second = tree(tmp_path / "first"), tree(tmp_path / "second")
    assert first == second
    assert sorted({name.split("/")[0] for name in first}) == [f"ledger_{n:04d}" for n in range(1, 13)]
    assert capsys.readouterr().out.splitlines()[-1] == f"wrote 12 ledger cases to {tmp_path / 'second'}"


def test_generated_ledger_folders_are_the_suite_file_cases_in_the_seed_layout(tmp_path):
    main(["generate", "ledger", "--seed", "11", "--count", "12", "--out", str(tmp_path / "out")])

    for index in range(12):
        case = ledger.generate_one(11, index)
        folder = tmp_path / "out" / case.case_id
        assert sorted(path.name for path in folder.iterdir()) == ["answer.json", "step1.txt", "step2.txt"]
        assert {name: text.encode() for name, text in case_files(case).items()} == tree(folder)
        assert load(folder).content_hash == case.content_hash


@pytest.mark.parametrize(("flags", "version"), [([], 3), (["--version", "2"], 2), (["--version", "1"], 1)])
def test_generated_audit_folders_keep_the_rehearsal_feedback_and_load_back_as_the_suite_file_cases(
    tmp_path, flags, version
):
    assert main(["generate", "audit", "--split", "eval", "--size", "9", *flags, "--out", str(tmp_path / "out")]) == 0

    for index in range(9):
        case = (
            audit.generate_one("eval", index) if version == 1 else audit_v2.generate_one("eval", index, version=version)
        )
        loaded = load(tmp_path / "out" / case.case_id)
        assert loaded.steps[1].feedback is not None
        assert loaded.content_hash == case.content_hash


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["audit", "--split", "eval", "--size", "0"], "audit: 'size' must be a whole number from 1 to 256, not 0"),
        (["audit", "--split", "eval", "--size", "257"], "audit: 'size' must be a whole number from 1 to 256, not 257"),
        (["audit", "--split", "dev", "--size", "4"], "audit: 'split' must be one of train, eval, not 'dev'"),
        (
            ["audit", "--split", "eval", "--size", "4", "--version", "4"],
            "audit: 'version' must be one of 1, 2, 3, not 4",
        ),
        (["coding", "--seed", "1", "--count", "4", "--version", "3"], "coding: 'version' must be one of 1, 2, not 3"),
        (["ledger", "--seed", "1", "--count", "0"], "ledger: 'count' must be a whole number from 1 to 10000, not 0"),
        (["ledger", "--seed", "-1", "--count", "3"], "ledger: 'seed' must be a whole number of at least 0, not -1"),
    ],
)
def test_a_bad_parameter_is_one_line_and_writes_nothing(tmp_path, capsys, arguments, message):
    out = tmp_path / "out"

    assert main(["generate", *arguments, "--out", str(out)]) == 2

    assert capsys.readouterr().err == f"pytest-recall generate: {message}\n"
    assert not out.exists()


def test_generate_refuses_a_folder_that_already_holds_files(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale_case").mkdir()

    assert main(["generate", "ledger", "--seed", "1", "--count", "2", "--out", str(out)]) == 2

    err = capsys.readouterr().err
    assert err.startswith(f"pytest-recall generate: --out {out} is not an empty folder; choose a new one")
    assert err.count("\n") == 1
    assert [path.name for path in out.iterdir()] == ["stale_case"]


def test_generated_folders_run_and_score_like_the_suite_file_they_came_from(recall_suite):
    root = recall_suite.pytester.path
    main(["generate", "ledger", "--seed", "5", "--count", "10", "--out", str(root / "folders" / "ledger")])
    main(["generate", "audit", "--split", "train", "--size", "8", "--out", str(root / "folders" / "audit")])
    (root / "files" / "ledger").mkdir(parents=True)
    (root / "files" / "ledger" / "suite.toml").write_text('family = "ledger"\nseed = 5\ncount = 10\n')
    (root / "files" / "audit").mkdir()
    (root / "files" / "audit" / "suite.toml").write_text('family = "audit"\nsplit = "train"\nsize = 8\n')

    result = recall_suite.run(
        "folders", "files", "--recall-concurrency=8", command=recall_suite.module("pytest_recall.agents.notebook")
    )

    result.assert_outcomes(passed=36)
    hashes: dict[str, set[str]] = {}
    for record in recall_suite.report()["cases"]:
        hashes.setdefault(f"{record['suite']}/{record['id']}", set()).add(record["content_hash"])
    assert len(hashes) == 18
    assert all(len(both) == 1 for both in hashes.values()), "a folder differs from its suite-file case"


def test_the_console_script_runs_the_same_command(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pytest_recall.cli", "generate", "ledger", "--seed", "3", "--count", "2", "--out", "x"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )

    assert (done.returncode, done.stdout, done.stderr) == (0, "wrote 2 ledger cases to x\n", "")
    assert sorted(path.name for path in (tmp_path / "x").iterdir()) == ["ledger_0001", "ledger_0002"]
