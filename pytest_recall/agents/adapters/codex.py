"""``recall-codex [EXTRA ARGS...] PROMPT``: ``codex exec`` unattended, answer and tokens read from its JSON events.

``codex exec`` exits 1 outside a trusted git repository unless told
``--skip-git-repo-check``, and its default read-only sandbox blocks the memory
write to ``~/.codex/AGENTS.md``. Its own sandbox cannot nest inside bwrap, so
the adapter turns it off; run under ``--recall-sandbox=bwrap`` for isolation.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from pytest_recall.agents.adapters.common import Adapter, Outcome, chatter, find_cli, finish, run_cli, split_args

ADAPTER = Adapter(
    script="recall-codex",
    cli="codex",
    bin_variable="RECALL_CODEX_BIN",
    package="npm @openai/codex",
    tested="0.169.0",
    memory="~/.codex/AGENTS.md (or $CODEX_HOME/AGENTS.md)",
    home_copy=".codex/auth.json,.codex/config.toml",
    sandbox_bind="the npm prefix that holds node_modules/@openai (the native binary is in codex-linux-*)",
)
UNATTENDED = ["exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]


def command(cli: str, extra: Sequence[str], prompt: str) -> list[str]:
    return [cli, *UNATTENDED, *extra, "--", prompt]


def read_events(stdout: str) -> Outcome:
    """The last agent message is the answer; usage adds up over turns; a failed turn or error event fails."""
    answer = ""
    tokens_in = tokens_out = 0
    failures: list[str] = []
    completed = False
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            chatter(line)
            continue
        kind = event.get("type") if isinstance(event, dict) else None
        item = event.get("item") or {} if isinstance(event, dict) else {}
        if kind == "item.completed" and item.get("type") == "agent_message":
            answer = str(item.get("text") or "")
        elif kind == "turn.completed":
            completed = True
            usage = event.get("usage") or {}
            tokens_in += int(usage.get("input_tokens") or 0)
            tokens_out += int(usage.get("output_tokens") or 0)
        elif kind in ("turn.failed", "error"):
            error = event.get("error") or {}
            failures.append(str(event.get("message") or (error.get("message") if isinstance(error, dict) else error)))
        if kind != "item.completed" or item.get("type") != "agent_message":
            chatter(line)
    ok = completed and not failures
    failure = "; ".join(failures) or ("codex finished no turn" if not completed else "")
    return Outcome(answer, ok=ok, tokens_in=tokens_in, tokens_out=tokens_out, failure=failure)


def main(argv: Sequence[str] | None = None) -> int:
    extra, prompt = split_args(sys.argv[1:] if argv is None else argv)
    done = run_cli(command(find_cli(ADAPTER), extra, prompt))
    return finish(read_events(done.stdout), done.returncode)


if __name__ == "__main__":
    raise SystemExit(main())
