"""What the report's protocol block needs from this machine, gathered once at start-up on the controller.

The suites' import notes, the agent CLI's version and the judge's files are
read before any case runs, so every report of the same setup says the same;
the block itself is built by :mod:`pytest_recall.reporting.protocol` at the end,
when the case content hashes are known.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from pytest_recall import __version__
from pytest_recall.agents.adapters import all_adapters
from pytest_recall.plugin.config import RunConfig
from pytest_recall.reporting import CaseSummary, build_protocol, content_hashes, data_entry, scoring_entry
from pytest_recall.suites.public_import import IMPORT_NOTE

# A CLI that takes longer than this to print its version is reported as unknown; the run does not wait on it.
VERSION_TIMEOUT_S = 5.0
# The bundled LLM judge's prompts: their hash pins the prompt when the judge command is ``recall-judge``.
_BUNDLED_JUDGE = "recall-judge"


class ProtocolFacts:
    """The start-up half of the protocol block; :meth:`block` adds the cases' hashes at the end."""

    def __init__(self, config: pytest.Config, run: RunConfig) -> None:
        here = Path(config.invocation_params.dir)
        self.notes = _import_notes(here / arg.split("::")[0] for arg in config.args)
        self.run = run
        self.agent = {
            "command": run.command.text,
            "adapter": _adapter(run.command.argv),
            "cli_version": _cli_version(run.command.argv),
        }
        judge = run.llm_judge
        self.judges = {
            "answer_judge": run.outputs.answer_judge,
            "llm_judge": {
                "command": judge.text,
                "files_sha256": _files_sha256(judge.argv, here),
                "both": judge.both,
                "free_form": judge.free_form,
            }
            if judge.on
            else None,
        }

    def block(self, summaries: Iterable[CaseSummary]) -> dict[str, Any]:
        """The protocol block of a run whose cases' scalars are ``summaries``."""
        hashes = content_hashes(summaries)
        data = [data_entry(suite, self.notes.get(suite), found) for suite, found in hashes.items()]
        scale_out, mode = self.run.scale_out, self.run.run_mode()
        return build_protocol(
            data=data,
            scoring=scoring_entry({suite: self.notes.get(suite) for suite in hashes}, self.run.outputs.answer_judge),
            judges=self.judges,
            agent=self.agent,
            run={
                "epochs": scale_out.epochs,
                "control": scale_out.control,
                "sandbox": mode["sandbox"],
                "sandbox_net": mode["sandbox_net"],
                "scope": mode["scope"],
                "prompt": mode["prompt"],
                "session": mode["session"],
                "mcp_servers": mode.get("mcp_servers"),
            },
            harness_version=__version__,
        )


def _import_notes(paths: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """Each named suite folder's import note (or its sub-folders' one level down), by suite name."""
    notes: dict[str, dict[str, Any]] = {}
    for path in paths:
        if not path.is_dir():
            continue
        for folder in (path, *sorted(p for p in path.iterdir() if p.is_dir())):
            try:
                note = json.loads((folder / IMPORT_NOTE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(note, dict):
                notes[folder.name] = note
    return notes


def _adapter(argv: tuple[str, ...]) -> str | None:
    name = Path(argv[0]).name if argv else ""
    return next((adapter.script for adapter in all_adapters() if adapter.script == name), None)


def _cli_version(argv: tuple[str, ...]) -> str | None:
    """The real CLI's ``--version`` behind a known adapter, asked once with a short bound; None when unknown."""
    script = _adapter(argv)
    adapter = next((a for a in all_adapters() if a.script == script), None)
    if adapter is None:
        return None
    cli = os.environ.get(adapter.bin_variable) or shutil.which(adapter.cli)
    if not cli:
        return None
    try:
        # Its own session, so a CLI that hangs is ended with every process it started, not only the first.
        process = subprocess.Popen(
            [cli, "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError:
        return None
    try:
        out, err = process.communicate(timeout=VERSION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return None
    lines = (out or err).strip().splitlines()
    return lines[0].strip() if process.returncode == 0 and lines else None


def _files_sha256(argv: tuple[str, ...], here: Path) -> dict[str, str]:
    """The SHA-256 of each file the judge command names that is no program (a script, a prompt), by file name.

    A changed judge prompt changes the block. For the bundled judge, its prompt module stands for the prompt.
    """
    hashes = {}
    for word in argv[1:]:
        path = here / word
        try:
            if path.is_file() and not os.access(path, os.X_OK):
                hashes[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
        except (OSError, ValueError):
            continue
    if argv and Path(argv[0]).name == _BUNDLED_JUDGE:
        from pytest_recall.agents import judge_prompts

        hashes["judge_prompts.py"] = hashlib.sha256(Path(judge_prompts.__file__).read_bytes()).hexdigest()
    return hashes
