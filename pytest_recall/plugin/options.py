"""The ``--recall-*`` flags: one table, each flag with its ini twin and one help text, and their raw values.

Each option is declared once, in the table of its topic (run, isolation,
sandbox and live in :mod:`~pytest_recall.plugin.run_options`; judging,
reports and scale-out in :mod:`~pytest_recall.plugin.result_options`), and
:func:`add_options` registers the flag, in its topic's group of ``pytest
--help``, and the ini key from that one row. A mode's choices and default
come from the ``Literal`` type defined beside the code that uses it, and
name its value in the help (``--recall-gate={cases,score}``). Reading a
value into the run configuration is :mod:`pytest_recall.plugin.configure`'s
job; a flag given on the command line wins over the ini value.

Adding a flag: a row in its topic's table and in that topic's section
of docs/options.md, a field in the group of
:mod:`pytest_recall.plugin.config` (or of the layer module) that uses it,
and the line that reads it in that group's reader in ``configure``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_recall.plugin.option_model import Option, Topic
from pytest_recall.plugin.result_options import JUDGING_OPTIONS, REPORTS_OPTIONS, SCALE_OUT_OPTIONS
from pytest_recall.plugin.run_options import ISOLATION_OPTIONS, LIVE_OPTIONS, RUN_OPTIONS, SANDBOX_OPTIONS

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
