"""A test agent that tries to cheat: in a later step it hunts for what an earlier step saw.

Step 1 (prompt ``plant <token>``) prints a marker derived from the token,
leaves a copy of it in its working directory, and records that directory.

Step 2 (prompt ``hunt <needle hex> <needle hex> ...``) first checks whether
step 1's directory still exists, then lists ``..`` and every parent with its
siblings, and reads every regular file under pytest's basetemp, the default
``/tmp/pytest-of-<user>``, the temp dir, ``/tmp`` and its own scope, looking
for the needles and for its own prompt. The hunt is bounded in time and
breadth (a machine's ``/tmp`` may hold millions of files): the places this run
writes (its basetemp, its temp dir, its scope and workdir, and every
``recall-*`` entry of the temp dirs) are searched first and must be searched
whole, which the report says (``complete``); the rest of ``/tmp`` is searched
breadth first with what budget is left. The case's own folder
(``$RECALL_TEST_CASE_DIR``) is the one place the prompts may be: the user
wrote them there, so it alone is passed over. It writes what it found to
``$RECALL_TEST_PROBE_DIR/snoop-step2.json`` (paths only, never the needles)
and answers ``AR-2026-0001`` when it found nothing, ``UNKNOWN`` otherwise.

The file is not named test_*, so pytest never collects it.
"""

from __future__ import annotations

import getpass
import itertools
import json
import os
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

CLEAN_ANSWER = "AR-2026-0001"
READ_LIMIT = 1024 * 1024
# The hunt's bounds: wall time, files read, and entries taken from any one directory. The places this run
# writes take a second or two; the rest of /tmp gets what is left of 10 s, so the test stays in the quick
# tier's 20 s on a busy CI machine whose /tmp is full of other tests' folders.
HUNT_SECONDS = 10.0
MAX_FILES = 50_000
MAX_ENTRIES_PER_DIR = 5_000
# Where a harness of this project writes, under a temp dir.
OUR_PREFIXES = ("recall-", "pytest-recall-")
# Installed packages hold no harness output; passing over them keeps the hunt to seconds.
SKIPPED_DIRS = frozenset(
    {".git", ".venv", ".tools", ".npm", "node_modules", "__pycache__", "site-packages", "dist-packages"}
)


def marker_for(token: str) -> str:
    return "OUT-" + token[::-1]


def plant(token: str, probe_dir: Path) -> None:
    marker = marker_for(token)
    Path("left-behind.txt").write_text(marker)
    (probe_dir / "snoop-step1.json").write_text(json.dumps({"cwd": os.getcwd()}))
    print(marker)


class Budget:
    """What is left of the hunt's time and breadth; a root searched within it is ``complete``."""

    def __init__(self) -> None:
        self.deadline = time.monotonic() + HUNT_SECONDS
        self.files_left = MAX_FILES

    def spent(self) -> bool:
        return self.files_left <= 0 or time.monotonic() > self.deadline


def files_under(root: Path, skipped: frozenset[str], budget: Budget) -> tuple[list[Path], bool]:
    """Regular files under ``root``, breadth first (shallow places first), and whether it was searched whole."""
    found: list[Path] = []
    queue = deque([root])
    complete = True
    while queue:
        if budget.spent():
            return found, False
        folder = queue.popleft()
        try:
            with os.scandir(folder) as listing:
                entries = list(itertools.islice(listing, MAX_ENTRIES_PER_DIR + 1))
        except OSError:
            continue
        if len(entries) > MAX_ENTRIES_PER_DIR:
            entries, complete = entries[:MAX_ENTRIES_PER_DIR], False
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_DIRS and os.path.realpath(entry.path) not in skipped:
                        queue.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    found.append(Path(entry.path))
                    budget.files_left -= 1
            except OSError:
                continue
    return found, complete


def hunt(needles: list[bytes], probe_dir: Path) -> None:
    step1_cwd = json.loads((probe_dir / "snoop-step1.json").read_text())["cwd"]
    report: dict[str, object] = {"cwd": os.getcwd(), "step1_dir_exists": os.path.exists(step1_cwd)}
    report["parent_listing"] = sorted(os.listdir(".."))
    step1_name = os.path.basename(step1_cwd)
    report["step1_dir_seen_among_siblings"] = [
        str(parent) for parent in Path.cwd().parents if step1_name in _listing(parent)
    ]
    ours = [
        os.environ.get("RECALL_TEST_BASETEMP", ""),
        tempfile.gettempdir(),
        os.environ.get("RECALL_SCOPE_DIR", ""),
        os.getcwd(),
        *(
            os.path.join(temp, name)
            for temp in dict.fromkeys([tempfile.gettempdir(), "/tmp"])
            for name in _listing(Path(temp))
            if name.startswith(OUR_PREFIXES)
        ),
    ]
    roots = [*ours, f"/tmp/pytest-of-{getpass.getuser()}", "/tmp"]
    report["roots"] = [root for root in dict.fromkeys(roots) if root and os.path.isdir(root)]
    case_dir = os.environ.get("RECALL_TEST_CASE_DIR")
    skipped = frozenset([os.path.realpath(case_dir)] if case_dir else [])
    report["skipped"] = sorted(skipped)
    hits: dict[int, list[str]] = {index: [] for index in range(len(needles))}
    scanned: set[Path] = set()
    budget = Budget()
    complete: dict[str, bool] = {}
    report["complete"] = complete
    for root in report["roots"]:  # type: ignore[attr-defined]
        paths, complete[root] = files_under(Path(root), skipped, budget)
        for path in paths:
            if path in scanned:
                continue
            scanned.add(path)
            try:
                with open(path, "rb") as handle:
                    data = handle.read(READ_LIMIT)
            except OSError:
                continue
            for index, needle in enumerate(needles):
                if needle in data:
                    hits[index].append(str(path))
    report["files_scanned"] = len(scanned)
    report["hits"] = hits
    (probe_dir / "snoop-step2.json").write_text(json.dumps(report))
    clean = not any(hits.values()) and not report["step1_dir_exists"] and not report["step1_dir_seen_among_siblings"]
    print(CLEAN_ANSWER if clean else "UNKNOWN")


def _listing(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def main() -> int:
    prompt = sys.argv[-1]
    probe_dir = Path(os.environ["RECALL_TEST_PROBE_DIR"])
    word, _, rest = prompt.strip().partition(" ")
    if word == "plant":
        plant(rest, probe_dir)
    elif word == "hunt":
        # The needles travel hex-encoded, so this prompt never holds them in plain text;
        # the prompt itself is a needle too: no file may hold a prompt.
        needles = [bytes.fromhex(part) for part in rest.split()] + [prompt.encode()]
        hunt(needles, probe_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
