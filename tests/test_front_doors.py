"""The glue reaches sessions, scoring and reporting through each package's front door, never a module of it.

A function's own import, deferred so that a run which never needs the module never loads it (the
cost plan of ``--recall-plan``), may name the module: a front door would load it for every run.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import pytest_recall

PACKAGE = Path(pytest_recall.__file__).parent
FRONT_DOORS = ("sessions", "scoring", "reporting")
_DEFERRED = (ast.FunctionDef, ast.AsyncFunctionDef)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports when it is imported (its top level, ``if`` blocks included), with its line."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(path.read_text("utf-8"))
    top = [node for statement in tree.body for node in ast.walk(statement) if not isinstance(statement, _DEFERRED)]
    for node in top:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


def test_the_glue_imports_the_layers_below_through_their_front_doors() -> None:
    behind = [
        f"{path.name}:{line} {module}"
        for path in sorted((PACKAGE / "plugin").glob("*.py"))
        for line, module in imported_modules(path)
        if module.split(".")[:2] in (["pytest_recall", name] for name in FRONT_DOORS) and module.count(".") > 1
    ]
    assert behind == [], "import these from the package (and add the name to its __all__ if it is new)"


@pytest.mark.parametrize("name", FRONT_DOORS)
def test_a_front_door_names_exactly_what_it_imports(name: str) -> None:
    package = importlib.import_module(f"pytest_recall.{name}")
    tree = ast.parse((PACKAGE / name / "__init__.py").read_text("utf-8"))
    imported = {
        alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    imported.discard("annotations")
    assert sorted(package.__all__) == sorted(imported)
    assert all(hasattr(package, exported) for exported in package.__all__)


def test_no_module_imports_another_modules_private_name() -> None:
    """A name with a leading underscore is its module's own: one another module needs is public, and named so."""
    borrowed = [
        f"{path.relative_to(PACKAGE)}:{node.lineno} {alias.name} from {node.module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pytest_recall")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert borrowed == []


def test_a_constant_of_the_package_is_defined_once() -> None:
    """Two definitions of one constant drift apart; the unused copy of a wire name is how they start."""
    defined: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text("utf-8")).body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id.endswith("_PROPERTY"):
                        defined.setdefault(target.id, []).append(str(path.relative_to(PACKAGE)))
    assert {name: places for name, places in defined.items() if len(places) > 1} == {}


@pytest.mark.parametrize("name", FRONT_DOORS)
def test_every_other_package_imports_a_layer_through_its_front_door(name: str) -> None:
    """Not the glue alone: reporting, sessions, agents, the CLI and the test doubles read a layer's ``__all__``
    too. The package root's own imports are the exception: every process of the package runs them."""
    behind = [
        f"{path.relative_to(PACKAGE)}:{line} {module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.parent != PACKAGE / name and path != PACKAGE / "__init__.py"
        for line, module in imported_modules(path)
        if module.startswith(f"pytest_recall.{name}.")
    ]
    assert behind == [], f"import these from pytest_recall.{name} (and add the name to its __all__ if it is new)"
