"""A test agent that keeps its memory under ``~``, the way most stock agent CLIs do.

``REMEMBER <value>`` appends the value to ``~/.home_memory_agent/notes.txt``;
``RECALL`` prints the one note kept there, or ``UNKNOWN`` when there is none
or more than one (it cannot tell which note is its own). So one HOME shared
by two cases shows as a wrong answer, and a HOME per case does not.

Every step also prints its HOME and XDG directories as JSON on stderr, which
the run report keeps. With ``--need-login`` it refuses to work unless
``~/.home_memory_agent_login`` exists, like an agent whose login lives in a
dotfile.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

XDG_VARS = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


def main(argv: list[str]) -> int:
    prompt = argv[-1]
    home = Path(os.path.expanduser("~"))
    seen = {
        "HOME": str(home),
        "RECALL_SCOPE_DIR": os.environ.get("RECALL_SCOPE_DIR"),
        "TMPDIR": os.environ.get("TMPDIR"),
    }
    seen.update({var: os.environ.get(var) for var in XDG_VARS})
    print(json.dumps(seen), file=sys.stderr, flush=True)
    if "--need-login" in argv[1:-1]:
        login = home / ".home_memory_agent_login"
        if not login.is_file():
            print("not logged in: ~/.home_memory_agent_login is missing", file=sys.stderr)
            return 3
    notes = home / ".home_memory_agent" / "notes.txt"
    words = prompt.split()
    if words and words[0] == "REMEMBER":
        notes.parent.mkdir(parents=True, exist_ok=True)
        with notes.open("a", encoding="utf-8") as handle:
            handle.write(words[1] + "\n")
        print("noted")
    elif words and words[0] == "RECALL":
        kept = notes.read_text(encoding="utf-8").split() if notes.exists() else []
        print(kept[0] if len(kept) == 1 else "UNKNOWN")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
