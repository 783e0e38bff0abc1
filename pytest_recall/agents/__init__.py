"""Reference agents that ship with pytest-recall, so the whole loop runs on a fresh machine."""

from __future__ import annotations

# The agents are programs, reached through their console scripts (pyproject.toml), not imported by the layers
# above; ``agents.adapters`` has its own front door, the list of adapters.
__all__: list[str] = []
