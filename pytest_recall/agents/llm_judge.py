"""``recall-judge [LLM ARGS...]``: an LLM judge command for ``--recall-judge-cmd``, through ``llm``.

It reads one JSON object on stdin (``question``, ``gold``, ``answer``,
``kind`` or ``question_type``, ``case_id``), asks any model that Simon
Willison's ``llm`` knows (``-m NAME`` among the arguments) with the prompt
for that kind of question (:mod:`pytest_recall.agents.judge_prompts`), and
prints ``yes`` or ``no``. It keeps no log (``--no-log``): a judge must not
remember one verdict into the next. Tokens go to ``RECALL_COST_FILE`` like an
agent's, so the run reports the judge's cost apart from the agent's. A model
that fails, or a reply that is neither yes nor no, is a non-zero exit: a judge
error, never a verdict.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from pytest_recall.agents.adapters.common import Outcome, find_cli, finish, run_cli
from pytest_recall.agents.adapters.llm import ADAPTER, read_json
from pytest_recall.agents.judge_prompts import judge_prompt
from pytest_recall.scoring.judge_reply import read_judge_reply

USAGE = "usage: recall-judge [LLM ARGS...] < request.json  (a JSON object with question, gold, answer, kind)"


def main(argv: Sequence[str] | None = None) -> int:
    extra = list(sys.argv[1:] if argv is None else argv)
    if extra[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    try:
        request = json.loads(sys.stdin.read())
    except ValueError as exc:
        print(f"recall-judge: stdin is not one JSON object: {exc}", file=sys.stderr)
        return 2
    if not isinstance(request, dict) or "answer" not in request:
        print(f"recall-judge: stdin must be a JSON object with an 'answer'; {USAGE}", file=sys.stderr)
        return 2
    with _first_use_lock():
        done = run_cli([find_cli(ADAPTER), "prompt", "--no-log", "--json", *extra, "--", judge_prompt(request)])
    outcome = read_json(done.stdout)
    if outcome.ok:
        reply = read_judge_reply(outcome.answer)
        word = None if reply.score is None else ("yes" if reply.score >= 1.0 else "no")
        outcome = Outcome(
            word or outcome.answer,
            ok=word is not None,
            tokens_in=outcome.tokens_in,
            tokens_out=outcome.tokens_out,
            failure=f"the model's verdict could not be read: {reply.error}",
        )
    return finish(outcome, done.returncode)


def llm_user_dir() -> Path:
    """Where ``llm`` keeps its files: ``LLM_USER_PATH``, else its folder under ``XDG_CONFIG_HOME`` or ``~/.config``."""
    given = os.environ.get("LLM_USER_PATH")
    if given:
        return Path(given)
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(config) / "io.datasette.llm"


@contextlib.contextmanager
def _first_use_lock() -> Iterator[None]:
    """Judges started at once must not race to create llm's ``logs.db``.

    ``llm`` migrates ``logs.db`` on start, ``--no-log`` or not, and two
    processes creating it together fail ("table already exists"): a run's
    first judges, all at once under ``--recall-concurrency``. The first to
    find no database creates it alone (an exclusive lock); the others wait
    (a shared lock) until it is whole, then run side by side.
    """
    folder = llm_user_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / ".recall-judge.lock", "a")  # noqa: SIM115 - held for the call below
    except OSError:
        yield  # a folder we cannot write: llm will say so itself
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_SH if (folder / "logs.db").exists() else fcntl.LOCK_EX)
        yield


if __name__ == "__main__":
    raise SystemExit(main())
