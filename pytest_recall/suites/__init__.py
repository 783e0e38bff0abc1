"""Generated case suites: each module builds cases deterministically from a seed.

The names below are the package's public API: what the other packages use, imported from here and not from
the modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_recall.front_doors import loaded_on_first_use

if TYPE_CHECKING:
    from pytest_recall.suites.audit_v2 import AUDIT_MAX_SIZE, AUDIT_SPLITS, AUDIT_VERSIONS, audit_cases
    from pytest_recall.suites.bundled import bundled_suites, suite_path, wheel_nodeid
    from pytest_recall.suites.coding_words import DECISIONS
    from pytest_recall.suites.importers import IMPORTERS
    from pytest_recall.suites.locomo import CATEGORY_NAMES
    from pytest_recall.suites.long_steps import MIN_CHARS_PER_STEP
    from pytest_recall.suites.memoryagentbench import COMPETENCY_BY_SOURCE, METRIC_BY_SOURCE
    from pytest_recall.suites.public_import import IMPORT_NOTE, Selection
    from pytest_recall.suites.suite_file import SUITE_FILE, family_cases, generated_suite, is_suite_dir, suite_cases
    from pytest_recall.suites.walk import cases_under

__all__ = [
    "AUDIT_MAX_SIZE",
    "AUDIT_SPLITS",
    "AUDIT_VERSIONS",
    "CATEGORY_NAMES",
    "COMPETENCY_BY_SOURCE",
    "DECISIONS",
    "IMPORTERS",
    "IMPORT_NOTE",
    "METRIC_BY_SOURCE",
    "MIN_CHARS_PER_STEP",
    "SUITE_FILE",
    "Selection",
    "audit_cases",
    "bundled_suites",
    "cases_under",
    "family_cases",
    "generated_suite",
    "is_suite_dir",
    "suite_cases",
    "suite_path",
    "wheel_nodeid",
]

# A run loads the generators its suites name, no others: each name's module loads when the name is first read
# (pytest_recall/front_doors.py).
if not TYPE_CHECKING:
    __getattr__ = loaded_on_first_use(
        __name__,
        {
            "audit_v2": ("AUDIT_MAX_SIZE", "AUDIT_SPLITS", "AUDIT_VERSIONS", "audit_cases"),
            "bundled": (
                "bundled_suites",
                "suite_path",
                "wheel_nodeid",
            ),
            "coding_words": ("DECISIONS",),
            "importers": ("IMPORTERS",),
            "locomo": ("CATEGORY_NAMES",),
            "long_steps": ("MIN_CHARS_PER_STEP",),
            "memoryagentbench": (
                "COMPETENCY_BY_SOURCE",
                "METRIC_BY_SOURCE",
            ),
            "public_import": (
                "IMPORT_NOTE",
                "Selection",
            ),
            "suite_file": (
                "SUITE_FILE",
                "family_cases",
                "generated_suite",
                "is_suite_dir",
                "suite_cases",
            ),
            "walk": ("cases_under",),
        },
    )
