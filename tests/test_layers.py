"""The pytest boundary is checked by package: a new top-level package cannot slip past it."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest_recall

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
GLUE_AND_DOUBLES = {"plugin", "testing"}


def contracts() -> list[dict[str, object]]:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def test_every_package_but_the_glue_is_forbidden_pytest() -> None:
    top_level = {info.name for info in pkgutil.iter_modules(pytest_recall.__path__)}
    pytest_contract = next(c for c in contracts() if "pytest" in c.get("forbidden_modules", []))
    listed = {str(name).removeprefix("pytest_recall.") for name in pytest_contract["source_modules"]}  # type: ignore[attr-defined]
    assert listed == top_level - GLUE_AND_DOUBLES
    assert set(pytest_contract["forbidden_modules"]) >= {"pytest", "_pytest", "xdist", "pytest_recall.plugin"}  # type: ignore[arg-type]


def test_every_package_sits_in_a_layer() -> None:
    top_level = {info.name for info in pkgutil.iter_modules(pytest_recall.__path__)}
    layers = next(c for c in contracts() if c["type"] == "layers")
    named = {part.strip() for layer in layers["layers"] for part in str(layer).split("|")}  # type: ignore[attr-defined]
    assert named == top_level


def test_no_function_in_the_package_is_over_sixty_lines() -> None:
    """A function that long is doing two jobs; the house style splits it."""
    import ast

    package = Path(pytest_recall.__file__).parent
    long = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > 60:
                    long.append(f"{path.relative_to(package)}:{node.lineno} {node.name} ({length} lines)")
    assert not long


def test_a_reference_agent_session_loads_only_what_it_uses() -> None:
    """Every session of the bundled agents imports a module of this package: the package's public names load
    on first use, so a session does not pay for the case model, the grader and the judge (about 75 ms of CPU
    each start, measured with ``/usr/bin/time`` over ten starts), while ``from pytest_recall import Case`` works."""
    probe = (
        "import sys, pytest_recall.agents.notebook\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pytest_recall.cases', 'pytest_recall.scoring'))))\n"
        "from pytest_recall import Case, aggregate, score_case\n"
        "print(Case.__module__, aggregate.__module__, score_case.__module__)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        "[]",
        "pytest_recall.cases.model pytest_recall.scoring.grader pytest_recall.scoring.judge",
    ]


def test_an_adapter_session_loads_only_the_case_modules_it_uses() -> None:
    """Every step of a real CLI runs an adapter, which reads two constants of ``cases``: the package's front door
    loads a name's module on first use, so the step does not pay for the case model, the live protocol and the
    rest (a door that imported them all failed this)."""
    probe = (
        "import sys, pytest_recall.agents.adapters.claude\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pytest_recall.cases', 'pytest_recall.suites'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["['pytest_recall.cases', 'pytest_recall.cases.rate_limit']"]
