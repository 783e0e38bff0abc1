"""``recall-llm [EXTRA ARGS...] PROMPT``: Simon Willison's ``llm``, continuing its conversation.

llm's memory is its conversation log, ``logs.db`` in its user folder
(``~/.config/io.datasette.llm``, or ``LLM_USER_PATH``): ``-c`` continues the
most recent conversation, so a later session sees the earlier ones. ``--json``
gives the answer and the token counts apart. Name the model with ``-m NAME``
among the extra arguments, or set llm's default model.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from pytest_recall.agents.adapters.common import Adapter, Outcome, find_cli, finish, run_cli, split_args

ADAPTER = Adapter(
    script="recall-llm",
    cli="llm",
    bin_variable="RECALL_LLM_BIN",
    package="PyPI llm",
    tested="0.36",
    memory="logs.db in ~/.config/io.datasette.llm (or $LLM_USER_PATH), continued with -c",
    home_copy=".config/io.datasette.llm/keys.json,.config/io.datasette.llm/extra-openai-models.yaml",
    sandbox_bind="the root of llm's virtual environment",
)


def command(cli: str, extra: Sequence[str], prompt: str) -> list[str]:
    return [cli, "prompt", "--continue", "--json", *extra, "--", prompt]


def read_json(stdout: str) -> Outcome:
    """``--json`` prints a list of logged responses; the newest is this one."""
    try:
        documents = json.loads(stdout)
        newest = documents[-1] if isinstance(documents, list) else documents
        answer = str(newest["response"] or "")
    except (ValueError, LookupError, TypeError):
        return Outcome(stdout, ok=False, failure="llm printed no JSON response")
    return Outcome(answer, ok=True, tokens_in=newest.get("input_tokens"), tokens_out=newest.get("output_tokens"))


def main(argv: Sequence[str] | None = None) -> int:
    extra, prompt = split_args(sys.argv[1:] if argv is None else argv)
    done = run_cli(command(find_cli(ADAPTER), extra, prompt))
    return finish(read_json(done.stdout), done.returncode)


if __name__ == "__main__":
    raise SystemExit(main())
