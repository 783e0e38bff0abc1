"""Import memory: does ``pytest-recall import beam`` keep its peak flat as the conversation grows tenfold?

A BEAM-10M-shaped conversation (``chat.json`` as plans of batches of turns,
``[{"plan-1": [batch, ...]}, ...]``, and a probing-questions file) is written
at two sizes ten times apart, and each is imported in a fresh process that
reports its own peak RSS (``ru_maxrss``) when the import is done. The reader
holds one batch at a time and the ingest steps are written as they fill, so
the peak should not follow the size of the file.

Goal: the larger import's peak under 1.5x the smaller's (a 10x larger file).

    python bench/import_memory.py            # 40 MB and 400 MB chats (about 10M and 100M tokens)
    python bench/import_memory.py --quick    # 2 MB and 20 MB
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _common import PYTHON, ROOT, Row, goal_text, parse_args, print_table, ratio_of, scratch

GOAL_RATIO = 1.5
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
MEASURE = """
import resource, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from pytest_recall.suites.importers import IMPORTERS
from pytest_recall.suites.public_import import Selection
IMPORTERS["beam"](Path(sys.argv[2]), Path(sys.argv[3]), Selection())
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


def peak_rss_kb(source: Path, out: Path) -> int:
    done = subprocess.run(
        [PYTHON, "-c", MEASURE, str(ROOT), str(source), str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the import failed: {done.stderr.strip()[-2000:]}")
    return int(done.stdout.split()[-1])


def main() -> int:
    args = parse_args(__doc__.splitlines()[0], repeat=1)
    small = 2_000_000 if args.quick else 40_000_000
    peaks: dict[int, int] = {}
    sizes: dict[int, int] = {}
    with scratch("import-memory") as root:
        for scale in (1, 10):
            folder = root / f"chats{scale}" / "10M" / "1"
            sizes[scale] = write_conversation(folder, small * scale)
            peaks[scale] = min(peak_rss_kb(folder, root / f"suite{scale}-{n}") for n in range(args.repeat))
    ratio = ratio_of(peaks[10], peaks[1])
    rows = [
        Row(
            f"beam import, {sizes[10] / 1e6:.0f} MB vs {sizes[1] / 1e6:.0f} MB chat",
            f"{peaks[10] / 1024:.1f} MB",
            (f"{peaks[1] / 1024:.1f} MB",),
            "peak ratio",
            ratio,
            goal_text(ratio, at_most=GOAL_RATIO),
        )
    ]
    print_table("Peak RSS of an import as the conversation grows 10x", ["smaller chat's peak"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
