"""The ``--recall-*`` rows of the topics that say how cases run: the agent and the pass mark, isolation, the
sandbox and the live protocol. Each row's help is the flag's and its ini twin's (see
:mod:`~pytest_recall.plugin.options`, which registers them, and docs/options.md)."""

from __future__ import annotations

from pytest_recall.agents import PRESETS
from pytest_recall.cases import PasteMode, SessionMode
from pytest_recall.plugin.config import StopMode
from pytest_recall.plugin.option_model import Option
from pytest_recall.reporting import Gate
from pytest_recall.scoring import DEFAULT_THRESHOLD
from pytest_recall.sessions import (
    DEFAULT_GRACE_S,
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_S,
    HomeMode,
    Network,
    PromptMode,
    SandboxMode,
    ScopeMode,
    WorkdirMode,
)

RUN_OPTIONS = (
    Option(
        "recall_cmd",
        "Agent command to test, e.g. 'myagent --flag'. Each step runs as this command, shell-split, "
        "plus the step's prompt as one final argument.",
        metavar="COMMAND",
    ),
    Option(
        "recall_timeout",
        f"Seconds one agent session may run before its process group is killed and the case scores 0. "
        f"Given here it holds for every case; otherwise a suite.toml or case.toml 'timeout' applies, "
        f"else {DEFAULT_TIMEOUT_S:g}.",
        metavar="SECONDS",
    ),
    Option(
        "recall_grace",
        f"Seconds between SIGTERM and SIGKILL when a session times out (default {DEFAULT_GRACE_S:g}).",
        str(DEFAULT_GRACE_S),
        metavar="SECONDS",
    ),
    Option.mode(
        "recall_prompt",
        "How a step's prompt reaches the agent: 'argv' (default) as the command's last argument (at most "
        "128 KiB on Linux); 'stdin' on a pipe, then end of file; 'file' in a file named by RECALL_PROMPT_FILE, "
        "readable only by the session and deleted when the step ends.",
        choices=PromptMode,
    ),
    Option(
        "recall_ok_exit_codes",
        "Comma-separated exit statuses that count as a session ending well (default 0), for agents that exit "
        "with another status on a normal quit. Wins over a case's own ok_exit_codes.",
        metavar="CODES",
    ),
    Option(
        "recall_max_output",
        f"Bytes of each stream kept per session (default {DEFAULT_MAX_OUTPUT_BYTES}). Beyond it the head and the "
        "tail are kept, so the final line is still judged, and the record notes the truncation.",
        str(DEFAULT_MAX_OUTPUT_BYTES),
        metavar="BYTES",
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
        "recall_threshold",
        f"Run-level pass mark: the run passes when its mean score reaches this (default {DEFAULT_THRESHOLD}).",
        str(DEFAULT_THRESHOLD),
        metavar="SCORE",
    ),
    Option.mode(
        "recall_gate",
        "What pytest's exit status follows: 'cases' (default) fails on any failed case; 'score' exits 0 when the "
        "run score reaches --recall-threshold and 1 when it does not, whatever single cases did.",
        choices=Gate,
    ),
    Option.mode(
        "recall_stop",
        "'decided' runs cases in a seeded random order and stops starting them once an anytime-valid test "
        "(valid however often it is checked) decides, wrong at most 1 time in 20, whether the run score "
        "reaches --recall-threshold; cases in flight finish and count, the rest are skipped as not run. "
        "Needs --recall-gate=score. "
        "Default 'never': every case runs.",
        choices=StopMode,
    ),
    Option(
        "recall_epochs",
        "Run every case this many times, each in a fresh memory scope (default 1). The report then gives each "
        "case's mean, pass@k, pass^k and spread, and intervals that account for the repeats.",
        "1",
        metavar="N",
    ),
    Option(
        "recall_epochs_from",
        "A report of an earlier run with epochs: a case it ran at least twice with one score every time runs "
        "once here, every other case --recall-epochs times. Chosen from the earlier run, never from this one's "
        "outcomes, so the score stays unbiased (docs/report.md).",
        metavar="PATH",
    ),
    Option(
        "recall_ci_width",
        "With --recall-epochs-from: give each case as many runs (--recall-epochs the cap) as the earlier report "
        "says bring the score's interval to this half-width, like 0.05; a width the cap cannot reach is "
        "refused before anything runs (docs/report.md).",
        metavar="W",
    ),
    Option(
        "recall_control",
        "Also run, for each case, its last step alone in a fresh scope: the no-memory control. The report gives the "
        "control score and the memory lift over it; control items pass whatever they score.",
        "false",
        kind="bool",
    ),
)

ISOLATION_OPTIONS = (
    Option.mode(
        "recall_home",
        "Where agents' HOME points: 'case' (default) gives each case a fresh HOME and "
        "XDG_CONFIG_HOME/XDG_DATA_HOME/XDG_STATE_HOME/XDG_CACHE_HOME inside its scope, shared by its steps, so "
        "no case can read memory another case kept under ~; 'user' keeps yours, shared by every case (the "
        "run warns, since scores then measure more than one case's memory).",
        choices=HomeMode,
    ),
    Option(
        "recall_home_copy",
        "Files or folders copied into each case's HOME (logins, settings), comma-separated, each SRC or "
        "SRC:DEST: a relative SRC is taken from your HOME, an absolute one as given; DEST is relative to the "
        "case HOME and defaults to SRC's place in your HOME. E.g. "
        "'.claude.json,/etc/agent/models.yaml:.config/agent/models.yaml'.",
        metavar="SRC[:DEST],...",
    ),
    Option(
        "recall_env",
        "Set an agent's environment variable per case: NAME=VALUE, where VALUE may use {scope}, {home}, "
        "{workdir}, {step} and {case}; -NAME unsets NAME. Repeat the flag, or give one per line in the ini.",
        kind="list",
        metavar="NAME=VALUE",
    ),
    Option(
        "recall_mcp",
        "An MCP server configuration for every case's agent: a JSON file in the common mcpServers shape, whose "
        "strings may use {scope}, {home}, {workdir}, {step} and {case}, filled in per step so each case's server "
        "keeps its store in that case's scope. The agent finds it, filled in, in RECALL_MCP_CONFIG; the "
        "recall-claude and recall-codex adapters pass it to their CLI. Wins over a case.toml or suite.toml 'mcp'.",
        metavar="PATH",
    ),
    Option.mode(
        "recall_workdir",
        "Each step's working directory: 'fresh' (default) a new, randomly named one per step; 'case' the same "
        "path for every step of a case, emptied between steps, for agents that key memory by their cwd.",
        choices=WorkdirMode,
    ),
    Option.mode(
        "recall_scope",
        "Memory scope: 'case' (default) gives every case a fresh RECALL_SCOPE_DIR; 'suite' gives every case of "
        "the run one scope (and, with --recall-home=case, one HOME), made once and removed at the end, and runs "
        "the cases one after another in a fixed, seeded order, so later cases must find theirs among all that "
        "earlier cases stored. Control items still get a fresh scope.",
        choices=ScopeMode,
    ),
)

SANDBOX_OPTIONS = (
    Option.mode(
        "recall_sandbox",
        "How agents are confined: 'none' (default) relies on fresh processes and directories; 'bwrap' runs every "
        "session under bubblewrap, where it sees the system read-only, its own directories, and no case files, "
        "reports, logs or other sessions, and where no process outlives it.",
        choices=SandboxMode,
    ),
    Option(
        "recall_sandbox_bind",
        "With --recall-sandbox=bwrap: comma-separated paths the agent may read besides the system and this "
        "Python installation, such as the agent's own install or source checkout.",
        metavar="PATH,...",
    ),
    Option.mode(
        "recall_sandbox_net",
        "With --recall-sandbox=bwrap, each session's network: 'private' (default) gives every session a network "
        "namespace of its own, with outbound connections and the host's loopback ports through pasta (Debian's "
        "passt), so sessions cannot reach each other over abstract sockets or loopback; 'host' shares the "
        "harness's network; 'none' gives no network at all.",
        choices=Network,
    ),
)

LIVE_OPTIONS = (
    Option.mode(
        "recall_session",
        "Run every case in this session mode, whatever its case.toml or suite.toml says: 'fresh' starts a new "
        "process per step with the prompt in argv; 'continue' sends every step, in turn, to one live process on "
        "its terminal, for agents that run as a REPL. Unset, each case runs in its own mode (default fresh).",
        choices=SessionMode,
        optional=True,
    ),
    Option(
        "recall_live_preset",
        "Run every case live in one session of a known CLI, driven as its adapter's tests drive it: "
        + "; ".join(f"'{name}': {preset.about}" for name, preset in PRESETS.items())
        + ". It sets the command and the turn protocol; --recall-cmd may only name the preset's own launcher, with "
        "extra arguments for the CLI after it; protocol flags given as well win over the preset's values.",
        choices=tuple(PRESETS),
    ),
    Option(
        "recall_turn_template",
        "Live sessions: what is typed for each turn, {prompt} standing for the step's prompt without its last "
        "newline (default '{prompt}\\n'). Escapes such as \\n, \\r and \\x03 are understood. Example: "
        "'!multi\\n{prompt}\\n!end\\n' for llm chat.",
        metavar="TEMPLATE",
    ),
    Option.mode(
        "recall_paste",
        "Live sessions: 'typed' (default) types each turn into the terminal; 'bracketed' sends it as one "
        "bracketed paste (ESC[200~ ... ESC[201~) and then Enter, as a terminal delivers pasted text to a TUI.",
        choices=PasteMode,
        optional=True,
    ),
    Option(
        "recall_quit",
        "Live sessions: the keys sent after the last answer to end the session, such as '/exit\\r' (escapes as "
        "in --recall-turn-template). Default: the terminal's end-of-file, Ctrl-D.",
        metavar="KEYS",
    ),
    Option(
        "recall_ready_pattern",
        "Live sessions: a regular expression (multi-line mode) for the agent's prompt, searched on the rendered "
        "screen lines changed since the turn was sent; the next turn goes once it shows and the screen has "
        "settled, and the answer is what the screen shows before it. Wins over a case's own readiness.",
        metavar="REGEX",
    ),
    Option(
        "recall_ready_idle",
        "Live sessions: seconds the screen must stay still before the agent counts as ready for the next turn: "
        "with no ready pattern, quiet alone means ready (default 1); with one, the settle after it shows "
        "(default 0.3). Wins over a case's own readiness.",
        metavar="SECONDS",
    ),
    Option(
        "recall_answer_pattern",
        "Live sessions: a regular expression (multi-line mode) that picks a TUI's answer out of what a turn "
        "showed: its last match's first group, or, without groups, everything after its last match, dedented. "
        "Default: everything after the echoed turn.",
        metavar="REGEX",
    ),
)
