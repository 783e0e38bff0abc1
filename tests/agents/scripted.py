"""A test agent whose prompt is its script: one directive per line.

The session tests build cases whose step files say what the agent does, so
each behaviour under test reads plainly in the test that needs it:

    say TEXT            print TEXT on stdout
    write BYTES         write a Python bytes literal, as is, to stdout
    err TEXT            print TEXT on stderr
    remember VALUE      keep VALUE in the case's memory scope
    recall              print the kept value, or UNKNOWN
    cost USD            report what this step cost through RECALL_COST_FILE
    read-stdin          read stdin to its end, then say how much was read
    probe NAME          record argv, env, cwd and ttys as JSON in $RECALL_TEST_PROBE_DIR
    sleep SECONDS       sleep
    hang                start a child in the process group, ignore SIGTERM, sleep forever
    leave-child NAME    leave a child running (immune to SIGHUP) and record its pid as NAME
    leave-daemon NAME   the same, but the child leaves the process group with setsid
    exit CODE           exit with CODE

Lines that are no directive are ignored. The file is not named test_*, so
pytest never collects it.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

MEMORY_FILE = "memory.txt"


def probe_dir() -> Path:
    return Path(os.environ["RECALL_TEST_PROBE_DIR"])


def probe(name: str) -> None:
    scope = os.environ.get("RECALL_SCOPE_DIR")
    record = {
        "argv": sys.argv,
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "cwd_listing": sorted(os.listdir(".")),
        "scope": scope,
        "scope_listing": sorted(os.listdir(scope)) if scope and os.path.isdir(scope) else None,
        "stdin_isatty": os.isatty(0),
        "stdout_isatty": os.isatty(1),
        "stderr_isatty": os.isatty(2),
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
    }
    step = os.environ.get("RECALL_STEP", "0")
    (probe_dir() / f"{name}-step{step}.json").write_text(json.dumps(record))


def hang() -> None:
    """Behave like a wedged agent: survive SIGTERM, and leave a child behind that does too."""
    out = probe_dir()

    def on_term(signum: int, frame: object) -> None:
        (out / "hang-got-sigterm").write_text(str(os.getpid()))

    signal.signal(signal.SIGTERM, on_term)
    child_code = (
        "import signal, sys, time, pathlib\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "pathlib.Path(sys.argv[1]).write_text('ready')\n"
        "time.sleep(600)\n"
    )
    ready = out / "hang-child-ready"
    child = subprocess.Popen([sys.executable, "-c", child_code, str(ready), "recall-test-hang-child"])
    (out / "hang-child-pid").write_text(str(child.pid))
    while True:
        time.sleep(0.05)


def leave_child(name: str, *, new_session: bool) -> None:
    """Exit with a child still running; it is ready (and SIGHUP-proof) before the agent exits."""
    out = probe_dir()
    ready = out / f"{name}-ready"
    # A file left by an earlier run of the same case must not pass for this child's readiness.
    ready.unlink(missing_ok=True)
    child_code = (
        "import signal, sys, time, pathlib\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "pathlib.Path(sys.argv[1]).write_text('ready')\n"
        "time.sleep(600)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", child_code, str(ready), "recall-test-hang-child"], start_new_session=new_session
    )
    (out / f"{name}-pid").write_text(str(child.pid))
    while not ready.exists():
        time.sleep(0.01)


def run(script: str) -> int:
    for line in script.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word == "say":
            print(rest, flush=True)
        elif word == "write":
            sys.stdout.flush()
            os.write(1, ast.literal_eval(rest))
        elif word == "err":
            print(rest, file=sys.stderr, flush=True)
        elif word == "remember":
            Path(os.environ["RECALL_SCOPE_DIR"], MEMORY_FILE).write_text(rest)
        elif word == "recall":
            memory = Path(os.environ["RECALL_SCOPE_DIR"], MEMORY_FILE)
            print(memory.read_text() if memory.exists() else "UNKNOWN", flush=True)
        elif word == "cost":
            Path(os.environ["RECALL_COST_FILE"]).write_text(json.dumps({"cost_usd": float(rest)}))
        elif word == "read-stdin":
            print(f"read {len(sys.stdin.read())} characters from stdin", flush=True)
        elif word == "probe":
            probe(rest)
        elif word == "sleep":
            time.sleep(float(rest))
        elif word == "hang":
            hang()
        elif word in ("leave-child", "leave-daemon"):
            leave_child(rest, new_session=word == "leave-daemon")
        elif word == "exit":
            return int(rest)
    return 0


if __name__ == "__main__":
    raise SystemExit(run(sys.argv[-1]))
