"""The README's table of adapters, ``docs/agents.md``, ``pytest-recall agents``, the console scripts and the
tests' wirings name the same adapters: those of ``ADAPTER_MODULES``, the one list.

A newcomer copies the README's command lines: each CLI with an adapter gets
exactly one row there, at the version the adapter was tested with, and the
adapter's console script is installed.
"""

from __future__ import annotations

import importlib
import json
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import cli_wiring
import pytest

from pytest_recall.agents.adapters import ADAPTER_MODULES, all_adapters
from pytest_recall.agents.adapters.common import Adapter, Outcome
from pytest_recall.agents.adapters.print_run import (
    ModelAt,
    PrintRun,
    StepPlan,
    after,
    joined,
    on_stdin,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
TABLE_ROWS = [line for line in README.splitlines() if line.startswith("| ") and "`recall-" in line]
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
AGENTS_DOC = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
# recall-acp drives any ACP agent named after its ``--``: its README rows are one per agent, its wirings too.
ANY_AGENT = "recall-acp"


@pytest.mark.parametrize("adapter", [a for a in all_adapters() if a.drives_one_cli], ids=lambda adapter: adapter.script)
def test_each_adapter_has_one_readme_row_at_its_tested_version(adapter):
    rows = [row for row in TABLE_ROWS if f"| `{adapter.script}` |" in row]

    assert len(rows) == 1, f"{adapter.script}: {len(rows)} README table rows"
    assert f" {adapter.tested} " in rows[0]
    assert adapter.memory.split()[0].rstrip(";,") in rows[0]


def test_the_console_scripts_are_the_adapter_list():
    listed = {
        adapter.script: f"pytest_recall.agents.adapters.{module}:main"
        for module, adapter in zip(ADAPTER_MODULES, all_adapters(), strict=True)
    }
    installed = {
        script: target for script, target in SCRIPTS.items() if target.startswith("pytest_recall.agents.adapters.")
    }

    assert installed == listed


def test_the_readme_table_docs_and_wirings_name_the_adapter_list():
    scripts = [adapter.script for adapter in all_adapters()]
    in_table = sorted(re.findall(r"^\| [^|]* \| `(recall-[a-z]+)` \|", README, re.MULTILINE))
    headed = re.findall(r"^##+ [^\n]*: `(recall-[a-z]+)`$", AGENTS_DOC, re.MULTILINE)
    wired = sorted(
        name.removesuffix("_wiring") for name in dir(cli_wiring) if name.endswith("_wiring") and "acp" not in name
    )

    assert in_table == sorted(script for script in scripts if script != ANY_AGENT)
    assert f"`{ANY_AGENT} -- " in README
    assert sorted(headed) == sorted(scripts)
    assert wired == sorted(adapter.cli for adapter in all_adapters() if adapter.drives_one_cli)
    assert [name for name in dir(cli_wiring) if name.endswith("_acp_wiring")]


def test_the_readme_keeps_no_untested_recipe_and_agents_lists_every_adapter():
    listed = subprocess.run(
        [sys.executable, "-m", "pytest_recall.cli", "agents"], capture_output=True, text=True, check=True
    ).stdout

    assert "untested" not in README.lower()
    assert [line.split(":")[0] for line in listed.splitlines() if not line.startswith(" ")] == [
        adapter.script for adapter in all_adapters()
    ]
    driven = [line.split(None, 1)[1] for line in listed.splitlines() if line.startswith("  driven ")]
    assert len(driven) == len(all_adapters())
    assert sum("live through" in line for line in driven) == 3 and driven[-1].startswith("ACP: ")


@pytest.mark.parametrize("adapter", [a for a in all_adapters() if a.drives_one_cli], ids=lambda adapter: adapter.script)
def test_adapter_without_its_cli_exits_127_naming_the_variable(pytester, monkeypatch, adapter):
    """A missing CLI is one line that names its variable; seeing it takes no CLI, so it is a quick-tier test."""
    monkeypatch.setenv(adapter.bin_variable, str(pytester.path / "no-such-cli"))
    script = Path(sys.executable).with_name(adapter.script)

    result = pytester.run(str(script), "Reply with the single word READY.")

    assert result.ret == 127
    assert result.outlines == []
    result.stderr.fnmatch_lines([f"{adapter.script}: cannot find {adapter.bin_variable}=*; install *"])


ECHO_CLI = """#!{python}
import json, os, sys
print(json.dumps({{"argv": sys.argv[1:], "stdin": sys.stdin.read(), "quiet": os.environ.get("ROW_QUIET")}}))
"""


def echo_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **fields: Any) -> PrintRun:
    """A print-mode row whose CLI prints what it was given, as the one line of JSON the reader takes for the answer."""
    cli = tmp_path / "echo-cli"
    cli.write_text(ECHO_CLI.format(python=sys.executable), encoding="utf-8")
    cli.chmod(0o755)
    monkeypatch.setenv("RECALL_ECHO_BIN", str(cli))
    adapter = Adapter("recall-echo", "echo-cli", "RECALL_ECHO_BIN", "nothing", "-", "-", "-", "-")
    return PrintRun(adapter, lambda stdout: Outcome(stdout.strip(), ok=True), **fields)


@pytest.mark.parametrize(
    ("way", "argv", "stdin"),
    [
        (on_stdin, ["--json", "-m", "x"], "the prompt"),
        (after("--"), ["--json", "-m", "x", "--", "the prompt"], ""),
        (joined("--prompt="), ["--json", "-m", "x", "--prompt=the prompt"], ""),
    ],
)
def test_a_print_row_runs_its_cli_with_flags_extra_args_and_the_prompt_its_way(
    tmp_path, monkeypatch, capsys, way, argv, stdin
):
    row = echo_row(tmp_path, monkeypatch, flags=["--json"], prompt=way, env_under={"ROW_QUIET": "row"})
    monkeypatch.delenv("ROW_QUIET", raising=False)

    assert row.main(["-m", "x", "the prompt"]) == 0
    assert json.loads(capsys.readouterr().out) == {"argv": argv, "stdin": stdin, "quiet": "row"}


def test_a_print_rows_own_step_plans_the_run_and_cleans_up_after_the_answer_is_read(tmp_path, monkeypatch, capsys):
    """A row's ``step`` (Hermes Agent's usage file, OpenClaw's prompt file): its folder outlives the read, not main."""
    folders: list[Path] = []

    @contextmanager
    def step(cli: str, extra: Sequence[str], prompt: str, env: Mapping[str, str]) -> Iterator[StepPlan]:
        with tempfile.TemporaryDirectory() as made:
            folder = Path(made)
            folders.append(folder)
            (folder / "prompt.txt").write_text(prompt, encoding="utf-8")

            def read(stdout: str) -> Outcome:
                return Outcome(
                    f"{json.loads(stdout)['stdin']} read beside {sorted(p.name for p in folder.iterdir())}", ok=True
                )

            yield [cli, *extra, str(folder / "prompt.txt")], (folder / "prompt.txt").read_text(), read

    row = replace(echo_row(tmp_path, monkeypatch), reader=None, step=step)

    assert row.main(["-m", "x", "the prompt"]) == 0
    assert capsys.readouterr().out.strip() == "the prompt read beside ['prompt.txt']"
    assert len(folders) == 1 and not folders[0].exists()
    with pytest.raises(ValueError, match="one of reader, reader_for and step"):
        replace(row, reader=lambda stdout: Outcome(stdout, ok=True))
    with pytest.raises(ValueError, match="step makes its command: give it no flags, command or prompt"):
        replace(row, flags=["--json"])


def test_a_print_rows_env_under_yields_to_the_users_and_env_over_wins(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ROW_QUIET", "user")
    assert echo_row(tmp_path, monkeypatch, env_under={"ROW_QUIET": "row"}).main(["p"]) == 0
    assert json.loads(capsys.readouterr().out)["quiet"] == "user"
    assert echo_row(tmp_path, monkeypatch, env_over={"ROW_QUIET": "row"}).main(["p"]) == 0
    assert json.loads(capsys.readouterr().out)["quiet"] == "row"


def test_a_print_row_refuses_mcp_it_does_not_pass_on_and_a_dead_loopback_model(tmp_path, monkeypatch, capsys):
    refusing = echo_row(tmp_path, monkeypatch)
    refusing = PrintRun(replace(refusing.adapter, mcp_refusal="not wired"), refusing.reader)
    monkeypatch.setenv("RECALL_MCP_CONFIG", str(tmp_path / "mcp.json"))
    with pytest.raises(SystemExit) as refused:
        refusing.main(["p"])
    assert refused.value.code == 2 and "recall-echo: not wired; run without --recall-mcp" in capsys.readouterr().err
    monkeypatch.delenv("RECALL_MCP_CONFIG")

    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    monkeypatch.setenv("ROW_MODEL_URL", f"http://127.0.0.1:{port}/v1")
    with pytest.raises(SystemExit) as dead:
        echo_row(tmp_path, monkeypatch, model=ModelAt("ROW_MODEL_URL")).main(["p"])
    assert dead.value.code == 1 and "refuses connections; start it or fix ROW_MODEL_URL" in capsys.readouterr().err


def test_every_print_mode_adapter_is_a_row_of_the_runner():
    rows = {
        module: getattr(importlib.import_module(f"pytest_recall.agents.adapters.{module}"), "ROW", None)
        for module in ADAPTER_MODULES
    }
    own_main = sorted(module for module, row in rows.items() if row is None)

    # ACP is a protocol of its own; Claude Code and Codex also run live through their TUIs.
    assert own_main == ["acp", "claude", "codex"]
    for module, row in rows.items():
        if row is not None:
            assert importlib.import_module(f"pytest_recall.agents.adapters.{module}").main == row.main
