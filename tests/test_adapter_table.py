"""The README's table of adapters, ``pytest-recall agents`` and the console scripts name the same adapters.

A newcomer copies the README's command lines: each CLI with an adapter gets
exactly one row there, at the version the adapter was tested with, and the
adapter's console script is installed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_recall.agents.adapters import all_adapters

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
TABLE_ROWS = [line for line in README.splitlines() if line.startswith("| ") and "`recall-" in line]


@pytest.mark.parametrize("adapter", all_adapters(), ids=lambda adapter: adapter.script)
def test_each_adapter_has_one_readme_row_at_its_tested_version_and_a_console_script(adapter):
    rows = [row for row in TABLE_ROWS if f"| `{adapter.script}` |" in row]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]

    assert len(rows) == 1, f"{adapter.script}: {len(rows)} README table rows"
    assert f" {adapter.tested} " in rows[0]
    assert adapter.memory.split()[0].rstrip(";,") in rows[0]
    assert scripts[adapter.script] == f"pytest_recall.agents.adapters.{adapter.cli}:main"


def test_the_readme_keeps_no_untested_recipe_and_agents_lists_every_adapter():
    listed = subprocess.run(
        [sys.executable, "-m", "pytest_recall.cli", "agents"], capture_output=True, text=True, check=True
    ).stdout

    assert "untested" not in README.lower()
    assert [line.split(":")[0] for line in listed.splitlines() if not line.startswith(" ")] == [
        *(adapter.script for adapter in all_adapters()),
        "recall-acp",
    ]
    driven = [line.split(None, 1)[1] for line in listed.splitlines() if line.startswith("  driven ")]
    assert len(driven) == len(all_adapters()) + 1
    assert sum("live through" in line for line in driven) == 3 and driven[-1].startswith("ACP: ")


@pytest.mark.parametrize("adapter", all_adapters(), ids=lambda adapter: adapter.script)
def test_adapter_without_its_cli_exits_127_naming_the_variable(pytester, monkeypatch, adapter):
    """A missing CLI is one line that names its variable; seeing it takes no CLI, so it is a quick-tier test."""
    monkeypatch.setenv(adapter.bin_variable, str(pytester.path / "no-such-cli"))
    script = Path(sys.executable).with_name(adapter.script)

    result = pytester.run(str(script), "Reply with the single word READY.")

    assert result.ret == 127
    assert result.outlines == []
    result.stderr.fnmatch_lines([f"{adapter.script}: cannot find {adapter.bin_variable}=*; install *"])
