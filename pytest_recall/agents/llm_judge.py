"""``recall-judge [--prompt-file=FILE] [LLM ARGS...]``: an LLM judge for ``--recall-judge-cmd``, through ``llm``.

It reads one JSON object on stdin (``question``, ``gold``, ``answer``,
``kind`` or ``question_type``, ``case_id``), asks any model that Simon
Willison's ``llm`` knows (``-m NAME`` among the arguments) with the prompt
for that kind of question (:mod:`pytest_recall.agents.judge_prompts`), or the
user's own (``--prompt-file``, :mod:`pytest_recall.agents.prompt_file`), and
prints ``yes`` or ``no``. It keeps no log (``--no-log``): a judge must not
remember one verdict into the next. ``llm`` still creates and migrates a log
database on every start, so each call points it at one of its own in a
temporary folder (``--database``): nothing is written to the user's llm
folder, and judges started at once never race to create the same file. Tokens go to ``RECALL_COST_FILE`` like an
agent's, so the run reports the judge's cost apart from the agent's, with the
SHA-256 of the prompt (``prompt_sha256``), so the report says which prompt gave each verdict. A model
that fails, or a reply that is neither yes nor no, is a non-zero exit: a judge
error, never a verdict.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_recall.agents.adapters.common import Outcome, find_cli, finish, run_cli
from pytest_recall.agents.adapters.llm import ADAPTER, read_json
from pytest_recall.agents.prompt_file import (
    PromptFileError,
    PromptTemplate,
    prompt_for,
    prompt_sha256,
    read_prompt_file,
    read_prompt_option,
)
from pytest_recall.scoring import read_judge_reply, scored_a_pass

USAGE = (
    "usage: recall-judge [--prompt-file=FILE] [LLM ARGS...] < request.json  "
    "(a JSON object with question, gold, answer, kind)"
)


def main(argv: Sequence[str] | None = None) -> int:
    extra = list(sys.argv[1:] if argv is None else argv)
    if extra[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    try:
        path, extra = read_prompt_option(extra)
        template = None if path is None else read_prompt_file(path)
    except PromptFileError as exc:
        print(f"recall-judge: {exc}", file=sys.stderr)
        return 2
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
        done = run_cli([*command, "--", prompt_for(template, request)])
    outcome = read_json(done.stdout)
    if outcome.ok:
        reply = read_judge_reply(outcome.answer)
        word = None if reply.score is None else ("yes" if scored_a_pass(reply.score) else "no")
        outcome = Outcome(
            word or outcome.answer,
            ok=word is not None,
            tokens_in=outcome.tokens_in,
            tokens_out=outcome.tokens_out,
            failure=f"the model's verdict could not be read: {reply.error}",
        )
    status = finish(outcome, done.returncode)
    _note_prompt(template, request)
    return status


def _note_prompt(template: PromptTemplate | None, request: Mapping[str, Any]) -> None:
    """The prompt's hash beside the tokens in ``$RECALL_COST_FILE``, which the harness reads into the record."""
    path = os.environ.get("RECALL_COST_FILE")
    if not path:
        return
    try:
        with open(path, encoding="utf-8") as written:
            figures = json.load(written)
    except (OSError, ValueError):
        figures = {}
    written_figures = figures if isinstance(figures, dict) else {}
    with open(path, "w", encoding="utf-8") as out:
        json.dump({**written_figures, "prompt_sha256": prompt_sha256(template, request)}, out)


if __name__ == "__main__":
    raise SystemExit(main())
