"""An agent with a sound memory that plants, at a case group's ingest, what a copy of its scope trips over.

argv: TRICK [ARG]. At a step that tells it something ("Remember ..."), it keeps
the balance in ``notes.txt`` in its scope and plays TRICK there; at a step that
asks, it answers from the file TRICK reads (``notes.txt`` unless said), or
UNKNOWN:

    none            nothing else
    fifo            a FIFO
    socket          a UNIX socket's file
    device          a character device like /dev/zero (needs CAP_MKNOD)
    link-out        a symbolic link to /etc/hostname
    climb-out       a relative link that climbs out of the scope: ../../x
    link-in         answers through ``alias``, a relative link to notes.txt
    sparse SIZE     answers from the middle of a sparse file of SIZE bytes, and only if the file
                    it reads still has almost no blocks on disk
    fail            exits 1 when told, keeping nothing
    fail-once PATH  exits 1 the first time it is told (it then makes PATH), and keeps the balance after
    spoil-kept      when asked, plants a FIFO in every group's kept memory it finds beside its case's
                    folder (default mode leaves the run's folders in reach)
"""

from __future__ import annotations

import glob
import os
import re
import socket
import stat
import sys


def plant(trick: str, argument: str, scope: str, balance: str) -> None:
    place = os.path.join(scope, "planted")
    if trick == "fifo":
        os.mkfifo(place)
    elif trick == "socket":
        os.chdir(scope)  # a UNIX socket's path is short: bound by its name alone
        with socket.socket(socket.AF_UNIX) as server:
            server.bind("planted")
    elif trick == "device":
        os.mknod(place, stat.S_IFCHR | 0o600, os.makedev(1, 5))
    elif trick == "link-out":
        os.symlink("/etc/hostname", place)
    elif trick == "climb-out":
        os.symlink("../../x", place)
    elif trick == "link-in":
        os.symlink("notes.txt", os.path.join(scope, "alias"))
    elif trick == "sparse":
        with open(os.path.join(scope, "sparse.bin"), "wb") as handle:
            handle.truncate(int(argument))
            handle.seek(int(argument) // 2)
            handle.write(balance.encode())


def recall(trick: str, argument: str, scope: str) -> str:
    if trick == "sparse":
        path = os.path.join(scope, "sparse.bin")
        if os.stat(path).st_blocks * 512 > 1 << 20:
            return "UNKNOWN (the sparse file was written out in full)"
        with open(path, "rb") as handle:
            handle.seek(int(argument) // 2)
            return handle.read(8).decode()
    try:
        with open(os.path.join(scope, "alias" if trick == "link-in" else "notes.txt"), encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return "UNKNOWN"


def main() -> int:
    trick, argument, prompt = sys.argv[1], (sys.argv[2] if len(sys.argv) > 3 else ""), sys.argv[-1]
    scope = os.environ["RECALL_SCOPE_DIR"]
    told = re.search(r"Remember the balance (\S+)\.", prompt)
    if told and (trick == "fail" or (trick == "fail-once" and not os.path.exists(argument))):
        if trick == "fail-once":
            open(argument, "x").close()
        print("rate limited", file=sys.stderr)
        return 1
    if told:
        with open(os.path.join(scope, "notes.txt"), "w", encoding="utf-8") as handle:
            handle.write(told.group(1))
        plant(trick, argument, scope, told.group(1))
        print("Noted.")
    else:
        if trick == "spoil-kept":
            run_tmp = os.path.dirname(os.path.dirname(os.environ["TMPDIR"]))
            for kept in glob.glob(os.path.join(run_tmp, "recall-groups-*", "*", "scope")):
                os.mkfifo(os.path.join(kept, "planted"))
        print(recall(trick, argument, scope))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
