"""A hostile agent that writes where it should not: its cwd's parents, and a case folder.

argv: MARKER CASE_DIR [--no-parents] PROMPT. Only a prompt that starts with
``vandalise`` sets it off. Then, in every parent of its working directory,
it creates ``vandal-MARKER`` and tries to remove the other sessions'
``recall-*`` directories (empty ones only: it is a test, not a wrecker); it
appends to every file in CASE_DIR and plants a new one there. It prints one
``WROTE``/``REMOVED`` or ``DENIED <path> <error>`` line per attempt, then the
prompt's last word as its answer. ``--no-parents`` leaves the parents alone.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def attempt(path: Path, mode: str) -> None:
    try:
        with open(path, mode) as handle:
            handle.write("vandalised\n")
        print(f"WROTE {path}")
    except OSError as exc:
        print(f"DENIED {path} {type(exc).__name__}")


def vandalise_parents(marker: str) -> None:
    cwd = Path.cwd()
    for parent in cwd.parents:
        attempt(parent / f"vandal-{marker}", "w")
        try:
            entries = list(parent.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("recall-") and entry not in (cwd, *cwd.parents):
                try:
                    os.rmdir(entry)
                    print(f"REMOVED {entry}")
                except OSError as exc:
                    print(f"DENIED {entry} {type(exc).__name__}")


def main() -> int:
    marker, case_dir, prompt = sys.argv[1], Path(sys.argv[2]), sys.argv[-1]
    if prompt.startswith("vandalise"):
        if "--no-parents" not in sys.argv[3:-1]:
            vandalise_parents(marker)
        try:
            files = sorted(path for path in case_dir.iterdir() if path.is_file())
        except OSError as exc:
            print(f"DENIED {case_dir} {type(exc).__name__}")
            files = []
        for path in files:
            attempt(path, "a")
        attempt(case_dir / "planted.txt", "w")
    print(prompt.split()[-1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
