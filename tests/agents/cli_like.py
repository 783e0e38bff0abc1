"""An agent shaped like a real CLI: it takes its prompt where the run puts it, and says what it saw.

The prompt comes from argv, stdin or $RECALL_PROMPT_FILE, whichever the harness used. Every step
writes a JSON probe to $RECALL_TEST_PROBE_DIR/<case>-step<N>.json: its cwd, what was in it, the
variables it was given, the prompt's size, and whether an earlier step's TMPDIR file survived.

A prompt line ``REMEMBER <value>`` stores the value in ``~/.cli_like/memory.txt`` (in HOME, as
real CLIs keep memory) and prints ``noted``; a prompt holding ``RECALL`` prints what HOME holds,
or UNKNOWN. ``FAIL <code> <message>`` prints the message on stderr and exits with the code.
Every step reports tokens in the cost file: as many in as the prompt has bytes, 7 out.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def read_prompt() -> tuple[str, str]:
    if os.environ.get("RECALL_PROMPT_FILE"):
        return Path(os.environ["RECALL_PROMPT_FILE"]).read_text(encoding="utf-8"), "file"
    if len(sys.argv) > 1:
        return sys.argv[-1], "argv"
    return sys.stdin.read(), "stdin"


def main() -> int:
    prompt, via = read_prompt()
    step = os.environ.get("RECALL_STEP", "?")
    case = os.environ.get("CLI_LIKE_CASE", "case")
    tmp = Path(os.environ.get("TMPDIR", "/nonexistent"))
    probe = {
        "via": via,
        "prompt_bytes": len(prompt.encode("utf-8")),
        "cwd": os.getcwd(),
        "cwd_listing": sorted(os.listdir(".")),
        "tmp_listing": sorted(os.listdir(tmp)) if tmp.is_dir() else None,
        "env": {
            name: os.environ.get(name)
            for name in (
                "HOME",
                "TMPDIR",
                "TMP",
                "TEMP",
                "RECALL_SCOPE_DIR",
                "CLI_LIKE_CASE",
                "CLI_LIKE_STEP",
                "CLI_LIKE_GONE",
            )
        },
    }
    probe_dir = os.environ.get("RECALL_TEST_PROBE_DIR")
    if probe_dir:
        Path(probe_dir, f"{case}-step{step}.json").write_text(json.dumps(probe), encoding="utf-8")
    Path("left-by-step-" + step).write_text("x")
    (tmp / f"tmp-of-step-{step}").write_text("x")
    Path(os.environ["RECALL_COST_FILE"]).write_text(json.dumps({"tokens_in": len(prompt.encode()), "tokens_out": 7}))
    memory = Path.home() / ".cli_like" / "memory.txt"
    for line in prompt.splitlines():
        if line.startswith("FAIL "):
            _, code, message = line.split(" ", 2)
            print(message, file=sys.stderr)
            return int(code)
        if line.startswith("REMEMBER "):
            memory.parent.mkdir(parents=True, exist_ok=True)
            memory.write_text(line.split(" ", 1)[1], encoding="utf-8")
            print("noted")
            return 0
    if "RECALL" in prompt:
        print(memory.read_text(encoding="utf-8") if memory.exists() else "UNKNOWN")
    return 0


if __name__ == "__main__":
    sys.exit(main())
