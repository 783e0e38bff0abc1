"""``recall-qwen [EXTRA ARGS...] PROMPT``: Qwen Code in headless mode, unattended.

``qwen`` with its stdin not a terminal runs one turn on what stdin holds:
the prompt goes there, whole (a positional prompt after ``--`` is dropped,
and ``-p`` is deprecated); ``--output-format stream-json`` prints Claude Code's message stream, one JSON
message a line, ending with a ``result`` that holds the answer and the usage
apart. ``--approval-mode=yolo`` approves its tools, which would otherwise
wait for a person. Qwen Code's memory is the ``QWEN.md`` files it loads into
every session, the global one ``~/.qwen/QWEN.md``; after a turn it may also
run its own memory-extraction agent, which writes under ``~/.qwen/memories``.

Qwen Code 0.24 declares Node >= 22. Its usage statistics are turned off.
"""

from __future__ import annotations

from pytest_recall.agents.adapters import result_message
from pytest_recall.agents.adapters.common import (
    Adapter,
    Outcome,
)
from pytest_recall.agents.adapters.print_run import ModelAt, PrintRun

ADAPTER = Adapter(
    script="recall-qwen",
    cli="qwen",
    bin_variable="RECALL_QWEN_BIN",
    package="npm @qwen-code/qwen-code (Node >= 22)",
    tested="0.24.4",
    memory="~/.qwen/QWEN.md; its memory agent's notes in ~/.qwen/memories/",
    home_copy=".qwen/settings.json,.qwen/oauth_creds.json",
    sandbox_bind="the npm prefix that holds node_modules/@qwen-code/qwen-code, and the Node >= 22 that runs it",
)
UNATTENDED = ["--approval-mode=yolo"]
# Nothing but the model API: no usage statistics.
QUIET_ENV = {"QWEN_USAGE_STATISTICS_ENABLED": "false"}


def read_qwen(stdout: str) -> Outcome:
    return result_message.read_result(stdout, "qwen")


ROW = PrintRun(
    ADAPTER,
    read_qwen,
    flags=[*UNATTENDED, "--output-format", "stream-json"],
    env_under=QUIET_ENV,
    model=ModelAt("OPENAI_BASE_URL"),
)
main = ROW.main
