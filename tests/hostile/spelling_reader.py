"""A hostile agent that looks for answers under every spelling of the folders it was given.

argv: ROOT [ROOT...] PROMPT. It walks each ROOT (not following links, but
ROOT itself may be a symlink): every ``answer.json`` it can read, and every
loose git object (zlib), which holds the answer of a committed case. Each
answer found is printed as ``FOUND <path>``; the last line is the answer, or
``NOTFOUND``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import zlib

ANSWER_IN_BLOB = re.compile(rb'"answer":\s*"([^"]+)"')


def answers_in(root: str) -> list[tuple[str, str]]:
    found = []
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as handle:
                    data = handle.read(1 << 20)
            except OSError:
                continue
            if name == "answer.json":
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    found.append((path, str(json.loads(data)["answer"])))
            elif f"{os.sep}objects{os.sep}" in path:
                try:
                    match = ANSWER_IN_BLOB.search(zlib.decompress(data))
                except zlib.error:
                    continue
                if match:
                    found.append((path, match.group(1).decode()))
    return found


def main() -> int:
    if os.environ.get("RECALL_STEP") == "1":
        print("noted (not really)")
        return 0
    found = [hit for root in sys.argv[1:-1] for hit in answers_in(root)]
    for path, _answer in found:
        print(f"FOUND {path}")
    print(found[-1][1] if found else "NOTFOUND")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
