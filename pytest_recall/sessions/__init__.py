"""Running agent sessions: spawning on a pty, the event loop, live turns, reaping, the sandbox. No pytest here.

The names below are the package's public API: what the pytest glue (``pytest_recall.plugin``)
uses, imported from here and not from the modules.
"""

from __future__ import annotations

from pytest_recall.sessions.agent_tree import remove_agent_tree
from pytest_recall.sessions.capture import DEFAULT_MAX_OUTPUT_BYTES
from pytest_recall.sessions.case_flow import (
    agent_environment,
    argv_prompt_problem,
    case_flow,
    effective_case,
    open_shared_scope,
)
from pytest_recall.sessions.case_groups import GroupIngests, grouped_case_flow
from pytest_recall.sessions.cgroup import stop_quickener, tracking_line
from pytest_recall.sessions.judge_command import (
    DEFAULT_JUDGE_TIMEOUT_S,
    Judge,
    JudgeCall,
    parse_judges,
    run_judge_command,
)
from pytest_recall.sessions.llm_judging import LlmJudgeSettings, LlmJudging, judged_flow
from pytest_recall.sessions.network import Network, check_pasta
from pytest_recall.sessions.pool import CasePool, Flow, Pause
from pytest_recall.sessions.rate_limits import (
    CASE_PAUSE_TIMEOUTS,
    DEFAULT_RATE_LIMIT_ATTEMPTS,
    RUN_PAUSE_BUDGET_S,
    HostPause,
    rate_limit_wait,
)
from pytest_recall.sessions.rooms import (
    HomeCopy,
    HomeMode,
    Isolation,
    ScopeMode,
    SessionRooms,
    WorkdirMode,
    check_env_template,
    remove_tree,
)
from pytest_recall.sessions.run_folders import made_folder, release_run, run_id
from pytest_recall.sessions.sandbox import (
    SandboxMode,
    SandboxSettings,
    SandboxSpec,
    absolute_path,
    check_bwrap,
    unique,
    wrap_argv,
)
from pytest_recall.sessions.settings import (
    DEFAULT_GRACE_S,
    DEFAULT_TIMEOUT_S,
    AgentCommand,
    LiveSettings,
    PromptMode,
    SessionLimits,
    SessionSettings,
    Wrapper,
)
from pytest_recall.sessions.shared_verdicts import SharedVerdicts
from pytest_recall.sessions.signed_state import RecallStateWarning, SignedState, new_secret
from pytest_recall.sessions.spawn import AgentStartError
from pytest_recall.sessions.task_scripts import TaskScriptError, run_task_judge, run_task_script
from pytest_recall.sessions.workspace import WorkspaceKeeper, uses_workspace

__all__ = [
    "CASE_PAUSE_TIMEOUTS",
    "DEFAULT_GRACE_S",
    "DEFAULT_JUDGE_TIMEOUT_S",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_RATE_LIMIT_ATTEMPTS",
    "DEFAULT_TIMEOUT_S",
    "RUN_PAUSE_BUDGET_S",
    "AgentCommand",
    "AgentStartError",
    "CasePool",
    "Flow",
    "GroupIngests",
    "HomeCopy",
    "HomeMode",
    "HostPause",
    "Isolation",
    "Judge",
    "JudgeCall",
    "LiveSettings",
    "LlmJudgeSettings",
    "LlmJudging",
    "Network",
    "Pause",
    "PromptMode",
    "RecallStateWarning",
    "SandboxMode",
    "SandboxSettings",
    "SandboxSpec",
    "ScopeMode",
    "SessionLimits",
    "SessionRooms",
    "SessionSettings",
    "SharedVerdicts",
    "SignedState",
    "TaskScriptError",
    "WorkdirMode",
    "WorkspaceKeeper",
    "Wrapper",
    "absolute_path",
    "agent_environment",
    "argv_prompt_problem",
    "case_flow",
    "check_bwrap",
    "check_env_template",
    "check_pasta",
    "effective_case",
    "grouped_case_flow",
    "judged_flow",
    "made_folder",
    "new_secret",
    "open_shared_scope",
    "parse_judges",
    "rate_limit_wait",
    "release_run",
    "remove_agent_tree",
    "remove_tree",
    "run_id",
    "run_judge_command",
    "run_task_judge",
    "run_task_script",
    "stop_quickener",
    "tracking_line",
    "unique",
    "uses_workspace",
    "wrap_argv",
]
