"""The benchmarks ``pytest-recall import`` reads, each with its importer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_recall.suites.long_import import import_beam, import_memoryagentbench
from pytest_recall.suites.public_import import ImportSummary, Selection, import_locomo, import_longmemeval

IMPORTERS: dict[str, Callable[[Path, Path, Selection], ImportSummary]] = {
    "longmemeval": import_longmemeval,
    "locomo": import_locomo,
    "beam": import_beam,
    "memoryagentbench": import_memoryagentbench,
}
