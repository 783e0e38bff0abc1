"""``recall-llm [EXTRA ARGS...] PROMPT``: Simon Willison's ``llm``, continuing its conversation.

llm's memory is its conversation log, ``logs.db`` in its user folder
(``~/.config/io.datasette.llm``, or ``LLM_USER_PATH``): ``-c`` continues the
most recent conversation, so a later session sees the earlier ones. ``--json``
gives the answer and the token counts apart. Name the model with ``-m NAME``
among the extra arguments, or set llm's default model.

``recall-llm --live [EXTRA ARGS...]`` runs ``llm chat --continue`` instead, for
``--recall-session=continue`` (the ``llm-chat`` live preset): llm needs no
first-run state, and ``--continue`` keeps the same memory as above. Its chat
reads one line per prompt, so a turn goes in as ``!multi`` ... ``!end`` (blank
lines inside are dropped by llm), and it quits on ``quit``: end of file makes
it print ``Aborted!`` and exit 1.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pytest_recall.agents.adapters.common import (
    Adapter,
    Outcome,
    stream_reader,
)
from pytest_recall.agents.adapters.print_run import PrintRun, after

ADAPTER = Adapter(
    script="recall-llm",
    cli="llm",
    bin_variable="RECALL_LLM_BIN",
    package="PyPI llm",
    tested="0.36",
    memory="logs.db in ~/.config/io.datasette.llm (or $LLM_USER_PATH), continued with -c",
    home_copy=".config/io.datasette.llm/keys.json,.config/io.datasette.llm/extra-openai-models.yaml",
    sandbox_bind="the root of llm's virtual environment",
    mcp_refusal="llm cannot use MCP servers",
    driven="print mode; live through llm chat (recall-llm --live, --recall-live-preset=llm-chat)",
)


def live_command(cli: str, extra: Sequence[str]) -> list[str]:
    return [cli, "chat", "--continue", *extra]


@stream_reader
def read_json(stdout: str) -> Outcome:
    """``--json`` prints a list of logged responses; the newest is this one."""
    try:
        documents = json.loads(stdout)
        newest = documents[-1] if isinstance(documents, list) else documents
        answer = str(newest["response"] or "")
    except (ValueError, LookupError, TypeError):
        return Outcome(stdout, ok=False, failure="llm printed no JSON response")
    return Outcome(answer, ok=True, tokens_in=newest.get("input_tokens"), tokens_out=newest.get("output_tokens"))


ROW = PrintRun(ADAPTER, read_json, flags=["prompt", "--continue", "--json"], prompt=after("--"), live=live_command)
main = ROW.main
