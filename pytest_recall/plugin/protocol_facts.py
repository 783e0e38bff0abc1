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
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_recall import __version__
from pytest_recall.agents import all_adapters
from pytest_recall.cases import CaseError, read_toml
from pytest_recall.plugin.config import EpochChoice, RunConfig
from pytest_recall.plugin.items import order_seed
from pytest_recall.reporting import CaseSummary, build_protocol, content_hashes, data_entry, scoring_entry
from pytest_recall.scoring import BOOTSTRAP_SEED
from pytest_recall.sessions import Judge
from pytest_recall.suites import IMPORT_NOTE, SUITE_FILE

# A CLI that takes longer than this to print its version is reported as unknown; the run does not wait on it.
VERSION_TIMEOUT_S = 5.0
# The bundled LLM judge's prompts: their hash pins the prompt when the judge command is ``recall-judge``.
_BUNDLED_JUDGE = "recall-judge"


def _panel_facts(panel: Sequence[Judge], score_by: str, here: Path) -> dict[str, Any]:
    """With several judges: each one's name, command and files' hash, and which one scores; nothing with one."""
    if not panel:
        return {}
    listed = [
        {"name": judge.name, "command": judge.text, "files_sha256": _files_sha256(judge.argv, here)} for judge in panel
    ]
    return {"judges": listed, "score_by": score_by}


class ProtocolFacts:
    """The start-up half of the protocol block; :meth:`block` adds the cases' hashes at the end."""

    def __init__(self, config: pytest.Config, run_config: RunConfig) -> None:
        here = Path(config.invocation_params.dir)
        folders = _suite_folders(here / arg.split("::")[0] for arg in config.args)
        self.notes = _import_notes(folders)
        self.generator_seeds = _generator_seeds(folders)
        self.run_config = run_config
        self.agent = {
            "command": run_config.command.text,
            "adapter": _adapter(run_config.command.argv),
            "cli_version": _cli_version(run_config.command.argv),
        }
        judge = run_config.llm_judge
        self.judges = {
            "answer_judge": run_config.outputs.answer_judge,
            "llm_judge": {
                "command": judge.text,
                "files_sha256": _files_sha256(judge.argv, here),
                "both": judge.both,
                "free_form": judge.free_form,
                **_panel_facts(judge.panel, judge.name, here),
            }
            if judge.on
            else None,
        }

    def block(self, summaries: Iterable[CaseSummary]) -> dict[str, Any]:
        """The protocol block of a run whose cases' scalars are ``summaries``."""
        hashes = content_hashes(summaries)
        data = [data_entry(suite, self.notes.get(suite), found) for suite, found in hashes.items()]
        scale_out, mode = self.run_config.scale_out, self.run_config.run_mode()
        return build_protocol(
            data=data,
            scoring=scoring_entry(
                {suite: self.notes.get(suite) for suite in hashes}, self.run_config.outputs.answer_judge
            ),
            judges=self.judges,
            agent=self.agent,
            run={
                "epochs": scale_out.epochs,
                "epochs_from": _epochs_from(scale_out.epochs_from),
                "control": scale_out.control,
                "sandbox": mode["sandbox"],
                "sandbox_net": mode["sandbox_net"],
                "scope": mode["scope"],
                "prompt": mode["prompt"],
                "session": mode["session"],
                "mcp_servers": mode.get("mcp_servers"),
            },
            harness_version=__version__,
            seeds=self._seeds(hashes),
        )

    def _seeds(self, suites: Iterable[str]) -> dict[str, Any]:
        """Every seed that shaped the run: each import's sampling seed (null: the first questions were taken), each
        generated suite's, the case order's when the cases were shuffled, and the bootstrap's behind the intervals.
        No fake model here draws at random."""
        ran = sorted(suites)
        imports = {suite: self.notes[suite].get("options") or {} for suite in ran if suite in self.notes}
        return {
            "import": {suite: options.get("seed") for suite, options in imports.items()},
            "generator": {suite: self.generator_seeds[suite] for suite in ran if suite in self.generator_seeds},
            "case_order": order_seed(self.run_config),
            "bootstrap": BOOTSTRAP_SEED,
        }


def _suite_folders(paths: Iterable[Path]) -> list[Path]:
    """The folders a suite's file may sit in: each folder named on the command line, and its sub-folders."""
    folders: list[Path] = []
    for path in paths:
        if path.is_dir():
            folders += [path, *sorted(p for p in path.iterdir() if p.is_dir())]
    return folders


def _import_notes(folders: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """Each suite folder's import note, by suite name."""
    notes: dict[str, dict[str, Any]] = {}
    for folder in folders:
        try:
            note = json.loads((folder / IMPORT_NOTE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(note, dict):
            notes[folder.name] = note
    return notes


def _generator_seeds(folders: Iterable[Path]) -> dict[str, Any]:
    """Each generated suite's seed, from its suite file, by suite name; collection refuses a malformed file."""
    seeds: dict[str, Any] = {}
    for folder in folders:
        if not (folder / SUITE_FILE).is_file():
            continue
        try:
            settings = read_toml(folder / SUITE_FILE, folder.name)
        except CaseError:
            continue
        if "seed" in settings:
            seeds[folder.name] = settings["seed"]
    return seeds


def _adapter(argv: tuple[str, ...]) -> str | None:
    name = Path(argv[0]).name if argv else ""
    return next((a.script for a in all_adapters() if a.script == name and a.drives_one_cli), None)


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
        # ``--prompt-file=FILE`` names its file after the option's name.
        path = here / (word.split("=", 1)[1] if word.startswith("--") and "=" in word else word)
        try:
            if path.is_file() and not os.access(path, os.X_OK):
                hashes[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
        except (OSError, ValueError):
            continue
    # The bundled judge, also behind a wrapper such as ``env LLM_USER_PATH=... recall-judge``.
    if any(Path(word).name == _BUNDLED_JUDGE for word in argv):
        from pytest_recall.agents import builtin_prompts_sha256, judge_prompts_sha256

        hashes["judge_prompts.py"] = judge_prompts_sha256()
        if not any(word.startswith("--prompt-file") for word in argv):
            # What each verdict's prompt_sha256 is, by question type (see agents/prompt_file.py).
            hashes.update({f"prompt:{name}": digest for name, digest in builtin_prompts_sha256().items()})
    return hashes


def _epochs_from(choice: EpochChoice | None) -> dict[str, Any] | None:
    """Which earlier report chose the cases run once (by its bytes' hash, not its path), and how many it chose;
    with --recall-ci-width also the width asked, the runs planned for the report's cases and the half-width
    the report predicts for them."""
    if choice is None:
        return None
    chosen: dict[str, Any] = {"report_sha256": choice.report_sha256, "settled": len(choice.settled)}
    if choice.plan is not None:
        chosen |= {
            "ci_width": choice.ci_width,
            "planned_runs": sum(choice.plan.runs.values()),
            "predicted_half_width": round(choice.plan.half_width, 4),
        }
    return chosen
