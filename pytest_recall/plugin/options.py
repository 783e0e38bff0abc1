"""Every ``--recall-*`` flag with its ini twin, and the settings read from them.

Each option is declared once here; the flag and the ini key share one help
text, and a flag given on the command line wins over the ini value.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.agents.adapters.advice import preset_conflict
from pytest_recall.agents.adapters.presets import PRESETS
from pytest_recall.cases.live_protocol import ProtocolError, decode_escapes, parse_exit_codes, protocol_fields
from pytest_recall.cases.model import SESSION_MODES, CaseError, parse_positive_seconds
from pytest_recall.reporting.transcripts import DEFAULT_TRANSCRIPTS, TRANSCRIPT_MODES
from pytest_recall.scoring.grader import DEFAULT_THRESHOLD
from pytest_recall.sessions.capture import DEFAULT_MAX_OUTPUT_BYTES
from pytest_recall.sessions.case_flow import DEFAULT_GRACE_S, DEFAULT_TIMEOUT_S, PROMPT_MODES
from pytest_recall.sessions.rooms import HOME_MODES, WORKDIR_MODES, HomeCopy, check_env_template

# The first retry's delay; rate limits usually lift within seconds.
DEFAULT_RETRY_DELAY_S = 5.0

NO_COMMAND = (
    "these cases need an agent to run: pass --recall-cmd='your-agent --flags' "
    "(or set recall_cmd in your pytest configuration)"
)


@dataclass(frozen=True, slots=True)
class Option:
    name: str  # the ini key; the flag is --recall-<name with dashes>
    help: str
    default: str | None = None
    kind: str = "string"

    @property
    def flag(self) -> str:
        return flag_of(self.name)


OPTIONS = (
    Option(
        "recall_cmd",
        "Agent command to test, e.g. 'myagent --flag'. Each step runs as this command, shell-split, "
        "plus the step's prompt as one final argument.",
    ),
    Option(
        "recall_timeout",
        f"Seconds one agent session may run before its process group is killed and the case scores 0. "
        f"Given here it holds for every case; otherwise a suite.toml or case.toml 'timeout' applies, "
        f"else {DEFAULT_TIMEOUT_S:g}.",
    ),
    Option(
        "recall_grace",
        f"Seconds between SIGTERM and SIGKILL when a session times out (default {DEFAULT_GRACE_S:g}).",
        str(DEFAULT_GRACE_S),
    ),
    Option(
        "recall_threshold",
        f"Run-level pass mark: the run passes when its mean score reaches this (default {DEFAULT_THRESHOLD}).",
        str(DEFAULT_THRESHOLD),
    ),
    Option("recall_report", "Write the run report as one JSON document to this path at session end."),
    Option(
        "recall_max_output",
        f"Bytes of each stream kept per session (default {DEFAULT_MAX_OUTPUT_BYTES}). Beyond it the head and the "
        "tail are kept, so the final line is still judged, and the record notes the truncation.",
        str(DEFAULT_MAX_OUTPUT_BYTES),
    ),
    Option(
        "recall_concurrency",
        "Cases run at once inside one pytest process (default 1). Agents mostly wait on I/O, so this can far "
        "exceed the core count; it is cheaper than as many xdist workers. Under xdist it applies in each worker: "
        "-n W runs W x N cases at once.",
        "1",
    ),
    Option(
        "recall_home",
        "Where agents' HOME points: 'case' (default) gives each case a fresh HOME and "
        "XDG_CONFIG_HOME/XDG_DATA_HOME/XDG_STATE_HOME/XDG_CACHE_HOME inside its scope, shared by its steps, so "
        "no case can read memory another case kept under ~; 'user' keeps yours, shared by every case (the "
        "run warns, since scores then measure more than one case's memory).",
        "case",
    ),
    Option(
        "recall_home_copy",
        "Files or folders copied into each case's HOME (logins, settings), comma-separated, each SRC or "
        "SRC:DEST: a relative SRC is taken from your HOME, an absolute one as given; DEST is relative to the "
        "case HOME and defaults to SRC's place in your HOME. E.g. "
        "'.claude.json,/etc/agent/models.yaml:.config/agent/models.yaml'.",
    ),
    Option(
        "recall_env",
        "Set an agent's environment variable per case: NAME=VALUE, where VALUE may use {scope}, {home}, "
        "{workdir}, {step} and {case}; -NAME unsets NAME. Repeat the flag, or give one per line in the ini.",
        kind="list",
    ),
    Option(
        "recall_prompt",
        "How a step's prompt reaches the agent: 'argv' (default) as the command's last argument (at most "
        "128 KiB on Linux); 'stdin' on a pipe, then end of file; 'file' in a file named by RECALL_PROMPT_FILE, "
        "readable only by the session and deleted when the step ends.",
        "argv",
    ),
    Option(
        "recall_workdir",
        "Each step's working directory: 'fresh' (default) a new, randomly named one per step; 'case' the same "
        "path for every step of a case, emptied between steps, for agents that key memory by their cwd.",
        "fresh",
    ),
    Option(
        "recall_gate",
        "What pytest's exit status follows: 'cases' (default) fails on any failed case; 'score' exits 0 when the "
        "run score reaches --recall-threshold and 1 when it does not, whatever single cases did.",
        "cases",
    ),
    Option(
        "recall_log",
        "Append each finished case's record to this file as one JSON line, on disk as soon as the case ends, so "
        "a killed run keeps the work it paid for. xdist workers may share it.",
    ),
    Option(
        "recall_resume",
        "Resume from a run log (or a report): skip cases it already scored with the same node id, content and "
        "command, and report their stored records as they are. A missing file resumes nothing.",
    ),
    Option(
        "recall_shard",
        "Run only shard K of N (e.g. 2/4): a deterministic, balanced share of the collected tests, so N jobs "
        "run every case exactly once. Merge their reports with 'pytest-recall merge'. 'auto' reads K and N from "
        "RECALL_SHARD_INDEX/RECALL_SHARD_TOTAL, GitLab's CI_NODE_INDEX/CI_NODE_TOTAL, or a Kubernetes Indexed "
        "Job's JOB_COMPLETION_INDEX (from 0) with RECALL_SHARD_TOTAL.",
    ),
    Option(
        "recall_shard_durations",
        "A previous report or run log whose case durations balance --recall-shard by time (longest first); "
        "without it, cases are dealt by a stable hash of their node id.",
    ),
    Option(
        "recall_epochs",
        "Run every case this many times, each in a fresh memory scope (default 1). The report then gives each "
        "case's mean, pass@k, pass^k and spread, and intervals that account for the repeats.",
        "1",
    ),
    Option(
        "recall_control",
        "Also run, for each case, its last step alone in a fresh scope: the no-memory control. The report gives the "
        "control score and the memory lift over it; control items pass whatever they score.",
        "false",
        kind="bool",
    ),
    Option(
        "recall_scope",
        "Memory scope: 'case' (default) gives every case a fresh RECALL_SCOPE_DIR; 'suite' gives every case of "
        "the run one scope (and, with --recall-home=case, one HOME), made once and removed at the end, and runs "
        "the cases one after another in a fixed, seeded order, so later cases must find theirs among all that "
        "earlier cases stored. Control items still get a fresh scope.",
        "case",
    ),
    Option("recall_html", "Write the run report as one self-contained HTML page to this path at session end."),
    Option(
        "recall_transcripts",
        "Which cases keep their steps' prompt references, stdout and stderr in the report: 'failed' (default) "
        "those that did not score 1.0, 'all' every case (with whole prompts instead of references), 'none' no "
        "case. The run log always keeps everything.",
        DEFAULT_TRANSCRIPTS,
    ),
    Option(
        "recall_sandbox",
        "How agents are confined: 'none' (default) relies on fresh processes and directories; 'bwrap' runs every "
        "session under bubblewrap, where it sees the system read-only, its own directories, and no case files, "
        "reports, logs or other sessions, and where no process outlives it.",
        "none",
    ),
    Option(
        "recall_sandbox_bind",
        "With --recall-sandbox=bwrap: comma-separated paths the agent may read besides the system and this "
        "Python installation, such as the agent's own install or source checkout.",
    ),
    Option(
        "recall_sandbox_net",
        "With --recall-sandbox=bwrap, each session's network: 'private' (default) gives every session a network "
        "namespace of its own, with outbound connections and the host's loopback ports through pasta (Debian's "
        "passt), so sessions cannot reach each other over abstract sockets or loopback; 'host' shares the "
        "harness's network; 'none' gives no network at all.",
        "private",
    ),
    Option(
        "recall_session",
        "Run every case in this session mode, whatever its case.toml or suite.toml says: 'fresh' starts a new "
        "process per step with the prompt in argv; 'continue' sends every step, in turn, to one live process on "
        "its terminal, for agents that run as a REPL. Unset, each case runs in its own mode (default fresh).",
    ),
    Option(
        "recall_ready_pattern",
        "Live sessions: a regular expression (multi-line mode) for the agent's prompt, searched on the rendered "
        "screen lines changed since the turn was sent; the next turn goes once it shows and the screen has "
        "settled, and the answer is what the screen shows before it. Wins over a case's own readiness.",
    ),
    Option(
        "recall_live_preset",
        "Run every case live in one session of a known CLI, driven as its adapter's tests drive it: "
        + "; ".join(f"'{name}': {preset.about}" for name, preset in PRESETS.items())
        + ". It sets the command and the turn protocol; --recall-cmd may only name the preset's own launcher, with "
        "extra arguments for the CLI after it; protocol flags given as well win over the preset's values.",
    ),
    Option(
        "recall_turn_template",
        "Live sessions: what is typed for each turn, {prompt} standing for the step's prompt without its last "
        "newline (default '{prompt}\\n'). Escapes such as \\n, \\r and \\x03 are understood. Example: "
        "'!multi\\n{prompt}\\n!end\\n' for llm chat.",
    ),
    Option(
        "recall_paste",
        "Live sessions: 'typed' (default) types each turn into the terminal; 'bracketed' sends it as one "
        "bracketed paste (ESC[200~ ... ESC[201~) and then Enter, as a terminal delivers pasted text to a TUI.",
    ),
    Option(
        "recall_quit",
        "Live sessions: the keys sent after the last answer to end the session, such as '/exit\\r' (escapes as "
        "in --recall-turn-template). Default: the terminal's end-of-file, Ctrl-D.",
    ),
    Option(
        "recall_answer_pattern",
        "Live sessions: a regular expression (multi-line mode) that picks a TUI's answer out of what a turn "
        "showed: its last match's first group, or, without groups, everything after its last match, dedented. "
        "Default: everything after the echoed turn.",
    ),
    Option(
        "recall_ok_exit_codes",
        "Comma-separated exit statuses that count as a session ending well (default 0), for agents that exit "
        "with another status on a normal quit. Wins over a case's own ok_exit_codes.",
    ),
    Option(
        "recall_preflight",
        "Before any case, run the agent once on 'Reply with the single word READY.' with the run's full settings "
        "(sandbox, HOME, copies, environment); if it exits non-zero, times out or prints nothing, stop the run with "
        "exit status 4 and show its command, status and stderr. No case runs, so none is charged.",
        "false",
        kind="bool",
    ),
    Option(
        "recall_retries",
        "Run a case again from step 1, in a fresh scope and HOME, when its run ended as an agent failure (a step "
        "exited non-zero, died by a signal or timed out, or the agent could not start), up to N more times "
        "(default 0). Rate limits and overload are the usual reason. Each record keeps its 'attempts'.",
        "0",
    ),
    Option(
        "recall_retry_delay",
        f"Seconds before the first retry of a case, doubling for each further one (default "
        f"{DEFAULT_RETRY_DELAY_S:g}; 0 retries at once). Other cases in flight keep running meanwhile.",
        str(DEFAULT_RETRY_DELAY_S),
    ),
    Option(
        "recall_ready_idle",
        "Live sessions: seconds the screen must stay still before the agent counts as ready for the next turn: "
        "with no ready pattern, quiet alone means ready (default 1); with one, the settle after it shows "
        "(default 0.3). Wins over a case's own readiness.",
    ),
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("recall", "pytest-recall: does the agent remember across sessions?")
    for option in OPTIONS:
        if option.kind == "list":
            group.addoption(
                option.flag, dest=option.name, action="append", default=None, metavar="VALUE", help=option.help
            )
            parser.addini(option.name, option.help, type="linelist", default=[])
        elif option.kind == "bool":
            # default None, not False, so that an absent flag falls through to the ini value.
            group.addoption(option.flag, dest=option.name, action="store_true", default=None, help=option.help)
            parser.addini(option.name, option.help, type="bool", default=option.default == "true")
        else:
            group.addoption(option.flag, dest=option.name, default=None, metavar="VALUE", help=option.help)
            parser.addini(option.name, option.help, type="string", default=option.default)


def raw_value(config: pytest.Config, name: str) -> str | None:
    """The flag if given, else the ini value, else None."""
    value = config.getoption(name)
    if value is None:
        ini: Any = config.getini(name)
        value = ini if ini not in ("", None) else None
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class Settings:
    """The options after validation; a bad value is one UsageError line."""

    command: str | None
    argv: tuple[str, ...]
    timeout_s: float | None
    grace_s: float
    threshold: float
    report_path: Path | None
    max_output_bytes: int
    concurrency: int
    epochs: int = 1
    control: bool = False
    html_path: Path | None = None
    home_mode: str = "case"
    home_copy: tuple[HomeCopy, ...] = ()
    env: tuple[tuple[str, str | None], ...] = ()
    prompt_mode: str = "argv"
    workdir_mode: str = "fresh"
    gate: str = "cases"
    log_path: Path | None = None
    resume_path: Path | None = None
    shard: tuple[int, int] | None = None
    shard_durations_path: Path | None = None
    sandbox: str = "none"
    sandbox_binds: tuple[Path, ...] = ()
    sandbox_net: str = "private"
    session: str | None = None
    # The turn-protocol fields given run-wide, by preset, flag or ini (see case_flow.effective_case).
    live: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    live_preset: str | None = None
    ok_exit_codes: tuple[int, ...] | None = None
    scope: str = "case"
    preflight: bool = False
    retries: int = 0
    retry_delay_s: float = DEFAULT_RETRY_DELAY_S
    transcripts: str = DEFAULT_TRANSCRIPTS
    # (as written, absolute) for every relative path in --recall-cmd made absolute.
    resolved_paths: tuple[tuple[str, str], ...] = ()
    # One line per output whose missing folders will be made outside the working tree.
    created_outside: tuple[str, ...] = ()

    def run_mode(self) -> dict[str, Any]:
        """How this run makes its sessions, where that changes what is measured; every record states it."""
        return {
            "sandbox": self.sandbox,
            "sandbox_binds": [str(path) for path in self.sandbox_binds],
            "sandbox_net": self.sandbox_net if self.sandbox != "none" else None,
            "home": self.home_mode,
            "home_copy": [f"{copy.source}:{copy.dest}" for copy in self.home_copy],
            "workdir": self.workdir_mode,
            "prompt": self.prompt_mode,
            "env": [f"-{name}" if value is None else f"{name}={value}" for name, value in self.env],
            "session": self.session,
            "ready_pattern": self.live.get("ready_pattern"),
            "ready_idle_s": self.live.get("ready_idle_s"),
            "live_preset": self.live_preset,
            "turn_protocol": {k: v for k, v in self.live.items() if k not in ("ready_pattern", "ready_idle_s")} or None,
            "ok_exit_codes": None if self.ok_exit_codes is None else list(self.ok_exit_codes),
            "scope": self.scope,
        }

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        __tracebackhide__ = True
        command = raw_value(config, "recall_cmd")
        preset = PRESETS.get((raw_value(config, "recall_live_preset") or "").strip())
        if command is None and preset is not None:
            command = shlex.join(preset.command)
        try:
            argv = tuple(shlex.split(command)) if command else ()
        except ValueError as exc:
            raise pytest.UsageError(f"--recall-cmd cannot be split like a shell command line: {exc}") from None
        if command is not None and not argv:
            raise pytest.UsageError("--recall-cmd is empty: give the command that starts your agent")
        argv, resolved = resolve_command_paths(argv)
        if preset is not None and command is not None and (conflict := preset_conflict(preset, command, argv)):
            raise pytest.UsageError(conflict)
        report = raw_value(config, "recall_report")
        settings = cls(
            command=command,
            argv=argv,
            timeout_s=_seconds(config, "recall_timeout") if raw_value(config, "recall_timeout") else None,
            grace_s=_seconds(config, "recall_grace"),
            threshold=_fraction(config, "recall_threshold"),
            report_path=Path(os.path.abspath(report)) if report else None,
            max_output_bytes=_whole(config, "recall_max_output", minimum=1024),
            concurrency=_whole(config, "recall_concurrency", minimum=1),
            epochs=_whole(config, "recall_epochs", minimum=1),
            control=_switch(config, "recall_control"),
            html_path=_path(config, "recall_html"),
            scope=_choice(config, "recall_scope", SCOPES),
            preflight=_switch(config, "recall_preflight"),
            retries=_whole(config, "recall_retries", minimum=0),
            retry_delay_s=_seconds(config, "recall_retry_delay", zero_ok=True),
            transcripts=_choice(config, "recall_transcripts", TRANSCRIPT_MODES),
            **_scale_out(config),
            **_sandbox(config),
            **_live_sessions(config),
            resolved_paths=resolved,
        )
        here = Path(config.invocation_params.dir)
        notes = tuple(
            note
            for flag, path in (
                ("--recall-report", settings.report_path),
                ("--recall-log", settings.log_path),
                ("--recall-html", settings.html_path),
            )
            if (note := _check_writable(flag, path, here)) is not None
        )
        _check_suite_scope(config, settings)
        return dataclasses.replace(settings, created_outside=notes) if notes else settings


def flag_of(name: str) -> str:
    """The command-line spelling of an ini key: ``recall_cmd`` is ``--recall-cmd``."""
    return "--" + name.replace("_", "-")


def _seconds(config: pytest.Config, name: str, *, zero_ok: bool = False) -> float:
    __tracebackhide__ = True
    try:
        return parse_positive_seconds(raw_value(config, name), flag_of(name), zero_ok=zero_ok)
    except CaseError as exc:
        raise pytest.UsageError(str(exc)) from None


def _fraction(config: pytest.Config, name: str) -> float:
    __tracebackhide__ = True
    value = raw_value(config, name)
    try:
        number = float(value) if value is not None else -1.0
    except ValueError:
        number = -1.0
    if not 0.0 <= number <= 1.0:
        raise pytest.UsageError(f"{flag_of(name)} must be a number from 0 to 1, not {value!r}")
    return number


def _switch(config: pytest.Config, name: str) -> bool:
    """A flag that only switches on; its ini twin says true or false."""
    __tracebackhide__ = True
    if config.getoption(name):
        return True
    try:
        return bool(config.getini(name))
    except (ValueError, pytest.UsageError) as exc:  # pytest 9 raises UsageError, older ones ValueError
        raise pytest.UsageError(f"{name} in your pytest configuration must be true or false: {exc}") from None


def _whole(config: pytest.Config, name: str, *, minimum: int) -> int:
    __tracebackhide__ = True
    value = raw_value(config, name)
    try:
        number = int(value) if value is not None else minimum - 1
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise pytest.UsageError(f"{flag_of(name)} must be a whole number of at least {minimum}, not {value!r}")
    return number


def _choice(config: pytest.Config, name: str, choices: tuple[str, ...]) -> str:
    __tracebackhide__ = True
    value = (raw_value(config, name) or choices[0]).strip()
    if value not in choices:
        raise pytest.UsageError(f"{flag_of(name)} must be one of {', '.join(choices)}, not {value!r}")
    return value


def _path(config: pytest.Config, name: str) -> Path | None:
    value = raw_value(config, name)
    return Path(os.path.abspath(os.path.expanduser(value))) if value else None


def _home_copy(config: pytest.Config, home_mode: str) -> tuple[HomeCopy, ...]:
    """``SRC[:DEST]`` entries; each SRC must exist now, not fail in every case later."""
    __tracebackhide__ = True
    value = raw_value(config, "recall_home_copy")
    entries = [entry.strip() for entry in (value or "").split(",") if entry.strip()]
    if not entries:
        return ()
    if home_mode != "case":
        raise pytest.UsageError("--recall-home-copy needs --recall-home=case: it seeds each case's own HOME")
    real_home = Path(os.environ.get("HOME") or os.path.expanduser("~"))
    copies = []
    for entry in entries:
        source_text, _, dest = entry.partition(":")
        source = Path(os.path.expanduser(source_text))
        source = source if source.is_absolute() else real_home / source
        if not source.exists():
            raise pytest.UsageError(f"--recall-home-copy: {source} does not exist; create it or drop it")
        if not dest:
            if not source.is_relative_to(real_home):
                raise pytest.UsageError(
                    f"--recall-home-copy: {source} is outside your HOME, so say where it goes: {source_text}:DEST, "
                    "with DEST relative to the case HOME"
                )
            dest = source.relative_to(real_home).as_posix()
        dest = dest.strip("/")
        if not dest or os.path.isabs(dest) or ".." in Path(dest).parts:
            raise pytest.UsageError(f"--recall-home-copy: {entry!r}: DEST must be a path inside the case HOME")
        copies.append(HomeCopy(source, dest))
    return tuple(copies)


def _env(config: pytest.Config) -> tuple[tuple[str, str | None], ...]:
    """``--recall-env``: NAME=VALUE templates and -NAME unsets, checked now rather than in every case."""
    __tracebackhide__ = True
    given = config.getoption("recall_env") or config.getini("recall_env") or []
    settings: list[tuple[str, str | None]] = []
    for entry in (str(item).strip() for item in given):
        if not entry:
            continue
        if entry.startswith("-"):
            name, value = entry[1:], None
        else:
            name, sep, template = entry.partition("=")
            if not sep:
                raise pytest.UsageError(f"--recall-env: {entry!r} must be NAME=VALUE, or -NAME to unset NAME")
            value = template
            problem = check_env_template(template)
            if problem is not None:
                raise pytest.UsageError(f"--recall-env: {entry!r}: {problem}")
        if not name or "\0" in name or "=" in name:
            raise pytest.UsageError(f"--recall-env: {entry!r} names no variable")
        settings.append((name, value))
    return tuple(settings)


def _scale_out(config: pytest.Config) -> dict[str, Any]:
    """Options for parallel, resumable and sharded runs."""
    __tracebackhide__ = True
    from pytest_recall.reporting.shard import AUTO, ShardError, parse_shard, shard_from_environment

    home_mode = _choice(config, "recall_home", HOME_MODES)
    shard_text = raw_value(config, "recall_shard")
    # An xdist worker (on another machine, maybe) takes the controller's reading of the environment.
    handed: Any = getattr(config, "workerinput", {}).get(SHARD_INPUT)
    shard: tuple[int, int] | None
    try:
        if shard_text is not None and shard_text.strip() == AUTO:
            shard = (int(handed[0]), int(handed[1])) if handed else shard_from_environment(os.environ)
        else:
            shard = parse_shard(shard_text) if shard_text else None
    except ShardError as exc:
        raise pytest.UsageError(str(exc)) from None
    durations = _path(config, "recall_shard_durations")
    if durations is not None and not durations.is_file():
        raise pytest.UsageError(f"--recall-shard-durations: {durations} is not a file; give a report or run log")
    return {
        "home_mode": home_mode,
        "home_copy": _home_copy(config, home_mode),
        "env": _env(config),
        "prompt_mode": _choice(config, "recall_prompt", PROMPT_MODES),
        "workdir_mode": _choice(config, "recall_workdir", WORKDIR_MODES),
        "gate": _choice(config, "recall_gate", ("cases", "score")),
        "log_path": _path(config, "recall_log"),
        "resume_path": _path(config, "recall_resume"),
        "shard": shard,
        "shard_durations_path": durations,
    }


SCOPES = ("case", "suite")
# The workerinput key that carries the controller's shard to xdist workers.
SHARD_INPUT = "recall_shard"


def _check_suite_scope(config: pytest.Config, settings: Settings) -> None:
    """One memory for the whole run holds only when cases run one at a time, all of them, once."""
    __tracebackhide__ = True
    if settings.scope != "suite":
        return
    workers = config.getoption("numprocesses", None)
    conflicts = (
        (settings.concurrency > 1, f"--recall-concurrency={settings.concurrency}", "cases would run at once"),
        (workers not in (None, 0), "-n (xdist)", "each worker would keep a memory of its own"),
        (settings.epochs > 1, f"--recall-epochs={settings.epochs}", "a repeat would find its own earlier notes"),
        (settings.shard is not None, "--recall-shard", "each shard would hold only part of the memory"),
        (settings.resume_path is not None, "--recall-resume", "skipped cases would leave no notes behind"),
    )
    for clash, flag, why in conflicts:
        if clash:
            raise pytest.UsageError(
                f"--recall-scope=suite cannot be combined with {flag}: {why}; run the suite in one process, "
                "case after case, or use --recall-scope=case"
            )


SANDBOXES = ("none", "bwrap")
NETWORKS = ("private", "host", "none")


def _sandbox(config: pytest.Config) -> dict[str, Any]:
    """``--recall-sandbox`` and its binds; whether bwrap works here is checked by the plugin."""
    __tracebackhide__ = True
    sandbox = _choice(config, "recall_sandbox", SANDBOXES)
    value = raw_value(config, "recall_sandbox_bind") or ""
    binds = tuple(Path(os.path.abspath(os.path.expanduser(p.strip()))) for p in value.split(",") if p.strip())
    for bind in binds:
        if sandbox != "none" and not bind.exists():
            raise pytest.UsageError(f"--recall-sandbox-bind: {bind} does not exist; fix the path or drop it")
    return {"sandbox": sandbox, "sandbox_binds": binds, "sandbox_net": _choice(config, "recall_sandbox_net", NETWORKS)}


def resolve_command_paths(argv: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Make relative paths in the command absolute: sessions run in directories of their own.

    The program is resolved when it holds a separator (``agents/x.py``); a
    later argument, or the value of ``--opt=value``, when it names a file that
    exists here (``python my_agent.py``) or a path with a separator that does.
    Bare words that name nothing are left alone: they are flags and values.
    """
    resolved: list[tuple[str, str]] = []

    def absolute(word: str, first: bool) -> str:
        if not word or os.path.isabs(word) or word.startswith("~"):
            return word
        names_a_path = os.sep in word and (first or os.path.exists(word))
        if not (names_a_path or (not first and os.path.isfile(word))):
            return word
        if not first:
            # A program named by a path is plainly a path; a later argument is the trap worth naming.
            resolved.append((word, os.path.abspath(word)))
        return os.path.abspath(word)

    words = []
    for index, word in enumerate(argv):
        if index > 0 and word.startswith("--") and "=" in word:
            name, _, value = word.partition("=")
            words.append(f"{name}={absolute(value, False)}")
        elif index > 0 and word.startswith("-"):
            words.append(word)
        else:
            words.append(absolute(word, index == 0))
    return tuple(words), tuple(resolved)


def _check_writable(flag: str, path: Path | None, here: Path) -> str | None:
    """Fail before any agent runs (and costs money), not when the report is due.

    Returns a line to show when the writer will create folders outside the working tree.
    """
    __tracebackhide__ = True
    if path is None:
        return None
    if path.is_dir():
        raise pytest.UsageError(f"{flag}: {path} is a directory; give a file path")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the writer creates missing folders; the nearest existing one must allow it
    if folder != path.parent and not path.is_relative_to(here):
        # Creating folders is fine where the run lives; elsewhere the run says so, and never starts at the root.
        if folder == folder.parent:
            raise pytest.UsageError(
                f"{flag}: {path.parent} does not exist, and creating it would start a folder at the filesystem "
                f"root; create it first or choose a path under {here}"
            )
        return f"{flag}: creating {path.parent} (outside {here}) for {path.name}"
    if not folder.is_dir():
        raise pytest.UsageError(f"{flag}: cannot create {path}: {folder} is not a directory; choose another path")
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise pytest.UsageError(f"{flag}: cannot write {path}: permission denied; choose a writable path")
    return None


def _live_sessions(config: pytest.Config) -> dict[str, Any]:
    """The run-wide session mode and turn protocol: a preset's values, then the flags over them."""
    __tracebackhide__ = True
    session = raw_value(config, "recall_session")
    if session is not None and session.strip() not in SESSION_MODES:
        raise pytest.UsageError(f"--recall-session must be one of {', '.join(SESSION_MODES)}, not {session!r}")
    preset_name = raw_value(config, "recall_live_preset")
    preset = None
    if preset_name is not None:
        preset = PRESETS.get(preset_name.strip())
        if preset is None:
            raise pytest.UsageError(f"--recall-live-preset must be one of {', '.join(PRESETS)}, not {preset_name!r}")
    flags: dict[str, Any] = {}
    try:
        for key in ("turn_template", "paste", "quit", "ready_pattern", "answer_pattern", "ready_idle"):
            value = raw_value(config, f"recall_{key}")
            if value is None:
                continue
            flag = f"{flag_of('recall_' + key)}: {key}"
            if key == "ready_idle":
                flags["ready_idle_s"] = parse_positive_seconds(value, flag)
            else:
                plain = key in ("ready_pattern", "answer_pattern")  # a regex keeps its backslashes
                flags.update(
                    protocol_fields({key: value if plain else decode_escapes(value)}, flag_of("recall_" + key))
                )
        codes = raw_value(config, "recall_ok_exit_codes")
        ok_exit_codes = parse_exit_codes(codes, "--recall-ok-exit-codes") if codes is not None else None
    except (CaseError, ProtocolError) as exc:
        raise pytest.UsageError(str(exc)) from None
    live: dict[str, Any] = {}
    if preset is not None:
        live = {
            field.name: getattr(preset.protocol, field.name)
            for field in dataclasses.fields(preset.protocol)
            if getattr(preset.protocol, field.name) != field.default
        }
        if ok_exit_codes is None and preset.ok_exit_codes != (0,):
            ok_exit_codes = preset.ok_exit_codes
        if session is None:
            session = "continue"
    if "ready_pattern" in flags or "ready_idle_s" in flags:
        live.pop("ready_pattern", None)  # readiness is one rule: the flags' replaces the preset's
        live.pop("ready_idle_s", None)
    live.update(flags)
    return {
        "session": None if session is None else session.strip(),
        "live": live,
        "live_preset": None if preset is None else preset.name,
        "ok_exit_codes": ok_exit_codes,
    }


# A later argument ending so is a script the agent runs: one that is not there fails every case.
SCRIPT_SUFFIXES = (".py", ".sh", ".js", ".mjs", ".ts", ".rb", ".pl")


def check_command_starts(argv: tuple[str, ...]) -> None:
    """One clear line up front beats the same start error in every case."""
    __tracebackhide__ = True
    program = argv[0]
    found = shutil.which(program) if os.sep not in program else (program if os.path.exists(program) else None)
    if found is None:
        hint = "; install the agent or give its full path"
        beside = Path(sys.executable).parent
        if (beside / program).is_file():
            # pytest-recall's own scripts sit beside the interpreter, in an environment not activated here.
            hint = f"; it is in {beside}, which is not on PATH: activate that environment (. {beside}/activate)"
        if os.path.isfile(program):
            hint = f"; to run the file here, write ./{program}"
        raise pytest.UsageError(f"--recall-cmd: {program!r} was not found on PATH{hint}")
    for word in argv[1:]:
        if not os.path.isabs(word) and word.endswith(SCRIPT_SUFFIXES) and not word.startswith("-"):
            raise pytest.UsageError(
                f"--recall-cmd: {word!r} does not exist in {os.getcwd()}; sessions run in directories of their own, "
                "so name the script by a path that exists from here"
            )
    if not os.access(found, os.X_OK) or Path(found).is_dir():
        raise pytest.UsageError(f"--recall-cmd: {found!r} is not an executable file; check its permissions")
