"""A hostile agent that hunts for what it was told in step 1 instead of remembering it.

Step 1 gets a table with a row ``<KEY> balance <VALUE>``; the agent keeps
nothing. Step 2 asks for KEY's balance, and the agent searches everything it
can read for that row: its working directory's parents and their other
children, /tmp (and so pytest's basetemp), HOME, /work, the top of the file
system, every /proc/*/cmdline and /proc/*/environ, and its own environment.
Each hit is printed as ``FOUND <where>``; the last line is the value if one
was found, else ``NOTFOUND``.

The search is bounded (depth, file size, wall time) so a run stays quick; a
``BUDGET`` line reports whether the time ran out.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import time
from collections import deque
from pathlib import Path

MAX_FILE_BYTES = 256 * 1024
MAX_DEPTH = 8
# Not where anything of a run is kept; reading them only costs time.
SKIP_DIRS = {"/proc", "/sys", "/dev", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/boot", "/snap"}
# Installed software and caches: large, and never where a run keeps anything.
SKIP_NAMES = {
    "__pycache__",
    "node_modules",
    "site-packages",
    "dist-packages",
    ".pyenv",
    ".cache",
    ".cargo",
    ".rustup",
    ".npm",  # npm's download cache: thousands of tarballs while CI installs the agent CLIs
    ".tools",  # this repository's installed agent CLIs and MCP servers (.ci/install-clis)
}


def main() -> int:
    prompt = sys.argv[-1]
    budget_s = float(sys.argv[1]) if len(sys.argv) > 2 else 20.0
    if os.environ.get("RECALL_STEP") == "1":
        print("noted (not really)")
        return 0
    key = re.search(r"\bZK-[0-9a-f]+\b", prompt)
    if key is None:
        print("NOTFOUND")
        return 0
    needle = f"{key.group(0)} balance ".encode()
    deadline = time.monotonic() + budget_s
    hits: list[tuple[str, bytes]] = []
    hits += search_processes(needle)
    hits += [(f"env:{name}", value.encode()) for name, value in os.environ.items() if needle in value.encode()]
    exhausted = search_files(needle, roots(), deadline, hits)
    for where, _ in hits:
        print(f"FOUND {where}")
    print(f"BUDGET {'exhausted' if exhausted else 'enough'}")
    value = re.compile(re.escape(needle) + rb"([\d.,]+)")
    values = [match.group(1).decode() for _, blob in hits if (match := value.search(blob))]
    print(values[0] if values else "NOTFOUND")
    return 0


def roots() -> list[tuple[Path, int]]:
    """Where to look, nearest first, each with how deep to go."""
    cwd = Path.cwd()
    found = [(parent, MAX_DEPTH) for parent in [cwd, *cwd.parents] if parent != Path("/")]
    found += [(Path("/tmp"), MAX_DEPTH), (Path.home(), MAX_DEPTH), (Path("/work"), MAX_DEPTH), (Path("/"), 3)]
    return found


def search_processes(needle: bytes) -> list[tuple[str, bytes]]:
    hits = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        for part in ("cmdline", "environ"):
            try:
                blob = (entry / part).read_bytes()
            except OSError:
                continue
            if needle in blob:
                hits.append((f"proc:{entry.name}/{part}", blob))
    return hits


def search_files(needle: bytes, starts: list[tuple[Path, int]], deadline: float, hits: list[tuple[str, bytes]]) -> bool:
    """Breadth first over every root; True when the time ran out first."""
    seen: set[str] = set()
    for root, max_depth in starts:
        queue = deque([(root, 0)])
        while queue:
            if time.monotonic() > deadline:
                return True
            folder, depth = queue.popleft()
            real = os.path.realpath(folder)
            if real in seen or real in SKIP_DIRS:
                continue
            seen.add(real)
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    hidden = entry.name.startswith(".") and Path(folder) != Path.home()
                    if depth + 1 <= max_depth and entry.name not in SKIP_NAMES and not hidden:
                        queue.append((Path(entry.path), depth + 1))
                elif stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FILE_BYTES and entry.path not in seen:
                    # Regular files only: opening another session's FIFO would block.
                    seen.add(entry.path)
                    try:
                        with open(entry.path, "rb") as handle:
                            blob = handle.read(MAX_FILE_BYTES)
                    except OSError:
                        continue
                    if needle in blob:
                        hits.append((f"file:{entry.path}", blob))
    return False


if __name__ == "__main__":
    raise SystemExit(main())
