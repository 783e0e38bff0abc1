"""Adapters that run real agent CLIs.

Claude Code, Codex, Gemini CLI, OpenCode, Kilo Code, Qwen Code, Copilot CLI, pi, Cline, Hermes Agent, OpenClaw,
Letta Code, aider and llm.
"""

from __future__ import annotations

from pytest_recall.agents.adapters.common import Adapter


def all_adapters() -> tuple[Adapter, ...]:
    """Every adapter, in the order ``pytest-recall agents`` and the README list them."""
    from pytest_recall.agents.adapters import (
        aider,
        claude,
        cline,
        codex,
        copilot,
        gemini,
        hermes,
        kilo,
        letta,
        llm,
        openclaw,
        opencode,
        pi,
        qwen,
    )

    return (
        claude.ADAPTER,
        codex.ADAPTER,
        gemini.ADAPTER,
        opencode.ADAPTER,
        kilo.ADAPTER,
        qwen.ADAPTER,
        copilot.ADAPTER,
        pi.ADAPTER,
        cline.ADAPTER,
        hermes.ADAPTER,
        openclaw.ADAPTER,
        letta.ADAPTER,
        aider.ADAPTER,
        llm.ADAPTER,
    )


__all__ = ["Adapter", "all_adapters"]
