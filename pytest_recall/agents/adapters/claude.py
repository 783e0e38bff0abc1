"""``recall-claude [EXTRA ARGS...] PROMPT``: Claude Code in print mode, unattended.

``claude -p`` cannot write memory without a permission flag, and
``--dangerously-skip-permissions`` is refused as root unless ``IS_SANDBOX=1``
is set, so the adapter sets it for root. The JSON output mode carries the
answer and ``total_cost_usd`` apart, so stdout holds the answer alone.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from pytest_recall.agents.adapters.common import Adapter, Outcome, chatter, find_cli, finish, run_cli, split_args

ADAPTER = Adapter(
    script="recall-claude",
    cli="claude",
    bin_variable="RECALL_CLAUDE_BIN",
    package="npm @anthropic-ai/claude-code",
    tested="2.1.332",
    memory="~/.claude/CLAUDE.md; auto-memory in ~/.claude/projects/<cwd-slug>/memory/",
    home_copy=".claude.json,.claude/.credentials.json",
    sandbox_bind="the npm prefix that holds node_modules/@anthropic-ai (the native binary is in claude-code-linux-*)",
)
# Nothing but the model API: no telemetry, no update checks, no error reporting.
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def command(cli: str, extra: Sequence[str], prompt: str) -> list[str]:
    return [cli, "-p", "--output-format", "json", "--dangerously-skip-permissions", *extra, "--", prompt]


def environment() -> dict[str, str]:
    env = {**QUIET_ENV, **os.environ}
    if os.geteuid() == 0:
        # Claude Code accepts exactly "1" here; other truthy spellings still refuse the flag as root.
        env["IS_SANDBOX"] = "1"
    return env


def read_result(stdout: str) -> Outcome:
    """The ``result`` message of ``--output-format json``; anything before it is chatter."""
    result: dict[str, Any] | None = None
    for line in stdout.splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            chatter(line)
            continue
        if isinstance(document, dict) and document.get("type") == "result":
            result = document
    if result is None:
        return Outcome("", ok=False, failure="claude printed no result")
    cost = result.get("total_cost_usd")
    usage = result.get("usage") or {}
    answer = str(result.get("result") or "")
    failed = bool(result.get("is_error")) or result.get("subtype") != "success"
    return Outcome(
        answer,
        ok=not failed,
        cost_usd=float(cost) if isinstance(cost, (int, float)) else None,
        tokens_in=usage.get("input_tokens"),
        tokens_out=usage.get("output_tokens"),
        failure=f"claude reported an error ({result.get('subtype')}): {answer}" if failed else "",
    )


def main(argv: Sequence[str] | None = None) -> int:
    extra, prompt = split_args(sys.argv[1:] if argv is None else argv)
    done = run_cli(command(find_cli(ADAPTER), extra, prompt), environment())
    return finish(read_result(done.stdout), done.returncode)


if __name__ == "__main__":
    raise SystemExit(main())
