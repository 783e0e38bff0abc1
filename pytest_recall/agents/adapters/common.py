"""What every adapter does the same way: find the CLI, run it unattended, report the answer and the cost.

An adapter is a thin wrapper, ``recall-<cli> [EXTRA ARGS...] PROMPT``: the
prompt reaches the CLI unchanged (what is measured stays the CLI's own memory),
the extra arguments pass through, only the final answer goes to stdout (the
judge reads it), everything else the CLI says goes to stderr, and a failure of
the CLI or its model is a non-zero exit, never a wrong answer.

``recall-<cli> --live [EXTRA ARGS...]`` is the other shape, for
``--recall-session=continue``: it seeds HOME with the state the CLI's
interactive mode needs to start unattended (first-run screens, trust of the
working directory), merged into what HOME already holds, then replaces itself
with the CLI, which keeps the harness's terminal and reads the turns there.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import json
import math
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, ParamSpec
from urllib.parse import urlsplit

from pytest_recall.cases import RATE_LIMITED_EXIT, RATE_LIMITED_MARK

P = ParamSpec("P")
# The exit status of an adapter whose CLI cannot be found, as a shell would say it.
NOT_FOUND = 127
# The first argument that makes an adapter a live launcher instead of a one-prompt run.
LIVE_FLAG = "--live"
# The step's MCP server configuration (``--recall-mcp``), filled in by the harness.
MCP_CONFIG_VAR = "RECALL_MCP_CONFIG"
# Why an adapter whose CLI has MCP support still refuses --recall-mcp: it does not pass the servers on (untested).
NOT_WIRED_FOR_MCP = "this adapter does not pass MCP servers to its CLI yet (recall-claude and recall-codex do)"


@dataclass(frozen=True, slots=True)
class Adapter:
    """One adapter as ``pytest-recall agents`` lists it, and as the README's table shows it."""

    script: str  # the console script
    cli: str  # the CLI's executable name
    bin_variable: str  # the variable that overrides where the CLI is
    package: str
    tested: str  # the CLI versions it was tested with
    memory: str  # where that CLI keeps what it remembers
    home_copy: str  # what --recall-home-copy needs for a real login and settings
    sandbox_bind: str  # what --recall-sandbox-bind needs under bwrap
    # Why it refuses --recall-mcp (at start-up and in each step), or "" when it passes the servers on: an adapter
    # refuses until its CLI's MCP wiring is tested.
    mcp_refusal: str = NOT_WIRED_FOR_MCP
    driven: str = "print mode, one process a step"  # how the adapter drives the CLI

    @property
    def drives_one_cli(self) -> bool:
        """False for ``recall-acp``, which drives whatever agent follows its ``--``: no one CLI, no version."""
        return bool(self.bin_variable)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an adapter reports: the answer, whether the CLI and its model succeeded, and what it cost."""

    answer: str
    ok: bool
    cost_usd: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    failure: str = ""  # one line for stderr when not ok


def split_args(argv: Sequence[str]) -> tuple[list[str], str]:
    """``(extra args, prompt)``: the harness always puts the prompt last."""
    if not argv:
        raise SystemExit("usage: recall-<cli> [EXTRA CLI ARGS...] PROMPT")
    return list(argv[:-1]), argv[-1]


def find_cli(adapter: Adapter) -> str:
    """The CLI's path: ``$<BIN_VARIABLE>`` if set, else the first on PATH; exit 127 saying where to look."""
    override = os.environ.get(adapter.bin_variable)
    found = shutil.which(override or adapter.cli)
    if found is None:
        where = f"{adapter.bin_variable}={override}" if override else f"{adapter.cli!r} on PATH"
        print(
            f"{adapter.script}: cannot find {where}; install {adapter.package} or set {adapter.bin_variable}",
            file=sys.stderr,
        )
        raise SystemExit(NOT_FOUND)
    return found


def run_cli(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    stdin_text: str | None = None,
    stderr_filter: Callable[[str], str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the CLI with ``stdin_text`` (or nothing) on stdin and its stdout captured; its stderr stays the adapter's,
    or with ``stderr_filter`` is captured and what the filter keeps of it goes to the transcript once the CLI ends."""
    try:
        done = subprocess.run(
            list(argv),
            input=stdin_text,
            stdin=subprocess.DEVNULL if stdin_text is None else None,
            stdout=subprocess.PIPE,
            stderr=None if stderr_filter is None else subprocess.PIPE,
            text=True,
            errors="replace",
            env=None if env is None else dict(env),
            check=False,
        )
    except OSError as exc:
        print(f"could not start {argv[0]}: {exc}", file=sys.stderr)
        raise SystemExit(NOT_FOUND) from None
    if stderr_filter is not None:
        chatter(stderr_filter(done.stderr or ""))
    return done


def write_cost(outcome: Outcome) -> None:
    """``$RECALL_COST_FILE`` gets the dollars the CLI reported, or its token counts; nothing when unset."""
    path = os.environ.get("RECALL_COST_FILE")
    if not path:
        return
    figures: dict[str, float | int] = {}
    if outcome.cost_usd is not None:
        figures["cost_usd"] = outcome.cost_usd
    if outcome.tokens_in is not None:
        figures["tokens_in"] = outcome.tokens_in
    if outcome.tokens_out is not None:
        figures["tokens_out"] = outcome.tokens_out
    if figures:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(figures, out)
        # The harness consumes the file; this line keeps the figures in the step's transcript too.
        print(f"recall-cost: {json.dumps(figures)}", file=sys.stderr, flush=True)


def finish(outcome: Outcome, returncode: int) -> int:
    """Report: the answer on stdout, the cost in the cost file; the exit status the harness scores by."""
    write_cost(outcome)
    if returncode != 0 or not outcome.ok:
        # A failed step has no answer to judge: whatever the CLI said goes to the transcript only.
        chatter(outcome.answer)
        print(outcome.failure or f"the CLI exited {returncode}", file=sys.stderr, flush=True)
        wait = rate_limit_in(f"{outcome.failure}\n{outcome.answer}")
        if wait is not None:
            # The model's limit, not the agent's failure: the harness pauses the run and retries the case.
            retry = f" retry-after={wait:g}" if wait else ""
            print(f"{RATE_LIMITED_MARK} the model refused this step for a rate limit;{retry}", file=sys.stderr)
            return RATE_LIMITED_EXIT
        return returncode or 1
    print(outcome.answer, flush=True)
    return 0


# How the CLIs word a provider's rate limit on stdout: the HTTP status, and Anthropic's and OpenAI's phrases.
_RATE_LIMITED = re.compile(r"\b429\b|rate[ _-]?limit|too many requests|overloaded_error", re.IGNORECASE)
_RETRY_AFTER = re.compile(r"retry[ _-]?after\W{0,3}([0-9]+(?:\.[0-9]+)?)", re.IGNORECASE)


def rate_limit_in(text: str) -> float | None:
    """When ``text`` says the model refused for a rate limit: the seconds it asked to wait (0.0 if it did not
    say); else None."""
    if not _RATE_LIMITED.search(text):
        return None
    found = _RETRY_AFTER.search(text)
    return float(found.group(1)) if found else 0.0


def chatter(text: str) -> None:
    """What the CLI printed on stdout that is not the answer: kept, on stderr, for the transcript."""
    if text.strip():
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
        sys.stderr.flush()


class MalformedOutput(ValueError):
    """The CLI's output holds what no CLI of its kind writes (a line nested past the parser, a value of the wrong
    shape): the step's failure, said in one line by :func:`stream_reader`."""


# How much of what went wrong a one-line failure shows.
SHOWN_DETAIL_CHARS = 200


def stream_reader(reader: Callable[P, Outcome]) -> Callable[P, Outcome]:
    """A reader of a CLI's output that fails the step in one line, never a traceback, on output no CLI writes.

    A CLI's stream is read by field, and a field can hold anything: a string
    or a list where a number or an object goes, NaN, ``1e999``, a 400-digit
    integer, a line nested 3,000 deep. Each reader checks what it uses; this
    is the net under all of them, so that what one missed ends the step as
    the agent's failure (exit 1, the reason on one line) and not as a
    traceback in the transcript.
    """

    @functools.wraps(reader)
    def reading(*args: P.args, **kwargs: P.kwargs) -> Outcome:
        try:
            return reader(*args, **kwargs)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError, RecursionError) as exc:
            detail = " ".join(str(exc).split())[:SHOWN_DETAIL_CHARS]
            program = os.path.basename(sys.argv[0]) or "recall"
            return Outcome(
                "", ok=False, failure=f"{program}: the CLI's output cannot be read ({detail or type(exc).__name__})"
            )

    return reading


def json_events(stdout: str) -> Iterator[dict[str, Any]]:
    """Each line of the CLI's stdout that is a JSON object; every other line is chatter. A line nested past the
    parser is :class:`MalformedOutput`: no CLI writes one."""
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except RecursionError:
            raise MalformedOutput("a line of JSON nested too deep to read") from None
        except ValueError:
            event = None
        if isinstance(event, dict):
            yield event
        else:
            chatter(line)


def json_document(stdout: str) -> dict[str, Any] | None:
    """The one JSON object a CLI printed as its whole output, or None when it printed anything else."""
    try:
        document = json.loads(stdout)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def json_object(value: Any) -> dict[str, Any]:
    """A JSON object of a CLI's events, or an empty one where a broken stream holds anything else: read as
    nothing, never a traceback."""
    return value if isinstance(value, dict) else {}


def json_number(value: Any) -> float:
    """A usage figure from a CLI's JSON, or 0 for what is not a finite number: a broken stream is read as
    nothing, never a traceback."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    if isinstance(value, int) and value.bit_length() > 1023:  # past any float: float() would raise
        return 0.0
    return float(value) if math.isfinite(value) else 0.0


def live_args(argv: Sequence[str] | None) -> list[str] | None:
    """The extra arguments of ``recall-<cli> --live [EXTRA ARGS...]``, or None when not live."""
    args = list(sys.argv[1:] if argv is None else argv)
    return args[1:] if args[:1] == [LIVE_FLAG] else None


# A CLI's settings file is a few kilobytes to a few megabytes (history per project); more is no settings file.
MAX_SETTINGS_BYTES = 64 << 20


def merge_json_file(path: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Rewrite the JSON object in ``path`` through ``change``, keeping whatever else it holds.

    The file may carry a real login or memory copied into HOME, so it is never
    clobbered: a file that is not a JSON object is an error, not a fresh start,
    and the new text replaces the old atomically, with the old file's mode.
    Launchers that share a HOME (sessions at once) take turns: the whole
    read-modify-write holds an exclusive ``flock`` on the file's directory,
    which leaves nothing behind. An agent may have put a FIFO (an open that
    never returns), a link or a device there: anything but a regular file is
    refused in one line, without waiting on it or following it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(directory, fcntl.LOCK_EX)
        _merge_locked(path, change)
    finally:
        os.close(directory)  # and with it the lock


def _merge_locked(path: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    text, mode = _read_settings(path)
    try:
        document = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError) as exc:
        raise SystemExit(f"{path} is not valid JSON ({exc}); fix or remove it, it was not touched") from None
    if not isinstance(document, dict):
        raise SystemExit(f"{path} does not hold a JSON object; not touching it")
    changed = change(document)
    if changed == document and text.strip():
        return
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(changed, out, indent=2)
            out.write("\n")
        os.chmod(temporary, 0o600 if mode is None else mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _read_settings(path: Path) -> tuple[str, int | None]:
    """The settings file's text and mode ("" and None when there is none); one line for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return "", None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SystemExit(
                f"{path} is a symbolic link; replace it with the file itself, it was not touched"
            ) from None
        raise SystemExit(f"{path} could not be opened: {exc.strerror}; it was not touched") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SystemExit(f"{path} is not a regular file (a FIFO, device or folder); remove it, it was not touched")
        if info.st_size > MAX_SETTINGS_BYTES:
            raise SystemExit(f"{path} is larger than {MAX_SETTINGS_BYTES >> 20} MiB; not touching it")
        data = os.read(fd, MAX_SETTINGS_BYTES + 1)
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8"), stat.S_IMODE(info.st_mode)
    except UnicodeDecodeError:
        raise SystemExit(f"{path} is not UTF-8 text; fix or remove it, it was not touched") from None


def exec_cli(argv: Sequence[str], env: Mapping[str, str]) -> NoReturn:
    """Become the CLI: same pid, same terminal, so the harness drives it and sees its exit status."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(argv[0], list(argv), dict(env))
    except OSError as exc:
        print(f"could not start {argv[0]}: {exc}", file=sys.stderr)
        raise SystemExit(NOT_FOUND) from None


def mcp_config(env: Mapping[str, str]) -> tuple[str, dict[str, Any]] | None:
    """``(path, mcpServers)`` of the step's MCP configuration, or None when the run gives none."""
    path = env.get(MCP_CONFIG_VAR)
    if not path:
        return None
    try:
        servers = json.loads(Path(path).read_text(encoding="utf-8"))["mcpServers"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"{MCP_CONFIG_VAR}={path} is not an MCP configuration ({exc})") from None
    return path, dict(servers)


def refuse_mcp(adapter: Adapter) -> None:
    """An adapter that does not give its CLI the servers must not be scored as if they had been tried: exit saying so.

    The run refuses the pairing at start-up (``plugin/checks.py``); this holds for a case.toml's ``mcp`` too.
    """
    if os.environ.get(MCP_CONFIG_VAR) and adapter.mcp_refusal:
        print(f"{adapter.script}: {adapter.mcp_refusal}; run without --recall-mcp", file=sys.stderr)
        raise SystemExit(2)


# Where a local model server (or the fake model) answers: a refused connection there is final.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def refuse_dead_loopback_model(adapter: Adapter, url: str | None, named_by: str) -> None:
    """Exit 1 at once, in one line, when ``url`` (from ``named_by``) is a model on loopback that refuses connections.

    The CLIs retry a refused connection with back-off (a minute and more
    each for aider, Gemini CLI, Qwen Code, OpenCode and Cline) before they fail the
    step; a model server that is down makes every session of a run wait that
    out. Only loopback is checked: elsewhere a proxy may carry what a direct
    connection cannot, and the CLI's own error says more.
    """
    if not url:
        return
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return
    if host not in LOOPBACK_HOSTS:
        return
    try:
        with socket.create_connection((host, port), timeout=2):
            return
    except ConnectionRefusedError:
        print(
            f"{adapter.script}: the model at {url} ({named_by}) refuses connections; start it or fix {named_by}",
            file=sys.stderr,
        )
        raise SystemExit(1) from None
    except OSError:
        return  # anything else is the CLI's to report
