"""The pytest glue: every module that imports pytest, ``_pytest`` or xdist, and nothing else.

``hooks`` is what the ``pytest11`` entry point loads. The layers below (``cases``, ``suites``,
``sessions``, ``scoring``, ``reporting``, ``agents``) never import this package or pytest;
import-linter checks that by package in CI.
"""

from __future__ import annotations

# Nothing here is imported by another package (the contracts forbid it): pytest loads ``hooks`` by its entry point.
__all__: list[str] = []
