"""Adapters that run real agent CLIs.

:data:`ADAPTER_MODULES` is the one list of them, in the order ``pytest-recall agents`` and the README list
them: each names a module of this package whose ``ADAPTER`` describes the adapter and whose ``main`` is its
console script (``tests/test_adapter_table.py`` holds ``pyproject.toml``, the README, ``docs/agents.md``
and the tests' wirings to it). Most are rows of the print-mode runner (``print_run.py``).
"""

from __future__ import annotations

import importlib

from pytest_recall.agents.adapters.common import Adapter

ADAPTER_MODULES = (
    "claude",
    "codex",
    "gemini",
    "opencode",
    "kilo",
    "qwen",
    "copilot",
    "pi",
    "cline",
    "hermes",
    "openclaw",
    "letta",
    "aider",
    "llm",
    "acp",
)


def all_adapters() -> tuple[Adapter, ...]:
    """Every adapter, in the order of :data:`ADAPTER_MODULES`; each module is imported only when asked."""
    adapters: list[Adapter] = []
    for name in ADAPTER_MODULES:
        adapter = importlib.import_module(f"{__name__}.{name}").ADAPTER
        assert isinstance(adapter, Adapter), name
        adapters.append(adapter)
    return tuple(adapters)


__all__ = ["ADAPTER_MODULES", "Adapter", "all_adapters"]
