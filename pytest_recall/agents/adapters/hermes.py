"""``recall-hermes [EXTRA ARGS...] PROMPT``: Hermes Agent's one-shot mode, unattended.

``hermes --oneshot=PROMPT`` (``-z``) runs one turn and prints only the final answer; it
approves its own tools (one-shot sets its YOLO mode) and silences its logs.
It says nothing on stdout about a failed model call beyond a sentence in place
of the answer, and exits 0 all the same ("API call failed after 3 retries"),
so the adapter asks for ``--usage-file`` (a JSON report written even when the
run fails, in a folder of its own that is removed after) and takes a run that
is ``failed`` or not ``completed`` as the CLI's failure, never as an answer.
The same file gives the token counts.

Hermes Agent's memory is its ``memory`` tool: entries in
``~/.hermes/memories/MEMORY.md`` (and what it learns of the user in
``USER.md``), given to every later session in its system prompt; its past
sessions are also in ``~/.hermes/state.db``, searched by its
``session_search`` tool. ``HERMES_HOME`` moves the whole folder. Its model is
``model`` in ``~/.hermes/config.yaml``: ``provider: custom`` with a
``base_url`` reaches any OpenAI-compatible endpoint.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from pytest_recall.agents.adapters.common import Adapter, Outcome, json_number, stream_reader
from pytest_recall.agents.adapters.print_run import ModelAt, PrintRun, StepPlan

ADAPTER = Adapter(
    script="recall-hermes",
    cli="hermes",
    bin_variable="RECALL_HERMES_BIN",
    package="PyPI hermes-agent (Python >= 3.11)",
    tested="0.19.0",
    memory="~/.hermes/memories/MEMORY.md and USER.md (its memory tool; or under $HERMES_HOME), in every session",
    home_copy=".hermes/config.yaml,.hermes/.env,.hermes/auth.json",
    sandbox_bind="the root of Hermes Agent's virtual environment",
)
# The top-level ``model:`` block of config.yaml and, inside it, its ``base_url``.
_MODEL_BLOCK = re.compile(r"^model:[ \t]*\n((?:[ \t]+.*\n?|[ \t]*\n)*)", re.MULTILINE)
_BASE_URL = re.compile(r"^[ \t]+base_url:[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)


def hermes_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HERMES_HOME") or Path(env.get("HOME", "~"), ".hermes")).expanduser()


def model_base_url(env: Mapping[str, str]) -> str | None:
    """The ``base_url`` of ``model`` in config.yaml, written as a plain block; else None (the CLI reports).

    Only the block form that ``hermes model`` writes is read: the package does
    not depend on a YAML parser, and a URL it does not find is left to the CLI.
    """
    try:
        text = (hermes_home(env) / "config.yaml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    block = _MODEL_BLOCK.search(text)
    found = _BASE_URL.search(block.group(1)) if block else None
    return found.group(1) if found else None


def command(cli: str, extra: Sequence[str], prompt: str, usage_file: Path) -> list[str]:
    # One argument, so a prompt that starts with "-" is never read as a flag.
    return [cli, *extra, "--usage-file", str(usage_file), f"--oneshot={prompt}"]


@contextmanager
def oneshot_step(cli: str, extra: Sequence[str], prompt: str, _env: Mapping[str, str]) -> Iterator[StepPlan]:
    """The usage report in a folder of the step's own, read with the answer and removed after."""
    with tempfile.TemporaryDirectory(prefix="recall-hermes-") as folder:
        usage_file = Path(folder) / "usage.json"
        yield command(cli, extra, prompt, usage_file), None, lambda stdout: read_usage(stdout, usage_file)


@stream_reader
def read_usage(stdout: str, usage_file: Path) -> Outcome:
    """The answer on stdout, judged by the usage report: a run that failed there printed an error, not an answer."""
    try:
        usage = json.loads(usage_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        usage = None
    if not isinstance(usage, dict):
        return Outcome(stdout, ok=False, failure="hermes wrote no usage report; its run did not finish")
    answer = stdout.rstrip("\n")
    if usage.get("failed") or not usage.get("completed"):
        said = answer.strip().splitlines()[-1] if answer.strip() else "no answer"
        return Outcome(answer, ok=False, failure=f"hermes: the run failed: {said}")
    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    return Outcome(
        answer,
        ok=True,
        tokens_in=None if tokens_in is None else int(json_number(tokens_in)),
        tokens_out=None if tokens_out is None else int(json_number(tokens_out)),
    )


ROW = PrintRun(
    ADAPTER,
    None,
    step=oneshot_step,
    model=ModelAt("model.base_url in config.yaml", lambda _extra, env: model_base_url(env)),
)
main = ROW.main
