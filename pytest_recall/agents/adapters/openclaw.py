"""``recall-openclaw [EXTRA ARGS...] PROMPT``: OpenClaw's embedded agent, one turn, no Gateway.

``openclaw agent --local`` runs the turn in its own process (no Gateway, no
daemon left behind) and ``--json`` prints one envelope: the reply's
``payloads`` and, in ``meta.agentMeta.usage``, the tokens. Each step gets a
session id of its own, so nothing of an earlier step's conversation is
continued: what a later step knows, it knows from OpenClaw's memory. The
prompt goes in through ``--message-file``, in a folder of its own that is
removed after the step, so its size and its first character never matter.

OpenClaw's memory is Markdown in the agent's workspace (``~/.openclaw/workspace``
by default): ``MEMORY.md`` and ``USER.md`` are put into every session's
prompt, notes under ``memory/`` are found by the ``memory_search`` tool of the
memory plugin (``plugins.slots.memory``: ``memory-core`` by default, over a
SQLite index with embeddings from any OpenAI-compatible ``/v1/embeddings``;
``none`` turns it off). Its config is ``~/.openclaw/openclaw.json``
(``OPENCLAW_CONFIG_PATH``, or ``OPENCLAW_STATE_DIR`` for the whole folder).

OpenClaw 2026.9 declares Node >= 24.16.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from pytest_recall.agents.adapters.common import (
    Adapter,
    Outcome,
    json_document,
    json_number,
    json_object,
    stream_reader,
)
from pytest_recall.agents.adapters.print_run import ModelAt, PrintRun, StepPlan

ADAPTER = Adapter(
    script="recall-openclaw",
    cli="openclaw",
    bin_variable="RECALL_OPENCLAW_BIN",
    package="npm openclaw (Node >= 24.16)",
    tested="2026.9.6",
    memory="~/.openclaw/workspace/MEMORY.md and memory/*.md, found by memory_search (plugins.slots.memory)",
    home_copy=".openclaw/openclaw.json,.openclaw/agents",
    sandbox_bind="the npm prefix that holds node_modules/openclaw, and the Node >= 24.16 that runs it",
)
# OpenClaw's rolling log goes to /tmp/openclaw whatever TMPDIR says, outside the case's folders: no log, in that
# file or on stderr (the level is both's). Errors still reach the JSON result; set OPENCLAW_LOG_LEVEL to see more.
QUIET_ENV = {"OPENCLAW_LOG_LEVEL": "silent"}
# Where OpenClaw keeps its state databases' lock files whatever TMPDIR says: three empty files a database
# (<family>.<first 8 hex digits of the SHA-256 of its real path>.lock.sqlite), never removed.
STATE_LOCKS = Path("/tmp") / f"openclaw-state-locks-{os.getuid()}"
# Its rolling log's folder, made at start even when it logs nothing.
LOG_FOLDER = Path("/tmp/openclaw")


def state_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("OPENCLAW_STATE_DIR") or str(Path(env.get("HOME", "~"), ".openclaw"))).expanduser()


def config_path(env: Mapping[str, str]) -> Path:
    if env.get("OPENCLAW_CONFIG_PATH"):
        return Path(env["OPENCLAW_CONFIG_PATH"]).expanduser()
    return state_dir(env) / "openclaw.json"


def model_base_url(env: Mapping[str, str]) -> str | None:
    """The ``baseUrl`` of the provider of the agents' primary model in openclaw.json; else None (the CLI reports).

    The file is JSON5; one that plain JSON cannot read is left to the CLI.
    """
    try:
        config = json.loads(config_path(env).read_text(encoding="utf-8"))
        primary = config["agents"]["defaults"]["model"]
        primary = primary["primary"] if isinstance(primary, dict) else primary
        url = config["models"]["providers"][str(primary).split("/", 1)[0]]["baseUrl"]
    except (OSError, UnicodeDecodeError, ValueError, LookupError, TypeError):
        return None
    return url if isinstance(url, str) else None


def command(cli: str, extra: Sequence[str], message_file: Path) -> list[str]:
    session = f"recall-{uuid.uuid4().hex}"
    return [
        cli,
        "agent",
        "--local",
        "--agent",
        "main",
        "--session-id",
        session,
        "--message-file",
        str(message_file),
        "--json",
        *extra,
    ]


@stream_reader
def read_envelope(stdout: str) -> Outcome:
    """The reply's text and tokens from ``--json``'s envelope; an error, an aborted run or no envelope fails."""
    envelope = json_document(stdout)
    if envelope is None:
        return Outcome(stdout, ok=False, failure="openclaw printed no JSON result")
    meta = json_object(envelope.get("meta"))
    error = envelope.get("error") or meta.get("error")
    if envelope.get("ok") is False or error or meta.get("aborted"):
        said = error.get("message") if isinstance(error, dict) else error
        return Outcome("", ok=False, failure=f"openclaw: the run failed: {said or 'aborted'}")
    payloads = envelope.get("payloads")
    texts = [part["text"] for part in payloads or [] if isinstance(part, dict) and part.get("text")]
    usage = json_object(json_object(meta.get("agentMeta")).get("usage"))
    return Outcome(
        "\n".join(str(text) for text in texts),
        ok=True,
        tokens_in=int(json_number(usage.get("input"))),
        tokens_out=int(json_number(usage.get("output"))),
    )


def hold_shared(folder: Path) -> int | None:
    """A descriptor of ``folder`` (made if missing) under a shared lock; None when it cannot be had."""
    try:
        while True:
            folder.mkdir(mode=0o700, exist_ok=True)
            handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            fcntl.flock(handle, fcntl.LOCK_SH)
            held = os.fstat(handle)
            try:
                current = os.stat(folder)
            except FileNotFoundError:
                current = None
            if current is not None and (held.st_dev, held.st_ino) == (current.st_dev, current.st_ino):
                return handle
            os.close(handle)  # removed by the last step out between the open and the lock: make it again
    except OSError:
        return None


def remove_lock_files(folder: Path, state: Path) -> None:
    """Remove the lock files OpenClaw made in ``folder`` for the databases of ``state`` (this step's), unless one
    is still locked; the databases of any other state folder keep theirs."""
    databases = [*state.glob("state/*.sqlite"), *state.glob("agents/*/agent/*.sqlite")]
    hashes = {hashlib.sha256(str(database.resolve()).encode()).hexdigest()[:8] for database in databases}
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        family, _, rest = entry.name.partition(".")
        if family and rest.removesuffix(".lock.sqlite") in hashes and rest.endswith(".lock.sqlite"):
            try:
                with entry.open("r+b") as lock_file:
                    fcntl.lockf(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    entry.unlink()
            except OSError:
                pass  # held: a run of the same state folder is still going


@contextmanager
def state_locks_removed_after(folder: Path, state: Path, log_folder: Path = LOG_FOLDER) -> Iterator[None]:
    """Remove this step's lock files from OpenClaw's lock folder after the step, and the folder once empty
    (its log folder too).

    Each ``recall-openclaw`` holds a shared lock on the folder while its CLI runs, so the one that can turn
    its lock exclusive is the last one out: it removes the folder if nothing is left in it (an OpenClaw that
    is not ours keeps its own lock files there).
    """
    handle = hold_shared(folder)
    try:
        yield
    finally:
        remove_lock_files(folder, state)
        if handle is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                for made in (log_folder, folder):
                    with contextlib.suppress(OSError):  # something in it: not ours to remove
                        made.rmdir()
            except OSError:
                pass  # another step still runs: the last one out removes them
            os.close(handle)


@contextmanager
def agent_step(cli: str, extra: Sequence[str], prompt: str, env: Mapping[str, str]) -> Iterator[StepPlan]:
    """The prompt in a file of the step's own, removed after; the lock files the step made, too."""
    with tempfile.TemporaryDirectory(prefix="recall-openclaw-") as folder:
        message_file = Path(folder) / "prompt.md"
        message_file.write_text(prompt, encoding="utf-8")
        with state_locks_removed_after(STATE_LOCKS, state_dir(env)):
            yield command(cli, extra, message_file), None, read_envelope


ROW = PrintRun(
    ADAPTER,
    None,
    step=agent_step,
    env_under=QUIET_ENV,
    model=ModelAt("the baseUrl of the primary model's provider", lambda _extra, env: model_base_url(env)),
)
main = ROW.main
