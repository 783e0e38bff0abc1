"""A large data file is never held whole: not by the import, and not by pytest collecting the suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

MEGABYTE = 1024 * 1024
RECORDS = 40
# Each record's haystack: one session of this many characters per step, ten steps.
SESSION_CHARS = 150_000


def write_big_longmemeval(path: Path) -> None:
    """A LongMemEval file of RECORDS records, each with a haystack of ten ~150 KB sessions (about 60 MB)."""
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        for index in range(RECORDS):
            filler = f"word{index} " * (SESSION_CHARS // 8)
            record = {
                "question_id": f"q{index:03d}",
                "question_type": "single-session-user",
                "question": "What did I say?",
                "answer": "something",
                "question_date": "2023/06/10 (Sat) 11:00",
                "haystack_session_ids": [f"s{n}" for n in range(10)],
                "haystack_dates": ["2023/05/20 (Sat) 02:21"] * 10,
                "haystack_sessions": [[{"role": "user", "content": filler}] for _ in range(10)],
                "answer_session_ids": [],
            }
            out.write(("," if index else "") + json.dumps(record))
        out.write("]")


def peak_rss_mb(argv: list[str], cwd: Path) -> float:
    """The peak resident memory of ``argv`` run as the only child of a fresh interpreter."""
    probe = (
        "import resource, subprocess, sys\n"
        f"subprocess.run({argv!r}, stdout=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, check=True)
    return int(done.stdout.strip()) / 1024


@pytest.mark.slow
def test_importing_and_collecting_a_large_file_keeps_memory_below_its_size(tmp_path):
    source = tmp_path / "longmemeval_big.json"
    write_big_longmemeval(source)
    size_mb = source.stat().st_size / MEGABYTE
    assert size_mb > 40
    importing = peak_rss_mb(
        [sys.executable, "-m", "pytest_recall.cli", "import", "longmemeval", str(source), "--out", "big"], tmp_path
    )
    assert len(list((tmp_path / "big").iterdir())) == RECORDS + 1  # the cases and import.json
    collecting = peak_rss_mb(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--collect-only",
            "-q",
            "--recall-prompt=stdin",
            "big",
        ],
        tmp_path,
    )
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "--recall-prompt=stdin", "big"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert f"this run will start {RECORDS * 11} agent sessions for {RECORDS} case runs" in listed.stdout
    (tmp_path / "empty").mkdir()
    loading = peak_rss_mb([sys.executable, "-c", f"import json; json.load(open({str(source)!r}))"], tmp_path)
    bare = peak_rss_mb([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "empty"], tmp_path)
    print(
        f"file {size_mb:.0f} MB: json.load {loading:.0f} MB, import {importing:.0f} MB; collection {collecting:.0f} MB"
    )
    assert importing < loading / 2
    # Collecting the suite costs about what collecting nothing costs: no case's prompts stay behind.
    assert collecting < bare + size_mb / 4
