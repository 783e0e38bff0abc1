"""Import memory: does ``pytest-recall import`` keep its peak flat as the haystack grows tenfold?

Two long haystacks, each written at two sizes ten times apart and imported
in a fresh process that reports its own peak RSS (``ru_maxrss``) when the
import is done:

* BEAM: a BEAM-10M-shaped conversation (``chat.json`` as plans of batches of
  turns, ``[{"plan-1": [batch, ...]}, ...]``, and a probing-questions file).
  The reader holds one batch at a time.
* MemoryAgentBench: one JSON Lines row whose ``context`` string is the whole
  haystack, written before the row's questions (the harder order: the reader
  must spool it before it knows the row). The reader decodes that string a
  buffer at a time into a temporary file and the steps are written from it.

The ingest steps are written as they fill, so neither peak should follow the
size of the file. Goal: the larger import's peak under 1.5x the smaller's.

    python bench/import_memory.py                         # 40 MB and 400 MB haystacks (about 10M and 100M tokens)
    python bench/import_memory.py --quick                 # 2 MB and 20 MB
    python bench/import_memory.py --only memoryagentbench # one of the two
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _common import PYTHON, ROOT, Row, goal_text, parse_args, print_table, ratio_of, scratch

GOAL_RATIO = 1.5
BENCHMARKS = ("beam", "memoryagentbench")
BATCH_BYTES = 200_000
TURN_TEXT = "I keep notes on the garden: the tomatoes went in on May 3 and the basil is by the shed. " * 5
PROBES = {
    "information_extraction": [
        {
            "question": "When did the tomatoes go in?",
            "answer": "May 3",
            "rubric": ["LLM response should state: May 3"],
        }
    ]
}
# One line of a context: JSON escapes in it (a quote, a tab, an accent and a pair as ``\\u`` escapes) on purpose.
CONTEXT_LINE = 'Document {n}: the keeper of gate {n} is "K{n:07d}";\tshe files it under caf\u00e9 \U0001f9e0 notes.\n'
MAB_FIELDS = {
    "questions": ["Who keeps gate 7?"],
    "answers": [["K0000007"]],
    "metadata": {"source": "ruler_qa1_197K", "qa_pair_ids": ["gate_q1"]},
}
MEASURE = """
import resource, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from pytest_recall.suites.importers import IMPORTERS
from pytest_recall.suites.public_import import Selection
IMPORTERS[sys.argv[4]](Path(sys.argv[2]), Path(sys.argv[3]), Selection())
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_conversation(folder: Path, total_bytes: int) -> int:
    """A 10M-shaped conversation of about ``total_bytes``, written a batch at a time; the bytes written."""
    (folder / "probing_questions").mkdir(parents=True)
    (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps(PROBES), encoding="utf-8")
    batches = max(1, total_bytes // BATCH_BYTES)
    plans = max(1, batches // 10)
    turn = {"role": "user", "id": 0, "content": TURN_TEXT}
    turns_per_batch = BATCH_BYTES // len(json.dumps(turn))
    with (folder / "chat.json").open("w", encoding="utf-8") as out:
        out.write("[")
        for plan in range(plans):
            out.write(("," if plan else "") + json.dumps(f"plan-{plan + 1}").join(["{", ": ["]))
            for number in range(batches // plans):
                batch = {"batch_number": number + 1, "time_anchor": "May-3-2024", "turns": [[turn]] * turns_per_batch}
                out.write(("," if number else "") + json.dumps(batch))
            out.write("]}")
        out.write("]")
    return (folder / "chat.json").stat().st_size


def write_row(folder: Path, total_bytes: int) -> Path:
    """A MemoryAgentBench split of one row whose context is about ``total_bytes`` of JSON, written a line at a time."""
    folder.mkdir(parents=True)
    path = folder / "Accurate_Retrieval.jsonl"
    with path.open("w", encoding="utf-8") as out:
        out.write('{"context": "')
        written = number = 0
        while written < total_bytes:
            line = json.dumps(CONTEXT_LINE.format(n=number))[1:-1]
            out.write(line)
            written += len(line)
            number += 1
        out.write('", ' + json.dumps(MAB_FIELDS)[1:] + "\n")
    return path


def peak_rss_kb(benchmark: str, source: Path, out: Path) -> int:
    done = subprocess.run(
        [PYTHON, "-c", MEASURE, str(ROOT), str(source), str(out), benchmark],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the import failed: {done.stderr.strip()[-2000:]}")
    return int(done.stdout.split()[-1])


def measured(benchmark: str, root: Path, small: int, repeat: int) -> Row:
    """The peak of an import of the benchmark's haystack at ``small`` bytes and at ten times that, as a table row."""
    peaks: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for scale in (1, 10):
        if benchmark == "beam":
            source = root / f"chats{scale}" / "10M" / "1"
            sizes[scale] = write_conversation(source, small * scale)
        else:
            source = write_row(root / f"rows{scale}", small * scale)
            sizes[scale] = source.stat().st_size
        out = root / f"suite-{benchmark}{scale}"
        peaks[scale] = min(peak_rss_kb(benchmark, source, out.with_name(f"{out.name}-{n}")) for n in range(repeat))
    ratio = ratio_of(peaks[10], peaks[1])
    haystack = "chat" if benchmark == "beam" else "context"
    return Row(
        f"{benchmark} import, {sizes[10] / 1e6:.0f} MB vs {sizes[1] / 1e6:.0f} MB {haystack}",
        f"{peaks[10] / 1024:.1f} MB",
        (f"{peaks[1] / 1024:.1f} MB",),
        "peak ratio",
        ratio,
        goal_text(ratio, at_most=GOAL_RATIO),
    )


def only_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", choices=BENCHMARKS, help="measure one benchmark's import (default: both)")


def main() -> int:
    args = parse_args(__doc__.splitlines()[0], repeat=1, more=only_option)
    small = 2_000_000 if args.quick else 40_000_000
    rows = []
    for benchmark in [args.only] if args.only else BENCHMARKS:
        with scratch(f"import-memory-{benchmark}") as root:
            rows.append(measured(benchmark, root, small, args.repeat))
    print_table("Peak RSS of an import as the haystack grows 10x", ["smaller haystack's peak"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
