"""Relative paths in a command made absolute: every session runs in an empty folder of its own.

``--recall-cmd`` and ``--recall-judge-cmd`` are resolved from where pytest
runs; the servers of an MCP configuration from the configuration file's
folder, where a project keeps such a file beside what it starts (as
``mcp = "FILE"`` in a case.toml is read relative to that file).
"""

from __future__ import annotations

import os


def absolute_word(word: str, base: str, *, program: bool) -> str:
    """``word`` made absolute against ``base`` when it names a path; any other word as given.

    The program is a path when it holds a separator (``agents/x.py``); a later
    word when it names a file that exists from ``base`` (``my_agent.py``) or a
    path with a separator that does. Bare words that name nothing are flags and
    values; a word with a ``{placeholder}`` names no path until a step fills it in.
    """
    if not word or os.path.isabs(word) or word.startswith("~") or "{" in word:
        return word
    there = os.path.join(base, word)
    names_a_path = os.sep in word and (program or os.path.exists(there))
    if names_a_path or (not program and os.path.isfile(there)):
        return os.path.abspath(there)
    return word


def resolve_command_paths(
    argv: tuple[str, ...], base: str | None = None
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The command with its relative paths made absolute against ``base`` (the working folder by default).

    Also returns each word that was resolved, with what it became, the program
    (``./forgetful.py``) as well as a later argument, so the header can say where
    each now points. The value of ``--opt=value`` is resolved as an argument.
    """
    here = os.getcwd() if base is None else base
    resolved: list[tuple[str, str]] = []
    words = []
    for index, word in enumerate(argv):
        prefix, value = "", word
        if index > 0 and word.startswith("--") and "=" in word:
            name, _, value = word.partition("=")
            prefix = f"{name}="
        elif index > 0 and word.startswith("-"):
            words.append(word)
            continue
        absolute = absolute_word(value, here, program=index == 0)
        if absolute != value:
            resolved.append((value, absolute))
        words.append(prefix + absolute)
    return tuple(words), tuple(resolved)
