"""A hostile agent with no memory that plants what it hopes the harness trips over.

argv: TRICK [ARG]. Every step answers UNKNOWN (it remembers nothing); on the
way it plays TRICK, at step 1 unless the trick says "last":

    deep-scope N         a tree N directories deep in its scope
    deep-workdir N       the same in its workdir, at the last step
    cost-fifo            a FIFO as $RECALL_COST_FILE
    cost-link PATH       $RECALL_COST_FILE a symbolic link to PATH (/dev/zero, a host file)
    cost-hardlink PATH   $RECALL_COST_FILE a hard link to PATH
    cost-nested N        a cost file nested N levels deep
    cost TEXT            TEXT as the cost file, at every step
    cost-last TEXT       TEXT as the cost file, at the last step only
    odd-names            files whose names are not UTF-8 in its scope and HOME
    sparse SIZE          a sparse file of SIZE bytes in its scope
    hardlink PATH        a hard link to PATH in its scope
    swap-workdir PATH    its workdir moved aside and replaced by a symbolic link to PATH
    plant-carried        a folder, not empty, where the harness carries its workspace to the next step
    nested-at PATH       PATH (another case's file, in default mode) rewritten as JSON or TOML nested 5000 deep
    deep-at PATH         a tree 1100 directories deep in PATH (another case's workspace, in default mode)
    sparse-at PATH       a sparse file of a terabyte in PATH
    long-escape N        a cursor move whose count has N digits printed before its answer, at the last step
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def deep(root: str, depth: int) -> None:
    """A chain of directories, made by descriptor: no path ever gets long."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)


def main() -> int:
    trick, argument = sys.argv[1], (sys.argv[2] if len(sys.argv) > 3 else "")
    step = int(os.environ["RECALL_STEP"])
    last = "What" in sys.argv[-1]  # the cases' last steps ask; earlier ones tell
    scope, cost = os.environ["RECALL_SCOPE_DIR"], os.environ["RECALL_COST_FILE"]
    if trick == "deep-scope" and step == 1:
        deep(scope, int(argument))
    elif trick == "deep-workdir" and last:
        deep(os.getcwd(), int(argument))
    elif trick == "cost-fifo":
        os.mkfifo(cost)
    elif trick == "cost-link":
        os.symlink(argument, cost)
    elif trick == "cost-hardlink":
        os.link(argument, cost)
    elif trick == "cost-nested":
        Path(cost).write_text("[" * int(argument) + "]" * int(argument), encoding="ascii")
    elif trick == "cost" or (trick == "cost-last" and last):
        Path(cost).write_text(argument, encoding="ascii")
    elif trick == "odd-names" and step == 1:
        for folder in (scope, os.environ["HOME"]):
            with open(os.path.join(os.fsencode(folder), b"note-\xff\xfe.txt"), "wb") as handle:
                handle.write(b"x")
    elif trick == "sparse" and step == 1:
        with open(os.path.join(scope, "sparse.bin"), "wb") as handle:
            handle.truncate(int(argument))
    elif trick == "hardlink" and step == 1:
        os.link(argument, os.path.join(scope, "linked"))
    elif trick == "swap-workdir":
        here = os.getcwd()
        os.rename(here, here + ".moved")
        os.symlink(argument, here)
    elif trick == "plant-carried" and step == 1:
        # The case's area holds the step's folder (the cost file's) and, between steps, the carried workspace.
        planted = Path(cost).parent.parent / "carried-workspace"
        planted.mkdir()
        (planted / "mine.txt").write_text("in the way", encoding="ascii")
    elif trick == "nested-at" and step == 1:
        Path(argument).write_text(("a = " if argument.endswith(".toml") else "") + "[" * 5000, encoding="ascii")
    elif trick == "deep-at" and step == 1:
        deep(argument, 1100)
    elif trick == "sparse-at" and step == 1:
        with open(os.path.join(argument, "sparse.bin"), "wb") as handle:
            handle.truncate(1 << 40)
    elif trick == "long-escape" and last:
        print("\x1b[" + "9" * int(argument) + "C")
    print("UNKNOWN")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
