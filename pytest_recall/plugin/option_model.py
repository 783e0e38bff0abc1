"""What a row of the ``--recall-*`` table is: an :class:`Option`, and the :class:`Topic` that groups rows in
``pytest --help``. The rows are in :mod:`~pytest_recall.plugin.run_options` and
:mod:`~pytest_recall.plugin.result_options`; :mod:`~pytest_recall.plugin.options` registers them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

OptionKind = Literal["string", "list", "bool"]


@dataclass(frozen=True, slots=True)
class Option:
    """One row of the table: the ini key (the flag is ``--recall-<name with dashes>``), its help, its default."""

    name: str
    help: str
    default: str | None = None
    kind: OptionKind = "string"
    # The values a mode may take; empty for free text.
    choices: tuple[str, ...] = ()
    # What the value is (PATH, N, SECONDS, ...); a mode's is its choices.
    metavar: str = "VALUE"

    @property
    def flag(self) -> str:
        return flag_of(self.name)

    @property
    def shown_metavar(self) -> str:
        """How ``pytest --help`` names the value: a mode by its choices, so they need no reading of the prose."""
        return "{" + ",".join(self.choices) + "}" if self.choices else self.metavar

    @classmethod
    def mode(cls, name: str, help: str, *, choices: object, optional: bool = False) -> Option:
        """A mode: its choices, and its default (the first of them), from the ``Literal`` type its code uses.

        ``optional`` modes default to unset, leaving each case its own setting.
        """
        names = tuple(str(choice) for choice in get_args(choices))
        return cls(name, help, None if optional else names[0], choices=names)


@dataclass(frozen=True, slots=True)
class Topic:
    """One group of flags in ``pytest --help``, so a reader finds the judge flags together, the live ones together."""

    name: str
    title: str
    options: tuple[Option, ...]


def flag_of(name: str) -> str:
    """The command-line spelling of an ini key: ``recall_cmd`` is ``--recall-cmd``."""
    return "--" + name.replace("_", "-")
