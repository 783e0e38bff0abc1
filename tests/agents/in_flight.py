"""A test agent that counts the sessions in flight at once, then answers 12345.67.

Each session leaves a marker file in ``$RECALL_TEST_MARKS`` while it runs,
counts the markers when it starts (itself included), appends the count to
``seen.txt`` beside that folder, sleeps ``$RECALL_TEST_SLEEP`` seconds, and
removes its marker. The largest count is the most sessions that ran at once.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

marks = Path(os.environ["RECALL_TEST_MARKS"])
mine = marks / f"in-{os.getpid()}"
mine.touch()
seen = sum(1 for path in marks.iterdir() if path.name.startswith("in-"))
with open(marks.parent / "seen.txt", "a", encoding="utf-8") as handle:
    handle.write(f"{seen}\n")
time.sleep(float(os.environ.get("RECALL_TEST_SLEEP", "1.5")))
mine.unlink()
print("12345.67")
