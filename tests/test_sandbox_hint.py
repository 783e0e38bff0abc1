"""The bwrap visibility check's hint, with real bwrap: following it must make the agent visible.

A hint that names the folder of a symlink, or only ``venv/bin``, sends the
user round the same error again; these tests follow each hint and check
that the check then passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from needs import needs_bwrap

from pytest_recall.plugin.sandbox_setup import bind_hint, check_reachable


def hinted_binds(program: Path, binds: tuple[Path, ...]) -> tuple[Path, ...]:
    """The binds the check's usage line tells the user to add."""
    with pytest.raises(pytest.UsageError) as raised:
        check_reachable(str(program), binds)
    message = str(raised.value)
    assert "is not visible inside the bwrap sandbox" in message
    return tuple(Path(part) for part in message.rsplit("--recall-sandbox-bind=", 1)[1].split(","))


def script(path: Path, interpreter: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{interpreter}\nprint('READY')\n")
    path.chmod(0o755)
    return path


@needs_bwrap
def test_a_symlinked_binary_hint_names_the_folder_of_its_target_and_following_it_works(tmp_path: Path) -> None:
    modules = tmp_path / "node_modules"
    target = script(modules / "agent-cli" / "cli.py", sys.executable)
    link = modules / ".bin" / "agent"
    link.parent.mkdir()
    link.symlink_to(os.path.relpath(target, link.parent))
    # The folder of the link alone is what the old hint named: the link then points into nowhere.
    hint = hinted_binds(link, (link.parent,))
    assert target.parent in hint
    check_reachable(str(link), (link.parent, *hint))


@needs_bwrap
def test_a_symlinked_binary_outside_every_bind_names_both_the_link_and_the_target_folder(tmp_path: Path) -> None:
    target = script(tmp_path / "pkg" / "cli.py", sys.executable)
    link = tmp_path / "bin" / "agent"
    link.parent.mkdir()
    link.symlink_to(target)
    hint = hinted_binds(link, ())
    assert set(hint) == {link.parent, target.parent}
    check_reachable(str(link), hint)


@needs_bwrap
def test_a_script_in_a_virtual_environment_names_the_environment_root(tmp_path: Path) -> None:
    venv = tmp_path / "agent-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    agent = script(venv / "bin" / "agent", str(venv / "bin" / "python"))
    assert hinted_binds(agent, ()) == (venv,)
    check_reachable(str(agent), (venv,))


@needs_bwrap
def test_a_plain_script_still_names_its_own_folder(tmp_path: Path) -> None:
    agent = script(tmp_path / "agent" / "agent.py", sys.executable)
    assert hinted_binds(agent, ()) == (agent.parent,)


def test_the_hint_drops_folders_inside_one_already_named(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    outside = tmp_path / "elsewhere" / "tool"
    assert bind_hint([venv / "bin" / "agent", venv / "bin" / "python", outside]) == (venv, outside.parent)
