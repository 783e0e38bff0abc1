"""``recall-judge [LLM ARGS...]``: an LLM judge command for ``--recall-judge-cmd``, through ``llm``.

It reads one JSON object on stdin (``question``, ``gold``, ``answer``,
``kind`` or ``question_type``, ``case_id``), asks any model that Simon
Willison's ``llm`` knows (``-m NAME`` among the arguments) with the prompt
for that kind of question (:mod:`pytest_recall.agents.judge_prompts`), and
prints ``yes`` or ``no``. It keeps no log (``--no-log``): a judge must not
remember one verdict into the next. ``llm`` still creates and migrates a log
database on every start, so each call points it at one of its own in a
temporary folder (``--database``): nothing is written to the user's llm
folder, and judges started at once never race to create the same file. Tokens go to ``RECALL_COST_FILE`` like an
agent's, so the run reports the judge's cost apart from the agent's. A model
that fails, or a reply that is neither yes nor no, is a non-zero exit: a judge
error, never a verdict.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Sequence
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
    with tempfile.TemporaryDirectory(prefix="recall-judge-") as scratch:
        database = str(Path(scratch) / "logs.db")
        command = [find_cli(ADAPTER), "prompt", "--no-log", "--database", database, "--json", *extra]
        done = run_cli([*command, "--", judge_prompt(request)])
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


if __name__ == "__main__":
    raise SystemExit(main())
