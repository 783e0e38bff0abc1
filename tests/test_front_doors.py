"""Every package reaches another through its front door (the names in its ``__init__``'s ``__all__``), never a module.

A function's own import, deferred so that a run which never needs the module never loads it (the
cost plan of ``--recall-plan``), may name the module: a front door would load it for every run.
import-linter's contracts (pyproject.toml) hold the same rule, and list each such import.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import pytest_recall

PACKAGE = Path(pytest_recall.__file__).parent
FRONT_DOORS = ("sessions", "scoring", "reporting")
PACKAGES = ("agents", "cases", "plugin", "reporting", "scoring", "sessions", "suites", "testing")
# The doors that load a name's module on first use (pytest_recall/front_doors.py says why).
LAZY_DOORS = ("agents", "cases", "suites")
# The test doubles read the reference agents' solvers whole (pyproject.toml's agents contract says why).
SOLVERS_READ_WHOLE = {
    ("testing/fake_brain.py", "pytest_recall.agents.audit_solver"),
    ("testing/fake_brain.py", "pytest_recall.agents.ledger_solver"),
    ("testing/fake_brain.py", "pytest_recall.agents.provider"),
    ("testing/fake_brain.py", "pytest_recall.agents.retrieval"),
    ("testing/fake_coder.py", "pytest_recall.agents.coding_solver"),
}
_DEFERRED = (ast.FunctionDef, ast.AsyncFunctionDef)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports when it is imported (its top level, ``if`` blocks included), with its line."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(path.read_text("utf-8"))
    top = [node for statement in tree.body for node in ast.walk(statement) if not isinstance(statement, _DEFERRED)]
    for node in top:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            # ``from pytest_recall.cases import strict_json`` imports a module too, unless the door names it.
            found.extend(
                (node.lineno, f"{node.module}.{alias.name}")
                for alias in node.names
                if _is_module_behind(node.module, alias.name)
            )
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


def _is_module_behind(package: str, name: str) -> bool:
    """Whether ``name`` is a module of ``package`` that its front door does not name (a function may share its
    module's name: ``by_workspace``, ``case_flow``)."""
    parts = package.split(".")
    if parts[0] != "pytest_recall" or len(parts) != 2:
        return False
    folder = PACKAGE / parts[1]
    if not ((folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()):
        return False
    return name not in importlib.import_module(package).__all__


def test_the_glue_imports_the_layers_below_through_their_front_doors() -> None:
    behind = [
        f"{path.name}:{line} {module}"
        for path in sorted((PACKAGE / "plugin").glob("*.py"))
        for line, module in imported_modules(path)
        if module.split(".")[:2] in (["pytest_recall", name] for name in FRONT_DOORS) and module.count(".") > 1
    ]
    assert behind == [], "import these from the package (and add the name to its __all__ if it is new)"


def door_imports(name: str) -> dict[str, str]:
    """Each name a front door imports (its ``if TYPE_CHECKING`` block, for a door that loads on first use), by
    the module it comes from, relative to the package."""
    tree = ast.parse((PACKAGE / name / "__init__.py").read_text("utf-8"))
    statements = [node for node in tree.body if not isinstance(node, ast.If)]
    statements += [node for block in tree.body if isinstance(block, ast.If) for node in block.body]
    return {
        alias.asname or alias.name: node.module.removeprefix(f"pytest_recall.{name}.")
        for node in statements
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(f"pytest_recall.{name}.")
        for alias in node.names
    }


def loaded_on_first_use(name: str) -> dict[str, str]:
    """Each name a lazy door loads, by its module: the table it hands to ``loaded_on_first_use``."""
    tree = ast.parse((PACKAGE / name / "__init__.py").read_text("utf-8"))
    call = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "loaded_on_first_use"
    )
    homes: dict[str, tuple[str, ...]] = ast.literal_eval(call.args[1])
    return {exported: module for module, names in homes.items() for exported in names}


@pytest.mark.parametrize("name", PACKAGES)
def test_a_front_door_names_exactly_what_it_imports(name: str) -> None:
    """``plugin`` imports nothing and names nothing: pytest loads its ``hooks`` by the entry point."""
    package = importlib.import_module(f"pytest_recall.{name}")
    imported = door_imports(name)
    assert sorted(package.__all__) == sorted(imported)
    if name in LAZY_DOORS:
        # What the type checker is told and what is loaded on first use are one table.
        assert loaded_on_first_use(name) == imported
    assert all(hasattr(package, exported) for exported in package.__all__)


@pytest.mark.parametrize("name", LAZY_DOORS)
def test_a_lazy_door_names_no_name_of_a_module_of_its_own(name: str) -> None:
    """Importing ``pytest_recall.agents.rejudge`` sets the package's ``rejudge`` to the module: a door that loads
    on first use would then hand out the module where its ``__all__`` promised the function."""
    modules = {info.name for info in pkgutil.iter_modules([str(PACKAGE / name)])}
    assert sorted(modules & set(importlib.import_module(f"pytest_recall.{name}").__all__)) == []


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


@pytest.mark.parametrize("name", PACKAGES)
def test_every_other_package_imports_a_package_through_its_front_door(name: str) -> None:
    """Not the glue alone: reporting, sessions, agents, the CLI, the test doubles and the package root read a
    package's ``__all__`` too, at the top of a module; a function's own deferred import is import-linter's to list."""
    behind = [
        f"{path.relative_to(PACKAGE)}:{line} {module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if PACKAGE / name not in path.parents
        for line, module in imported_modules(path)
        if module.startswith(f"pytest_recall.{name}.")
        and (path.relative_to(PACKAGE).as_posix(), module) not in SOLVERS_READ_WHOLE
    ]
    assert behind == [], f"import these from pytest_recall.{name} (and add the name to its __all__ if it is new)"
