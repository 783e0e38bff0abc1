"""A front door that imports a name's module when the name is first read (PEP 562).

Every session of the bundled agents and adapters imports ``cases`` or ``agents``, and ``suites`` holds
generators most runs never call: a front door that imported each module up front would make every session
and every run pay for all of them (``tests/test_layers.py`` holds the sessions to what they use). Such a
package names its public API for the type checker in an ``if TYPE_CHECKING`` block and says here, module
by module, where each name lives; ``tests/test_front_doors.py`` holds the two lists to each other.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


def loaded_on_first_use(package: str, homes: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``, whose ``homes`` map a module (named relative to it) to the
    names it exports: a name's module is imported when the name is first read, and the name kept."""
    home_of = {name: module for module, names in homes.items() for name in names}
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> Any:
        module = home_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
