"""Running a trap task's own scripts: its ``judge.py`` once per case, its ``grader.py`` once per run.

Both read ``TRAPTASK_MANIFEST`` (see :mod:`pytest_recall.cases.traptask`). The
files a judge's manifest names exist only while that judge runs, in a room of
their own, so no agent can ever read them.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_recall.cases import EXPECTED_KEY, MANIFEST_VAR, TASK_JUDGE_KEY, Case
from pytest_recall.sessions.rooms import remove_tree
from pytest_recall.sessions.run_folders import made_folder

SCRIPT_TIMEOUT_S = 120.0


class TaskScriptError(Exception):
    """A task's judge.py or grader.py that failed; the message is one line."""


def run_task_judge(case: Case, stdout: str, exit_code: int | None) -> Any:
    """The task's own judge.py on the last step's stdout and exit code; returns what it printed as JSON."""
    room = made_folder("task-judge")
    try:
        stdout_file = room / "stdout.txt"
        meta_file = room / "meta.json"
        stdout_file.write_text(stdout, encoding="utf-8")
        meta_file.write_text(json.dumps({"exit_code": exit_code}), encoding="utf-8")
        manifest = {
            "run": {"stdout": str(stdout_file), "meta": str(meta_file)},
            "expected_dir": case.extra[EXPECTED_KEY],
        }
        return run_task_script(Path(case.extra[TASK_JUDGE_KEY]), manifest)
    finally:
        remove_tree(room)


def run_task_script(script: Path, manifest: Any, *, timeout_s: float = SCRIPT_TIMEOUT_S) -> Any:
    """Run ``python <script>`` in the task directory with the manifest; return the JSON it prints last."""
    env = dict(os.environ)
    env[MANIFEST_VAR] = json.dumps(manifest, separators=(",", ":"), ensure_ascii=False)
    try:
        done = subprocess.run(
            [sys.executable, script.name],
            cwd=script.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise TaskScriptError(f"{script.name} ran longer than {timeout_s:g}s") from None
    except OSError as exc:
        if exc.errno == errno.E2BIG:
            size = len(env[MANIFEST_VAR].encode())
            raise TaskScriptError(
                f"{script.name}: the {MANIFEST_VAR} manifest ({size} bytes) is too large for one environment "
                "variable; run fewer cases at once"
            ) from None
        raise TaskScriptError(f"{script.name} could not start: {exc.strerror or exc}") from None
    if done.returncode != 0:
        last = [line for line in done.stderr.splitlines() if line.strip()]
        why = last[-1].strip() if last else "no message on stderr"
        raise TaskScriptError(f"{script.name} exited {done.returncode}: {why}")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    for text in (lines[-1] if lines else "", done.stdout):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            continue
    raise TaskScriptError(f"{script.name} printed no JSON on stdout")
