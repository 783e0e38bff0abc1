"""A tiny coding agent for workspace tests.

It obeys ``WRITE path text``, ``APPEND path text``, ``LINK path target`` and
``HARDLINK path target`` lines in its prompt, and reports what its workdir held
when it started in ``seen.txt`` (carry tests read it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> int:
    prompt = sys.argv[-1]
    seen = sorted(str(p) for p in Path(".").rglob("*") if p.is_file())
    for line in prompt.splitlines():
        verb, _, rest = line.partition(" ")
        path, _, text = rest.partition(" ")
        if verb in ("WRITE", "APPEND"):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a" if verb == "APPEND" else "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
        elif verb in ("LINK", "HARDLINK"):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            (os.symlink if verb == "LINK" else os.link)(text, path)
    Path("seen.txt").write_text("\n".join(seen) + "\n", encoding="utf-8")
    print("DONE")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
