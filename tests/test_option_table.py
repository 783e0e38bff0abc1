"""The ``--recall-*`` option table: every flag has an ini twin and help, and a mode's choices come from its Literal."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from pytest_recall.cases.live_protocol import PasteMode
from pytest_recall.cases.model import SessionMode
from pytest_recall.plugin.config import RunConfig, StopMode
from pytest_recall.plugin.options import OPTION_BY_NAME, OPTIONS, TOPICS
from pytest_recall.reporting.merge import Gate
from pytest_recall.reporting.transcripts import TranscriptMode
from pytest_recall.scoring.judge_scope import FreeFormJudge
from pytest_recall.scoring.retrieval_judge import AnswerJudgeName
from pytest_recall.sessions.network import Network
from pytest_recall.sessions.rooms import HomeMode, ScopeMode, WorkdirMode
from pytest_recall.sessions.sandbox import SandboxMode
from pytest_recall.sessions.settings import PromptMode

# Each mode flag, with the Literal type the code that uses the value declares.
MODES = {
    "recall_home": HomeMode,
    "recall_workdir": WorkdirMode,
    "recall_scope": ScopeMode,
    "recall_prompt": PromptMode,
    "recall_gate": Gate,
    "recall_transcripts": TranscriptMode,
    "recall_sandbox": SandboxMode,
    "recall_sandbox_net": Network,
    "recall_session": SessionMode,
    "recall_paste": PasteMode,
    "recall_answer_judge": AnswerJudgeName,
    "recall_free_form_judge": FreeFormJudge,
    "recall_stop": StopMode,
}


def test_every_recall_flag_has_an_ini_twin_and_help(pytester: pytest.Pytester) -> None:
    # The plugin is loaded by its entry point, as in a user's `pytest --help`; no agent runs, so in-process will do.
    result = pytester.runpytest("--help")
    text = "\n".join(result.outlines)
    flags = set(re.findall(r"^\s+(--recall-[a-z-]+)", text, re.MULTILINE))
    ini_keys = set(re.findall(r"^\s+(recall_[a-z_]+) \(", text, re.MULTILINE))
    assert flags == {option.flag for option in OPTIONS}
    assert ini_keys == {option.name for option in OPTIONS}
    assert {flag.removeprefix("--").replace("-", "_") for flag in flags} == ini_keys
    for option in OPTIONS:
        assert len(option.help) > 40, f"{option.flag} says too little"


def test_mode_choices_and_defaults_come_from_the_literal_the_code_declares() -> None:
    for name, literal in MODES.items():
        option = OPTION_BY_NAME[name]
        assert option.choices == get_args(literal), name
        # A mode that is unset leaves each case its own; otherwise the default is the Literal's first value.
        assert option.default in (None, get_args(literal)[0]), name
        for choice in option.choices:
            assert f"'{choice}'" in option.help, f"{option.flag}'s help does not explain {choice!r}"
    undeclared = {option.name for option in OPTIONS if option.choices} - set(MODES) - {"recall_live_preset"}
    assert not undeclared, f"modes without a Literal in this test: {undeclared}"


def test_every_mode_default_is_the_run_configs_default() -> None:
    """The table's default and the group's default are the same value, so a run without flags is the default run."""
    run = RunConfig()
    where = {
        "recall_home": run.isolation.home,
        "recall_workdir": run.isolation.workdir,
        "recall_scope": run.isolation.scope,
        "recall_prompt": run.command.prompt,
        "recall_gate": run.outputs.gate,
        "recall_transcripts": run.outputs.transcripts,
        "recall_answer_judge": run.outputs.answer_judge,
        "recall_sandbox": run.sandbox.mode,
        "recall_sandbox_net": run.sandbox.network,
        "recall_session": run.live.session,
        "recall_stop": run.scale_out.stop,
    }
    for name, value in where.items():
        assert OPTION_BY_NAME[name].default == value, name


@pytest.mark.parametrize("name", sorted(MODES))
def test_a_value_outside_a_modes_literal_is_one_usage_line(pytester: pytest.Pytester, name: str) -> None:
    option = OPTION_BY_NAME[name]
    result = pytester.runpytest(f"{option.flag}=bogus")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "must be one of " + ", ".join(option.choices) in result.stderr.str()


def _flags_by_heading(text: str, heading: str) -> dict[str, list[str]]:
    """Each section of ``text`` whose heading matches ``heading`` (group 1 names it), with its flags, in order."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        found = re.match(heading, line)
        if found:
            current = sections.setdefault(found.group(1), [])
        elif re.match(r"^\S", line) and not line.startswith("|"):
            current = None  # another group or section: its flags are not this topic's
        flag = re.match(r"^(?:  |\| `)(--recall-[a-z-]+)", line)
        if flag and current is not None:
            current.append(flag.group(1))
    return sections


def test_help_groups_the_flags_by_topic_with_metavars_that_name_the_value(pytester: pytest.Pytester) -> None:
    """Issue 55: one flat group of 45 flags, each taking VALUE, left the reader to search the prose for choices."""
    text = "\n".join(pytester.runpytest("--help").outlines)
    groups = _flags_by_heading(text, r"^pytest-recall, (.+):$")
    assert groups == {topic.title: [option.flag for option in topic.options] for topic in TOPICS}
    names = [topic.name for topic in TOPICS]
    assert names == ["run", "isolation", "sandbox", "live", "judging", "reports", "scale-out"]
    assert not re.findall(r"--recall-[a-z-]+=VALUE", text), "a flag still takes VALUE"
    assert "--recall-gate={cases,score}" in text
    assert "--recall-sandbox-net={private,host,none}" in text
    assert "--recall-live-preset={llm-chat,claude,codex}" in text
    assert re.search(r"--recall-report=PATH\s", text)
    for option in OPTIONS:
        if option.kind != "bool":
            assert f"{option.flag}={option.shown_metavar}" in text, option.flag


def test_the_options_page_lists_the_flags_in_the_helps_groups() -> None:
    page = (Path(__file__).parent.parent / "docs" / "options.md").read_text(encoding="utf-8")
    sections = _flags_by_heading(page, r"^### [A-Z][a-z-]+: (.+)$")
    assert sections == {topic.title: [option.flag for option in topic.options] for topic in TOPICS}
