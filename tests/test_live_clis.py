"""Live presets against the real CLIs: one process per case, each step a turn typed into its TUI or REPL.

Each end-to-end test runs two cases of the bundled seed suite through pytest
in a subprocess with ``--recall-live-preset``, at once, a HOME per
case, the CLI started by its adapter's ``--live`` launcher and wired to the
fake model server on 127.0.0.1. The fake model answers a later turn only from
a note in what the CLI sent it, so ``memory`` scores 1.000 and ``plain``
0.000. Its request log proves the turn protocol: every step reached the model
as exactly one request with the step's prompt (a prompt typed line by line
would arrive as many), and the answer read from the screen is the text the
model sent.

The launchers' seeding is also tested alone, with a stand-in for each CLI
that reports how it was started. The CLIs come from ``.ci/install-clis``
(``RECALL_<CLI>_BIN``) or PATH; a missing one skips its tests on a
developer's machine and fails them under CI.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_wiring import WIRINGS, Wiring, install_root, model_requests, real_cli

from pytest_recall.agents.adapters import claude
from pytest_recall.agents.adapters.common import Adapter, merge_json_file
from pytest_recall.agents.adapters.presets import PRESETS
from pytest_recall.reporting.document import with_shared
from pytest_recall.sessions.sandbox import check_bwrap
from pytest_recall.testing import FakeModelServer, Mode

ROOT = Path(__file__).resolve().parent.parent
# Every run checks a mechanism (each step one turn, the answer read from the screen, a fixed workdir, the
# sandbox), which two cases show: case_01 and case_02 store one name with different values, at once. The seed
# suite's eight cases score in the notebook's and the adapters' own tests.
TWO_CASES = ("-k", "case_01 or case_02")
CASES = 2
STEPS = 2
INNER_RUN_TIMEOUT_S = 900.0
# The CLI behind each preset, as the adapters name it.
PRESET_CLIS = {"llm-chat": "llm", "claude": "claude", "codex": "codex"}


def adapter_of(cli: str) -> Adapter:
    from pytest_recall.agents.adapters import all_adapters

    return {adapter.cli: adapter for adapter in all_adapters()}[cli]


def script(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


@dataclass
class LiveRun:
    """One CLI wired to one fake model, and an inner pytest run of the seed suite through its live preset."""

    pytester: pytest.Pytester
    preset: str
    adapter: Adapter
    wiring: Wiring
    log_path: Path

    def run(self, *flags: str) -> tuple[pytest.RunResult, dict[str, Any]]:
        report_path = self.pytester.path / "report.json"
        command = shlex.join([script(self.adapter.script), "--live", *self.wiring.extra_args])
        copies = ",".join(self.wiring.home_files)
        result = self.pytester.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            str(self.pytester.path / "cases"),
            f"--recall-live-preset={self.preset}",
            # The preset's command names the launcher on PATH; the test's names it in this venv, with the wiring.
            f"--recall-cmd={command}",
            "--recall-concurrency=4",
            "--recall-home=case",
            *([f"--recall-home-copy={copies}"] if copies else []),
            "--recall-timeout=240",
            f"--recall-report={report_path}",
            *flags,
            timeout=INNER_RUN_TIMEOUT_S,
        )
        assert report_path.exists(), result.stdout.str()[-3000:] + result.stderr.str()[-3000:]
        report: dict[str, Any] = json.loads(report_path.read_text(encoding="utf-8"))
        for record in report["cases"]:
            with_shared(record, report)
        return result, report

    def requests(self) -> list[dict[str, Any]]:
        return model_requests(self.log_path)


@pytest.fixture
def live_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, Mode], LiveRun]]:
    """``live_run(preset, mode)``: the CLI found, a fake model of that mode on a free port, HOME set up."""
    servers: list[FakeModelServer] = []

    def start(preset: str, mode: Mode) -> LiveRun:
        adapter = adapter_of(PRESET_CLIS[preset])
        monkeypatch.setenv(adapter.bin_variable, real_cli(adapter))
        log_path = pytester.path / f"model-{mode}.jsonl"
        server = FakeModelServer(mode, log_path=log_path).__enter__()
        servers.append(server)
        wiring = WIRINGS[adapter.cli](server.base_url)
        for name, text in wiring.home_files.items():
            (pytester.path / name).parent.mkdir(parents=True, exist_ok=True)
            (pytester.path / name).write_text(text, encoding="utf-8")
        for name, value in wiring.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
        shutil.copytree(ROOT / "cases" / "session-memory-recall", pytester.path / "cases")
        return LiveRun(pytester, preset, adapter, wiring, log_path)

    yield start
    for server in servers:
        server.close()


def turn_requests(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests that carry a new user prompt: not a tool result's follow-up, not the CLI's side task."""
    return [entry for entry in requests if not entry["after_tool"] and entry["kind"] != "side"]


def is_title_request(entry: dict[str, Any]) -> bool:
    """Codex's own request for a thread title: a structured reply, asked of the model once per session."""
    text = entry["body"].get("text")
    return isinstance(text, dict) and (text.get("format") or {}).get("type") == "json_schema"


def assert_each_step_was_one_request(requests: list[dict[str, Any]], cases: int = CASES) -> None:
    turns = turn_requests(requests)
    kinds = Counter(entry["kind"] for entry in turns)
    assert kinds == {"learn": cases, "recall": cases}, f"turn requests by kind: {dict(kinds)}"
    # Each holds its whole step, from its first line to its last: no step was cut into several turns.
    for entry in turns:
        part, last_line = ("PART 1 of 2", "result is the point of this step.")
        if entry["kind"] == "recall":
            part, last_line = ("PART 2 of 2", "output exactly: UNKNOWN")
        assert part in entry["prompt"] and last_line in entry["prompt"], entry["prompt"][:300]
    others = [e for e in requests if e["kind"] == "side" and not is_title_request(e)]
    assert others == [], f"requests that were no whole turn: {[e['prompt'][:80] for e in others]}"


def assert_screen_answers_are_what_the_model_said(report: dict[str, Any], requests: list[dict[str, Any]]) -> None:
    """Each case's last answer, read from the screen, is exactly one recall reply of the model."""
    said = Counter(entry["reply"] for entry in requests if entry["kind"] == "recall")
    shown = Counter(record["steps"][-1]["stdout"].strip() for record in report["cases"])
    assert shown == said, f"answers on screen {dict(shown)}, but the model said {dict(said)}"


@pytest.mark.real_cli
@pytest.mark.parametrize("preset", PRESET_CLIS)
def test_memory_model_scores_one_with_every_step_one_turn(live_run, preset):
    run = live_run(preset, "memory")

    result, report = run.run(*TWO_CASES)

    assert report["score"] == 1.0, result.stdout.str()[-4000:]
    assert report["n_total"] == CASES and report["n_errors"] == 0
    requests = run.requests()
    assert_each_step_was_one_request(requests)
    assert_screen_answers_are_what_the_model_said(report, requests)
    for record in report["cases"]:
        assert record["steps"][-1]["stdout"].strip() == str(record["expected"])
        assert record["steps"][-1]["exit_code"] == 0, "the preset's quit did not end the CLI well"
    assert any(entry["tool"] for entry in requests) == (preset != "llm-chat"), "memory is a tool call in a TUI"


@pytest.mark.real_cli
def test_claude_trusts_the_fixed_workdir_of_recall_workdir_case(live_run):
    """With one path per case, the launcher's trust entry is for that path: the TUI starts and remembers."""
    run = live_run("claude", "memory")

    result, report = run.run("--recall-workdir=case", *TWO_CASES)

    assert report["score"] == 1.0 and report["n_total"] == 2, result.stdout.str()[-4000:]
    assert all(record["run_mode"]["workdir"] == "case" for record in report["cases"])
    assert_each_step_was_one_request(run.requests())


@pytest.mark.real_cli
@pytest.mark.skipif(check_bwrap() is not None, reason=f"bwrap unusable here: {check_bwrap()}")
def test_claude_tui_remembers_under_bwrap_with_its_install_bound(live_run):
    """Sandboxed, with a network of its own: the TUI still reaches the loopback model, and nothing else."""
    run = live_run("claude", "memory")

    result, report = run.run(
        "--recall-sandbox=bwrap", f"--recall-sandbox-bind={install_root(real_cli(run.adapter))}", *TWO_CASES
    )

    assert report["score"] == 1.0 and report["n_total"] == 2, result.stdout.str()[-4000:]
    assert all(record["run_mode"]["sandbox"] == "bwrap" for record in report["cases"])
    assert_each_step_was_one_request(run.requests())


@pytest.mark.real_cli
@pytest.mark.parametrize("preset", PRESET_CLIS)
def test_plain_model_scores_zero_with_every_step_one_turn(live_run, preset):
    run = live_run(preset, "plain")

    result, report = run.run(*TWO_CASES)

    assert report["score"] == 0.0, result.stdout.str()[-4000:]
    assert report["n_total"] == 2 and report["n_errors"] == 0
    requests = run.requests()
    assert_each_step_was_one_request(requests)
    assert_screen_answers_are_what_the_model_said(report, requests)
    assert all(record["steps"][-1]["stdout"].strip() == "UNKNOWN" for record in report["cases"])
    assert not any(entry["tool"] for entry in requests), "a plain model asked to write memory"


def test_every_preset_has_its_cli_and_launcher():
    assert set(PRESETS) == set(PRESET_CLIS)
    for name, preset in PRESETS.items():
        assert preset.command == (adapter_of(PRESET_CLIS[name]).script, "--live")


# -- the launchers alone, with a stand-in CLI ---------------------------------------------------------------------

STAND_IN = """#!{python}
import json, os, sys
json.dump({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}, open(os.environ["STAND_IN_OUT"], "w"))
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, list[str]], dict[str, Any]]:
    """``stand_in(cli, args)``: run ``recall-<cli> --live ARGS`` in a fresh cwd and HOME; what the CLI was given."""
    home, cwd, out = tmp_path / "home", tmp_path / "cwd", tmp_path / "started.json"
    home.mkdir()
    cwd.mkdir()
    fake = tmp_path / "fake-cli"
    fake.write_text(STAND_IN.format(python=sys.executable), encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)

    def run(cli: str, args: list[str]) -> dict[str, Any]:
        adapter = adapter_of(cli)
        env = {**os.environ, "HOME": str(home), adapter.bin_variable: str(fake), "STAND_IN_OUT": str(out)}
        env |= {"ANTHROPIC_API_KEY": "sk-ant-api03-0123456789abcdefghijKLMNOPQRSTUVWXYZ"}
        done = subprocess.run([script(adapter.script), "--live", *args], cwd=cwd, env=env, check=False, timeout=60)
        assert done.returncode == 0
        started: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return started

    return run


def test_claude_launcher_seeds_the_first_run_state_and_becomes_the_tui(stand_in, tmp_path):
    config = tmp_path / "home" / ".claude.json"
    config.write_text(json.dumps({"oauthAccount": {"id": 1}, "projects": {"/elsewhere": {"x": 1}}}), encoding="utf-8")
    config.chmod(0o640)

    started = stand_in("claude", ["--model", "fake"])

    assert started["argv"] == ["--dangerously-skip-permissions", "--model", "fake"]
    assert started["env"]["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    if os.geteuid() == 0:
        assert started["env"]["IS_SANDBOX"] == "1"
    seeded = json.loads(config.read_text(encoding="utf-8"))
    cwd = started["cwd"]
    assert seeded["oauthAccount"] == {"id": 1}, "the login in HOME was kept"
    assert seeded["projects"] == {"/elsewhere": {"x": 1}, cwd: {"hasTrustDialogAccepted": True}}
    assert seeded["hasCompletedOnboarding"] is True and seeded["bypassPermissionsModeAccepted"] is True
    assert seeded["customApiKeyResponses"] == {"approved": ["ghijKLMNOPQRSTUVWXYZ"], "rejected": []}
    assert stat.S_IMODE(config.stat().st_mode) == 0o640


def test_claude_seed_is_a_merge_and_idempotent():
    before = {
        "projects": {"/w": {"allowedTools": ["Bash"], "hasTrustDialogAccepted": False}},
        "customApiKeyResponses": {"approved": ["old"], "rejected": ["sk-fake"]},
        "numStartups": 3,
    }
    once = claude.live_state(before, "/w", "sk-fake")
    assert once["projects"]["/w"] == {"allowedTools": ["Bash"], "hasTrustDialogAccepted": True}
    assert once["customApiKeyResponses"] == {"approved": ["old", "sk-fake"], "rejected": []}
    assert once["numStartups"] == 3
    assert claude.live_state(once, "/w", "sk-fake") == once
    assert "customApiKeyResponses" not in claude.live_state({}, "/w", None)
    assert before["projects"]["/w"]["hasTrustDialogAccepted"] is False, "the input was not changed in place"


def test_a_config_that_is_not_a_json_object_is_left_alone(tmp_path):
    path = tmp_path / ".claude.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(SystemExit, match="does not hold a JSON object"):
        merge_json_file(path, lambda config: {**config, "x": 1})
    assert path.read_text(encoding="utf-8") == "[1, 2]"
    path.write_text("{broken", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"is not valid JSON .*fix or remove it"):
        merge_json_file(path, lambda config: {**config, "x": 1})
    assert path.read_text(encoding="utf-8") == "{broken"
    fresh = tmp_path / "sub" / "new.json"
    merge_json_file(fresh, lambda config: {**config, "x": 1})
    assert json.loads(fresh.read_text(encoding="utf-8")) == {"x": 1}
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert [p.name for p in fresh.parent.iterdir()] == ["new.json"], "no temporary file left behind"


@pytest.mark.parametrize(
    ("cli", "argv"),
    [
        ("codex", ["--no-daemon", "--no-alt-screen", "--dangerously-bypass-approvals-and-sandbox", "-m", "fake"]),
        ("llm", ["chat", "--continue", "-m", "fake"]),
    ],
)
def test_codex_and_llm_launchers_start_the_interactive_cli(stand_in, tmp_path, cli, argv):
    started = stand_in(cli, ["-m", "fake"])

    assert started["argv"] == argv
    assert not (tmp_path / "home" / ".claude.json").exists()


# -- issue 26, item 7: launchers that share a HOME, and what an agent may have put there ---------

MERGER = """
import sys
from pathlib import Path
from pytest_recall.agents.adapters.common import merge_json_file
path, who = Path(sys.argv[1]), sys.argv[2]
for turn in range(25):
    merge_json_file(path, lambda config: {**config, f"{who}-{turn}": True})
"""


def test_launchers_at_once_on_one_home_lose_no_update(tmp_path):
    """Eight launchers on one ~/.claude.json at once: every entry each of them added is still there."""
    path = tmp_path / ".claude.json"
    runs = [subprocess.Popen([sys.executable, "-c", MERGER, str(path), f"launcher{n}"]) for n in range(8)]
    assert [run.wait(timeout=120) for run in runs] == [0] * 8
    kept = json.loads(path.read_text(encoding="utf-8"))
    assert len(kept) == 8 * 25, f"{8 * 25 - len(kept)} updates lost"


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder"])
def test_a_settings_file_that_is_not_a_regular_file_is_refused_in_one_line(tmp_path, kind):
    path = tmp_path / ".claude.json"
    target = tmp_path / "elsewhere.json"
    target.write_text("{}", encoding="utf-8")
    {"fifo": os.mkfifo, "symlink": lambda p: p.symlink_to(target), "folder": os.mkdir}[kind](path)
    code = (
        "from pathlib import Path; from pytest_recall.agents.adapters.common import merge_json_file; "
        f"merge_json_file(Path({str(path)!r}), dict)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "it was not touched" in done.stderr, done.stderr
    assert target.read_text(encoding="utf-8") == "{}"


def test_the_claude_launcher_refuses_the_users_own_home_under_the_harness(stand_in, tmp_path):
    """--recall-home=user: HOME is not the case's; the real ~/.claude.json must not be seeded."""
    home = tmp_path / "home"
    config = home / ".claude.json"
    config.write_text('{"oauthAccount": {"id": 1}}', encoding="utf-8")
    scope = tmp_path / "recall-case-x" / "scope"
    scope.mkdir(parents=True)
    env = {**os.environ, "HOME": str(home), "RECALL_SCOPE_DIR": str(scope), "RECALL_CLAUDE_BIN": "/bin/false"}
    env.pop("CLAUDE_CONFIG_DIR", None)
    done = subprocess.run(
        [script("recall-claude"), "--live"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "--recall-home=user" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert json.loads(config.read_text(encoding="utf-8")) == {"oauthAccount": {"id": 1}}
