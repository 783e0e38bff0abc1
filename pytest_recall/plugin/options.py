"""The ``--recall-*`` flags: one table, each flag with its ini twin and one help text, and their raw values.

Each option is declared once here, in the table of its topic (run,
isolation, sandbox, live, judging, reports, scale-out), and
:func:`add_options` registers the flag, in its topic's group of ``pytest
--help``, and the ini key from that one row. A mode's choices and default
come from the ``Literal`` type defined beside the code that uses it, and
name its value in the help (``--recall-gate={cases,score}``). Reading a
value into the run configuration is :mod:`pytest_recall.plugin.configure`'s
job; a flag given on the command line wins over the ini value.

Adding a flag: a row in its topic's table here and in that topic's section
of docs/options.md, a field in the group of
:mod:`pytest_recall.plugin.config` (or of the layer module) that uses it,
and the line that reads it in that group's reader in ``configure``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

import pytest

from pytest_recall.agents.adapters.presets import PRESETS
from pytest_recall.cases.live_protocol import PasteMode
from pytest_recall.cases.model import SessionMode
from pytest_recall.plugin.config import DEFAULT_RETRY_DELAY_S, StopMode
from pytest_recall.reporting import Gate, TranscriptMode
from pytest_recall.scoring import DEFAULT_THRESHOLD, AnswerJudgeName, FreeFormJudge
from pytest_recall.sessions import (
    DEFAULT_GRACE_S,
    DEFAULT_JUDGE_TIMEOUT_S,
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_RATE_LIMIT_ATTEMPTS,
    DEFAULT_TIMEOUT_S,
    HomeMode,
    Network,
    PromptMode,
    SandboxMode,
    ScopeMode,
    WorkdirMode,
)

NO_COMMAND = (
    "these cases need an agent to run: pass --recall-cmd='your-agent --flags' "
    "(or set recall_cmd in your pytest configuration)"
)
FREE_NEEDS_JUDGE = (
    "case {case} has answer_kind 'free', which only a judge command can score: pass "
    "--recall-judge-cmd='recall-judge -m MODEL' (or set recall_judge_cmd in your pytest configuration)"
)
# How many cases a one-line error names before it counts the rest.
NAMED_CASES = 3


def judge_only_refusal(cases: list[tuple[str, str]]) -> str:
    """Why a run without a judge command cannot start when it holds imported questions only a judge can score
    (``cases``: each one's name and what makes it judge-only), and the two ways on: a judge, or leaving them out."""
    names = ", ".join(name for name, _ in cases[:NAMED_CASES])
    more = f" and {len(cases) - NAMED_CASES} more" if len(cases) > NAMED_CASES else ""
    labels = sorted({label for _, label in cases})
    deselect = " and ".join(f"not {label}" for label in labels)
    return (
        f"{len(cases)} imported question(s) only a judge command can score ({names}{more}; {', '.join(labels)}): "
        f"pass --recall-judge-cmd='recall-judge -m MODEL', or leave them out with -k '{deselect}' "
        "(or import again naming only the other abilities or types)"
    )


OptionKind = Literal["string", "list", "bool"]


@dataclass(frozen=True, slots=True)
class Option:
    """One row of the table: the ini key (the flag is ``--recall-<name with dashes>``), its help, its default."""

    name: str
    help: str
    default: str | None = None
    kind: OptionKind = "string"
    # The values a mode may take; empty for free text.
    choices: tuple[str, ...] = ()
    # What the value is (PATH, N, SECONDS, ...); a mode's is its choices.
    metavar: str = "VALUE"

    @property
    def flag(self) -> str:
        return flag_of(self.name)

    @property
    def shown_metavar(self) -> str:
        """How ``pytest --help`` names the value: a mode by its choices, so they need no reading of the prose."""
        return "{" + ",".join(self.choices) + "}" if self.choices else self.metavar

    @classmethod
    def mode(cls, name: str, help: str, *, choices: object, optional: bool = False) -> Option:
        """A mode: its choices, and its default (the first of them), from the ``Literal`` type its code uses.

        ``optional`` modes default to unset, leaving each case its own setting.
        """
        names = tuple(str(choice) for choice in get_args(choices))
        return cls(name, help, None if optional else names[0], choices=names)


@dataclass(frozen=True, slots=True)
class Topic:
    """One group of flags in ``pytest --help``, so a reader finds the judge flags together, the live ones together."""

    name: str
    title: str
    options: tuple[Option, ...]


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

JUDGING_OPTIONS = (
    Option.mode(
        "recall_answer_judge",
        "How each case's last answer is judged: 'answer' (default) the built-in judge of its answer_kind (or a "
        "pytest_recall_judge hook); 'contains' a retrieval judge, 1 when the expected answer appears anywhere in "
        "the output, for agents that return what a memory found rather than an answer (recall-mcp). Its reason "
        "gives the bytes returned, since returning everything finds everything. 'evidence' is the same for the "
        "case's evidence (an import's evidence turns, else its answer): the score is then a memory's evidence "
        "recall, per category.",
        choices=AnswerJudgeName,
    ),
    Option(
        "recall_judge_cmd",
        "An LLM judge: a command run once per judged case, outside the agent's sandbox, given one JSON object on stdin "
        "(question, gold, answer, kind, case_id) and printing yes/no or a JSON object with a score and a reason, "
        "e.g. 'recall-judge -m gpt-4o-mini'. It judges the free-form kinds (longmemeval, locomo, free); its "
        "verdict, cost and errors go in each record's llm_judge, apart from the agent's. Retried as agents are "
        "(--recall-retries); the same question, gold and answer is judged once per run and judge. Give it more "
        "than once, each as NAME=CMD, for several judges of the same answers (ini: one judge per line): the "
        "first given scores unless --recall-judge-score names another; the report's judges block sets them "
        "side by side.",
        metavar="[NAME=]COMMAND",
        kind="list",
    ),
    Option(
        "recall_judge_score",
        "With several --recall-judge-cmd judges: the NAME of the one whose verdict is the score (default: the "
        "first given); the others' verdicts are kept beside it in each record's llm_judges.",
        metavar="NAME",
    ),
    Option(
        "recall_judge_both",
        "With --recall-judge-cmd: also put every kind that has a deterministic judge and a text answer (money, "
        "voucher, abstain, ...) to the judge command, so the report gives the two judges' agreement rate and "
        "Cohen's kappa, per kind, and lists the cases where they disagree. The deterministic score stays the score.",
        "false",
        kind="bool",
    ),
    Option.mode(
        "recall_free_form_judge",
        "Whose verdict is the score of a free-form case (longmemeval, locomo): 'deterministic' (default) the "
        "built-in judge's, with the judge command's recorded beside it; 'llm' the --recall-judge-cmd verdict, as "
        "LongMemEval's official metric does, the built-in score kept beside it. A 'free' case has no built-in "
        "judge: the judge command always scores it, and a run with one needs --recall-judge-cmd.",
        choices=FreeFormJudge,
    ),
    Option(
        "recall_judge_samples",
        "Ask each judge command this many times per answer (default 1): its verdict is the majority of its samples "
        "(a tie fails), each sample cached apart, and the judges table gives each judge's flip rate, the share of "
        "answers its samples disagree on.",
        "1",
        metavar="K",
    ),
    Option(
        "recall_judge_timeout",
        f"Seconds one call of the judge command may take before it is killed and counted a judge error "
        f"(default {DEFAULT_JUDGE_TIMEOUT_S:g}).",
        str(DEFAULT_JUDGE_TIMEOUT_S),
        metavar="SECONDS",
    ),
)

REPORTS_OPTIONS = (
    Option(
        "recall_report",
        "Write the run report as one JSON document to this path at session end.",
        metavar="PATH",
    ),
    Option(
        "recall_html",
        "Write the run report as one self-contained HTML page to this path at session end.",
        metavar="PATH",
    ),
    Option.mode(
        "recall_transcripts",
        "Which cases keep their steps' prompt references, stdout and stderr in the report: 'failed' (default) "
        "those that did not score 1.0, 'all' every case (with whole prompts instead of references), 'none' no "
        "case. The run log always keeps everything.",
        choices=TranscriptMode,
    ),
    Option(
        "recall_log",
        "Append each finished case's record to this file as one JSON line, on disk as soon as the case ends, so "
        "a killed run keeps the work it paid for. xdist workers may share it.",
        metavar="PATH",
    ),
)

SCALE_OUT_OPTIONS = (
    Option(
        "recall_concurrency",
        "Cases run at once inside one pytest process (default 1). Agents mostly wait on I/O, so this can far "
        "exceed the core count; it is cheaper than as many xdist workers. Under xdist it applies in each worker: "
        "-n W runs W x N cases at once.",
        "1",
        metavar="N",
    ),
    Option(
        "recall_shard",
        "Run only shard K of N (e.g. 2/4): a deterministic, balanced share of the collected tests, so N jobs "
        "run every case exactly once. Merge their reports with 'pytest-recall merge'. 'auto' reads K and N from "
        "RECALL_SHARD_INDEX/RECALL_SHARD_TOTAL, GitLab's CI_NODE_INDEX/CI_NODE_TOTAL, or a Kubernetes Indexed "
        "Job's JOB_COMPLETION_INDEX (from 0) with RECALL_SHARD_TOTAL.",
        metavar="K/N|auto",
    ),
    Option(
        "recall_shard_durations",
        "A previous report or run log whose case durations balance --recall-shard by time (longest first); "
        "without it, cases are dealt by a stable hash of their node id.",
        metavar="PATH",
    ),
    Option(
        "recall_retries",
        "Run a case again from step 1, in a fresh scope and HOME, when its run ended as an agent failure (a step "
        "exited non-zero, died by a signal or timed out, or the agent could not start), up to N more times "
        "(default 0). Rate limits and overload are the usual reason. Each record keeps its 'attempts'.",
        "0",
        metavar="N",
    ),
    Option(
        "recall_retry_delay",
        f"Seconds before the first retry of a case, doubling for each further one (default "
        f"{DEFAULT_RETRY_DELAY_S:g}; 0 retries at once). Other cases in flight keep running meanwhile.",
        str(DEFAULT_RETRY_DELAY_S),
        metavar="SECONDS",
    ),
    Option(
        "recall_rate_limit_attempts",
        "How many times a case runs while the model refuses it for a rate limit (the run pausing new sessions "
        f"between runs; default {DEFAULT_RATE_LIMIT_ATTEMPTS}). A case still refused then ends as 'rate_limited': "
        "scored 0, and named apart from forgetting.",
        str(DEFAULT_RATE_LIMIT_ATTEMPTS),
        metavar="N",
    ),
    Option(
        "recall_max_cost",
        "Stop starting cases once the spend the agent reported (every attempt's, retries included) reaches this "
        "many US dollars; cases in flight finish, the rest are skipped and named in the summary, and "
        "--recall-resume continues later. Under xdist each worker counts its own spend. Default: no limit.",
        metavar="USD",
    ),
    Option(
        "recall_estimate_from",
        "With --collect-only: an earlier report whose median cost and duration per session give the expected "
        "cost and time of the sessions this run would start.",
        metavar="PATH",
    ),
    Option(
        "recall_resume",
        "Resume from a run log (or a report): skip cases it already scored with the same suite, case id, "
        "content and command, and report their stored records as they are. A missing file resumes nothing.",
        metavar="PATH",
    ),
)

TOPICS = (
    Topic("run", "the agent, its sessions and the pass mark", RUN_OPTIONS),
    Topic("isolation", "what each case's sessions share and see", ISOLATION_OPTIONS),
    Topic("sandbox", "confining the agent", SANDBOX_OPTIONS),
    Topic("live", "one live session per case, driven on a terminal", LIVE_OPTIONS),
    Topic("judging", "how answers are judged", JUDGING_OPTIONS),
    Topic("reports", "what the run writes", REPORTS_OPTIONS),
    Topic("scale-out", "many cases, shards, retries and budgets", SCALE_OUT_OPTIONS),
)
OPTIONS = tuple(option for topic in TOPICS for option in topic.options)


OPTION_BY_NAME = {option.name: option for option in OPTIONS}


def add_options(parser: pytest.Parser) -> None:
    """Each topic's flags as a group of their own in ``pytest --help``, in the table's order, with their ini twins."""
    for topic in TOPICS:
        group = parser.getgroup(f"recall-{topic.name}", f"pytest-recall, {topic.title}")
        for option in topic.options:
            _add_option(parser, group, option)


def _add_option(parser: pytest.Parser, group: pytest.OptionGroup, option: Option) -> None:
    if option.kind == "list":
        group.addoption(
            option.flag, dest=option.name, action="append", default=None, metavar=option.shown_metavar, help=option.help
        )
        parser.addini(option.name, option.help, type="linelist", default=[])
    elif option.kind == "bool":
        # default None, not False, so that an absent flag falls through to the ini value.
        group.addoption(option.flag, dest=option.name, action="store_true", default=None, help=option.help)
        parser.addini(option.name, option.help, type="bool", default=option.default == "true")
    else:
        group.addoption(option.flag, dest=option.name, default=None, metavar=option.shown_metavar, help=option.help)
        parser.addini(option.name, option.help, type="string", default=option.default)


def raw_value(config: pytest.Config, name: str) -> str | None:
    """The flag if given, else the ini value, else None."""
    value = config.getoption(name)
    if value is None:
        ini: Any = config.getini(name)
        value = ini if ini not in ("", None) else None
    return None if value is None else str(value)


def flag_of(name: str) -> str:
    """The command-line spelling of an ini key: ``recall_cmd`` is ``--recall-cmd``."""
    return "--" + name.replace("_", "-")
