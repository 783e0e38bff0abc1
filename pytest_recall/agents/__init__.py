"""Reference agents that ship with pytest-recall, so the whole loop runs on a fresh machine.

The agents are programs, reached through their console scripts (pyproject.toml). The names below are what
the other packages use (the adapters' list and presets, the judge's prompts and the rejudging), imported
from here and not from the modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_recall.front_doors import loaded_on_first_use

if TYPE_CHECKING:
    from pytest_recall.agents.adapters import all_adapters
    from pytest_recall.agents.adapters.advice import bare_cli_advice, command_line_trap, preset_conflict
    from pytest_recall.agents.adapters.presets import PRESETS, LivePreset
    from pytest_recall.agents.judge_prompts import ABSTENTION, FIELDS, KNOWLEDGE_UPDATE, PREFERENCE, TEMPORAL
    from pytest_recall.agents.prompt_file import builtin_prompts_sha256, judge_prompts_sha256
    from pytest_recall.agents.rejudge import missing_line, not_kept, parse_judges, rejudge_report

__all__ = [
    "ABSTENTION",
    "FIELDS",
    "KNOWLEDGE_UPDATE",
    "PREFERENCE",
    "PRESETS",
    "TEMPORAL",
    "LivePreset",
    "all_adapters",
    "bare_cli_advice",
    "builtin_prompts_sha256",
    "command_line_trap",
    "judge_prompts_sha256",
    "missing_line",
    "not_kept",
    "parse_judges",
    "preset_conflict",
    "rejudge_report",
]

# Every session of the bundled agents and adapters imports this package: each name's module loads when the name
# is first read (pytest_recall/front_doors.py), so a session pays for the modules it uses, not for all.
if not TYPE_CHECKING:
    __getattr__ = loaded_on_first_use(
        __name__,
        {
            "adapters": ("all_adapters",),
            "adapters.advice": (
                "bare_cli_advice",
                "command_line_trap",
                "preset_conflict",
            ),
            "adapters.presets": (
                "LivePreset",
                "PRESETS",
            ),
            "judge_prompts": (
                "ABSTENTION",
                "FIELDS",
                "KNOWLEDGE_UPDATE",
                "PREFERENCE",
                "TEMPORAL",
            ),
            "prompt_file": (
                "builtin_prompts_sha256",
                "judge_prompts_sha256",
            ),
            "rejudge": (
                "missing_line",
                "not_kept",
                "parse_judges",
                "rejudge_report",
            ),
        },
    )
