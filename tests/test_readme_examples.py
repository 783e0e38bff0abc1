"""The shell examples in the README and docs/ run, and print what the docs say they print.

A fenced block whose info string is ``bash recall-test`` is executed with
bash; a ``text recall-output`` block right after it is what the run must
show: its lines, in order, with other lines allowed between them, where a
``...`` line stands for any number of lines, a ``...`` inside a line for any
text there, and timings (``0.27s``) are compared as ``<t>``. A stale example
then fails here, and so in CI.

A recipe for a real agent CLI says so: ``needs=claude`` (or ``llm``, ``codex``,
several joined by commas) runs it with the CLI that ``.ci/install-clis``
pinned, against the fake model the recipe starts itself; ``needs=server-memory``
finds the MCP server that ``.ci/install-mcp-servers`` pinned in ``./mcp``,
where the install block before such a recipe puts it. Where one is missing
the test skips, except under ``CI``, where that fails. Blocks that start a
fake model on the same ``--port`` take turns, since xdist runs them side by
side, and every process a block started is ended with it.

Blocks marked ``fresh-clone`` (the Quickstart, which installs the package)
run in a copy of the repository's tracked files, exactly as written; the
others run in a folder holding the ``cases`` and a ``.venv`` that is this
test run's own environment, as after the Quickstart. They run as the reader's
shell would: with no pytest-recall script on PATH, after the blocks marked
``shell-setup`` that come before them in the same document (the README's
``. .venv/bin/activate``), so a command that works only in an activated
environment must follow the line that activates it. The folder also holds
``tests/data``, the small LongMemEval and LoCoMo files a clone has.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_wiring import install_root, real_cli
from mcp_servers import server_command

from pytest_recall.agents.adapters import all_adapters

REPO_DIR = Path(__file__).resolve().parent.parent
DOCUMENTS = [REPO_DIR / "README.md", *sorted((REPO_DIR / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```\s*$", re.MULTILINE | re.DOTALL)
_TIMING = re.compile(r"\d+(?:\.\d+)?s\b")
_FAKE_MODEL_PORT = re.compile(r"fake-model\b[^\n]*--port[ =](\d+)")
RUN_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Example:
    document: str
    line: int
    commands: str
    expected: tuple[str, ...] | None
    fresh_clone: bool
    # The shell-setup blocks before this one in its document, which the reader's shell has run.
    setup: str = ""
    # The agent CLIs the recipe runs (``needs=claude,llm``), by the adapter's CLI name.
    needs: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.document}:{self.line}"


def examples() -> list[Example]:
    found = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        blocks = list(_FENCE.finditer(text))
        setup = ""
        for index, block in enumerate(blocks):
            words = block["info"].split()
            if words[:2] != ["bash", "recall-test"]:
                continue
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            expected = None
            between = text[block.end() : following.start()] if following else ""
            if following is not None and following["info"].split()[:2] == ["text", "recall-output"]:
                # Prose between the command and its output is fine; another command block is not.
                assert "```" not in between
                expected = tuple(following["body"].splitlines())
            found.append(
                Example(
                    document=str(path.relative_to(REPO_DIR)),
                    line=text.count("\n", 0, block.start()) + 1,
                    commands=block["body"],
                    expected=expected,
                    fresh_clone="fresh-clone" in words,
                    setup=setup,
                    needs=tuple(cli for word in words if word.startswith("needs=") for cli in word[6:].split(",")),
                )
            )
            if "shell-setup" in words:
                setup += block["body"]
    return found


def untimed(line: str) -> str:
    return _TIMING.sub("<t>", line.rstrip())


def assert_shows(output: str, expected: tuple[str, ...], name: str) -> None:
    """Every expected line, in order, with any lines between them."""
    actual = [untimed(line) for line in output.splitlines()]
    position = 0
    for wanted in (untimed(line) for line in expected):
        if wanted == "...":
            continue
        pattern = re.compile(".*".join(map(re.escape, wanted.split("..."))))
        found = next((i for i in range(position, len(actual)) if pattern.fullmatch(actual[i])), None)
        if found is None:
            shown = "\n".join(actual[-40:])
            pytest.fail(f"{name}: the docs show {wanted!r}, which the run did not print (in order):\n{shown}")
        position = found + 1


def run_commands(example: Example, folder: Path) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "VIRTUAL_ENV"))}
    # The reader's shell has no pytest-recall on PATH until the docs say how (an activated test run,
    # or a pyenv shim of another install, would otherwise hide a missing activation).
    kept = [entry for entry in env.get("PATH", "").split(os.pathsep) if entry and not _holds_our_scripts(entry)]
    env["PATH"] = os.pathsep.join(kept)
    with (
        _ports_of(example.commands),
        subprocess.Popen(
            ["bash", "-e", "-o", "pipefail", "-c", example.setup + example.commands],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        ) as shell,
    ):
        try:
            output, _ = shell.communicate(timeout=RUN_TIMEOUT_S)
        finally:
            # What the recipe left running (a fake model it starts with `&`) ends with it, even when it failed.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(shell.pid, signal.SIGKILL)
    return output


@contextlib.contextmanager
def _ports_of(commands: str) -> Iterator[None]:
    """Hold each loopback port the recipe's fake model listens on, so recipes on one port take turns."""
    with contextlib.ExitStack() as held:
        for port in sorted(set(_FAKE_MODEL_PORT.findall(commands))):
            lock = held.enter_context(open(Path(tempfile.gettempdir()) / f"pytest-recall-docs-port-{port}.lock", "w"))
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def tier_marks(example: Example) -> list[pytest.MarkDecorator]:
    """The tiers of what a recipe drives: real_cli for an agent CLI, mcp_server for a server."""
    servers = {"server-memory"}
    marks = [pytest.mark.mcp_server] if servers & set(example.needs) else []
    return marks + ([pytest.mark.real_cli] if set(example.needs) - servers else [])


def needed_tools(example: Example, folder: Path) -> None:
    """Skip (or, under CI, fail) unless every CLI and server the recipe drives is installed."""
    adapters = {adapter.cli: adapter for adapter in all_adapters()}
    for tool in example.needs:
        if tool == "server-memory":
            # What the recipe's install block leaves: the server's npm prefix in ./mcp.
            (folder / "mcp").symlink_to(install_root(server_command(tool)), target_is_directory=True)
            continue
        assert tool in adapters, f"{example.name}: needs={tool} names no adapter's CLI ({', '.join(adapters)})"
        real_cli(adapters[tool])


def _holds_our_scripts(folder: str) -> bool:
    return (Path(folder) / "recall-notebook").exists() or (Path(folder) / "pytest-recall").exists()


def after_the_quickstart(folder: Path) -> Path:
    """A folder as the Quickstart leaves it: the cases, and a .venv with pytest-recall installed (ours)."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("the examples need this test run to be in a virtual environment, as the Quickstart makes")
    shutil.copytree(REPO_DIR / "cases", folder / "cases")
    shutil.copytree(REPO_DIR / "tests" / "data", folder / "tests" / "data")
    (folder / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    return folder


def fresh_clone(folder: Path) -> Path:
    """The repository's tracked files, as a clone has them."""
    if shutil.which("git") is None or not (REPO_DIR / ".git").exists():
        pytest.skip("not a git checkout: there is no clone to copy")
    listed = subprocess.run(
        ["git", "-C", str(REPO_DIR), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source, target = REPO_DIR / name, folder / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return folder


EXAMPLES = examples()


def test_the_docs_hold_tested_examples_and_the_quickstart_is_two_commands() -> None:
    quickstart = [e for e in EXAMPLES if e.fresh_clone]
    assert len(quickstart) == 1 and quickstart[0].document == "README.md"
    assert quickstart[0].expected is not None
    assert len([e for e in EXAMPLES if not e.fresh_clone]) >= 2
    # The whole Quickstart section: one command runs the bundled suite (tested above, as written),
    # the other runs this project's tests (what CI runs, so not from inside a test).
    readme = (REPO_DIR / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    commands = [
        line
        for block in _FENCE.finditer(section)
        if block["info"].split()[:1] == ["bash"]
        for line in block["body"].strip().splitlines()
    ]
    assert len(commands) == 2, "the Quickstart is exactly two commands"
    assert "--recall-cmd=.venv/bin/recall-notebook" in commands[0]
    assert commands[1].endswith("-m pytest tests -n auto --maxschedchunk 2")


@pytest.mark.parametrize(
    "example",
    # A recipe that drives a real CLI or MCP server is in that tier (a minute or more): tests/conftest.py
    # leaves it out of the quick tier and starts it early in a full run.
    [pytest.param(e, marks=tier_marks(e)) for e in EXAMPLES if not e.fresh_clone],
    ids=lambda e: e.name,
)
def test_a_documented_example_prints_what_the_docs_show(example: Example, tmp_path: Path) -> None:
    folder = after_the_quickstart(tmp_path)
    needed_tools(example, folder)
    output = run_commands(example, folder)
    if example.expected is not None:
        assert_shows(output, example.expected, example.name)


@pytest.mark.slow
@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.fresh_clone], ids=lambda e: e.name)
def test_the_quickstart_works_exactly_as_written_on_a_fresh_clone(example: Example, tmp_path: Path) -> None:
    output = run_commands(example, fresh_clone(tmp_path))
    assert example.expected is not None
    assert_shows(output, example.expected, example.name)


def test_timings_are_all_that_may_differ() -> None:
    assert_shows(
        "a\n  latency per case: median 1.32s, p95 9.5s\nb", ("  latency per case: median 0.27s, p95 0.40s",), "x"
    )
    with pytest.raises(pytest.fail.Exception):
        assert_shows("recall: PASSED  score 0.900", ("recall: PASSED  score 1.000",), "x")
    # "..." inside a line stands for any text there, and for nothing else.
    assert_shows("  latency 2s;  cost: $0.2772", ("  latency 1s;  cost: $...",), "x")
    with pytest.raises(pytest.fail.Exception):
        assert_shows("  latency 2s;  cost: not reported", ("  latency 1s;  cost: $...",), "x")


def test_every_ci_recipe_merges_by_the_score_as_its_shards_are_gated() -> None:
    """The shards pass whatever they score (``--recall-threshold=0``), so only the merge can say the verdict:
    without ``--gate score`` it exits 1 on any failed case and turns a passing run red."""
    recipes = (REPO_DIR / "docs" / "ci.md").read_text(encoding="utf-8")
    merges = [line for line in recipes.splitlines() if "pytest-recall merge" in line and "report-" in line]
    assert len(merges) >= 3, merges  # GitHub Actions, GitLab, Kubernetes (and the local try-out)
    assert [line for line in merges if "--gate score" not in line] == []
