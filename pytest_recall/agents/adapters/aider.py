"""``recall-aider [EXTRA ARGS...] PROMPT``: aider with one ``--message``, its chat history as memory.

aider prints its banner, the reply and a ``Tokens: N sent, M received.``
footer on stdout, all of which the judge would read; so the answer is taken
from what this run appended to the chat history file instead (the reply, not
the quoted ``>`` tool lines), and the footer gives tokens and cost. The history
lives in HOME (``~/.aider.chat.history.md``) unless the extra arguments name
one: a new working directory per step would otherwise lose it.
``--restore-chat-history`` loads it into the next session.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from pytest_recall.agents.adapters.common import (
    Adapter,
    Outcome,
    chatter,
    stream_reader,
)
from pytest_recall.agents.adapters.print_run import ModelAt, PrintRun, Reader, after

ADAPTER = Adapter(
    script="recall-aider",
    cli="aider",
    bin_variable="RECALL_AIDER_BIN",
    package="PyPI aider-chat",
    tested="0.86.2",
    memory="~/.aider.chat.history.md, loaded with --restore-chat-history",
    home_copy=".aider.conf.yml,.aider.model.metadata.json",
    sandbox_bind="the root of aider's virtual environment",
    mcp_refusal="aider cannot use MCP servers",
)
UNATTENDED = [
    "--yes-always",
    "--no-git",
    "--restore-chat-history",
    "--no-pretty",
    "--no-fancy-input",
    "--no-check-update",
    "--no-show-release-notes",
    "--analytics-disable",
    "--no-show-model-warnings",
]
# litellm would fetch its price list from the internet at import; its bundled copy is enough.
QUIET_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
_TOKENS = re.compile(r"Tokens: ([\d.]+)([kM]?) sent, ([\d.]+)([kM]?) received")
_COST = re.compile(r"Cost: \$([\d.]+) message")
_SCALE = {"": 1, "k": 1_000, "M": 1_000_000}


def history_file(extra: Sequence[str]) -> tuple[Path, list[str]]:
    """The chat history this run appends to, and the arguments that name it (none if the user did)."""
    for number, arg in enumerate(extra):
        if arg == "--chat-history-file" and number + 1 < len(extra):
            return Path(extra[number + 1]), []
        if arg.startswith("--chat-history-file="):
            return Path(arg.split("=", 1)[1]), []
    default = Path.home() / ".aider.chat.history.md"
    return default, ["--chat-history-file", str(default)]


def command(cli: str, extra: Sequence[str]) -> list[str]:
    return [cli, *UNATTENDED, *history_file(extra)[1], *extra]


def reply_of(appended: str) -> str:
    """The assistant's text after the last user block (``#### `` lines), without quoted ``>`` lines."""
    lines = appended.splitlines()
    starts = [number for number, line in enumerate(lines) if line.startswith("####")]
    after = lines[starts[-1] + 1 :] if starts else []
    return "\n".join(line.rstrip() for line in after if not line.startswith(">")).strip()


@stream_reader
def read_run(stdout: str, appended: str) -> Outcome:
    answer = reply_of(appended)
    tokens = _TOKENS.findall(stdout)
    cost = _COST.findall(stdout)
    tokens_in = tokens_out = None
    if tokens:
        sent, sent_scale, received, received_scale = tokens[-1]
        tokens_in = round(float(sent) * _SCALE[sent_scale])
        tokens_out = round(float(received) * _SCALE[received_scale])
    return Outcome(
        answer,
        ok=bool(answer),
        cost_usd=float(cost[-1]) if cost else None,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        failure="" if answer else "aider added no reply to its chat history (see its output above)",
    )


def history_reader(extra: Sequence[str]) -> Reader:
    """The reader of this run: what it appends to the chat history, past its size before the run."""
    path = history_file(extra)[0]
    before = path.stat().st_size if path.exists() else 0

    def read(stdout: str) -> Outcome:
        chatter(stdout)
        with path.open("rb") if path.exists() else open(os.devnull, "rb") as history_text:
            history_text.seek(before)
            appended = history_text.read().decode("utf-8", "replace")
        return read_run(stdout, appended)

    return read


ROW = PrintRun(
    ADAPTER,
    None,
    command=command,
    prompt=after("--message"),
    env_under=QUIET_ENV,
    model=ModelAt("OPENAI_API_BASE"),
    reader_for=history_reader,
)
main = ROW.main
