"""The house's rules, checked: who may import whom, no import circles, modules a reader can hold.

The rooms (``protocol`` -> ``assignor`` -> ``simulator``) are the architecture's promise: the wire
format stays free of the leader's logic, the leader's pure core free of aiokafka, and nothing
imports pyspark at package import. Reading the source's load-time imports (not running it)
makes a violation fail here, with the module and the import named.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("protocol", "assignor", "simulator")
MAX_LINES = 500
#: Modules allowed past MAX_LINES, each with the reason a split would not help a reader.
LONG_MODULES: dict[str, str] = {}
#: The rooms each package may import (beyond the standard library and third parties).
MAY_IMPORT = {
    "protocol": {"protocol"},
    "assignor": {"protocol", "assignor"},
    "simulator": {"protocol", "assignor", "simulator"},
}
#: Third-party packages a room must not import at module level.
FORBIDDEN = {
    "protocol": {"aiokafka", "pyspark"},
    "assignor": {"pyspark"},
    "simulator": set(),
}
#: The parts of ``assignor`` that are pure: no aiokafka, no asyncio, no I/O clients.
PURE_ASSIGNOR = ("assignor._java", "assignor.topology", "assignor.placement", "assignor.leader")
IMPURE = ("aiokafka", "asyncio")


def modules() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            yield name, path


def top_level_imports(path: Path, name: str) -> list[str]:
    """Imports executed when the module loads: its body, module-level ``if``/``try``/``with``
    blocks and class bodies, not functions nor ``if TYPE_CHECKING:`` (its ``else:`` does run).

    Relative imports are resolved against ``name``; ``from package import module`` names the
    module (as ``import package.module`` would), so a circle through it is seen."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[str] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = _absolute(node, package)
                named = [f"{module}.{alias.name}" for alias in node.names]
                submodules = [sub for sub in named if sub in MODULES]
                if len(submodules) < len(named):  # some names come from the module itself
                    found.append(module)
                found.extend(submodules)
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try | ast.TryStar):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.With | ast.ClassDef):
                visit(node.body)

    visit(tree.body)
    return found


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if node.level == 0:
        return node.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


MODULES = dict(modules())
IMPORTS = {name: top_level_imports(path, name) for name, path in MODULES.items()}


def _is_pure(name: str) -> bool:
    return any(name == part or name.startswith(part + ".") for part in PURE_ASSIGNOR)


def violations(name: str, imports: list[str]) -> list[str]:
    """What breaks the import rules among a module's load-time imports."""
    room = name.split(".")[0]
    found = []
    for imported in imports:
        root = imported.split(".")[0]
        if root in PACKAGES and root not in MAY_IMPORT[room]:
            found.append(f"{name} imports {imported}: {room} may not import {root}")
        if root in FORBIDDEN[room]:
            found.append(f"{name} imports {imported} at load time")
        if _is_pure(name) and root in IMPURE:
            found.append(f"{name} is pure but imports {imported}")
    return found


@pytest.mark.parametrize("name", sorted(MODULES))
def test_rooms_import_only_what_they_may(name: str) -> None:
    assert violations(name, IMPORTS[name]) == []


@pytest.mark.parametrize(
    ("name", "imported"),
    [
        ("protocol.codec", "assignor.config"),
        ("protocol.ids", "aiokafka"),
        ("assignor.member", "simulator.shim"),
        ("assignor.placement.threads", "asyncio"),
        ("assignor.leader.pipeline", "aiokafka.structs"),
        ("assignor.leader", "asyncio"),
        ("assignor.config", "pyspark.sql"),
    ],
)
def test_the_rules_catch_a_wrong_import(name: str, imported: str) -> None:
    assert violations(name, [imported]) != []


def test_the_rules_allow_the_intended_edges() -> None:
    assert violations("simulator.engine", ["assignor.config", "protocol.ids", "aiokafka"]) == []
    assert violations("assignor.adapter.process", ["aiokafka", "asyncio", "protocol.ids"]) == []


def test_the_reader_sees_every_import_that_runs_at_load(tmp_path: Path) -> None:
    source = tmp_path / "pipeline.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "import typing\n"
        "from . import guard\n"
        "from ..placement import threads\n"
        "if TYPE_CHECKING:\n"
        "    import hidden_for_mypy\n"
        "else:\n"
        "    import runs_otherwise\n"
        "if typing.TYPE_CHECKING:\n"
        "    import hidden_too\n"
        "try:\n"
        "    import in_try\n"
        "finally:\n"
        "    import in_finally\n"
        "class Holder:\n"
        "    import in_class_body\n"
        "def later():\n"
        "    import only_when_called\n",
        encoding="utf-8",
    )
    found = top_level_imports(source, "assignor.leader.pipeline")
    for expected in (
        "assignor.leader.guard",
        "assignor.placement.threads",
        "runs_otherwise",
        "in_try",
        "in_finally",
        "in_class_body",
    ):
        assert expected in found
    for hidden in ("hidden_for_mypy", "hidden_too", "only_when_called"):
        assert hidden not in found


def _project_modules(imported: str) -> list[str]:
    """The project module an import names, without the packages its parents' __init__ runs."""
    return [imported] if imported in MODULES else []


def _graph() -> dict[str, set[str]]:
    return {
        name: {
            target
            for imported in imports
            for target in _project_modules(imported)
            if target != name
        }
        for name, imports in IMPORTS.items()
    }


def find_circle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (module -> modules it imports at load), if there is one."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_there_is_no_import_circle() -> None:
    cycle = find_circle(_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_a_circle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_circle(graph) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("name", sorted(n for n in MODULES if _is_pure(n)))
def test_pure_parts_reach_no_aiokafka_through_our_modules(name: str) -> None:
    """A pure module importing ``assignor.adapter`` would load aiokafka all the same."""
    graph = _graph()
    seen, todo = {name}, [name]
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    reached = {
        f"{module} imports {imported}"
        for module in seen
        for imported in IMPORTS[module]
        if imported.split(".")[0] in IMPURE
    }
    assert reached == set()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_stay_readable(name: str) -> None:
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    if name in LONG_MODULES:
        return
    assert lines <= MAX_LINES, f"{name} has {lines} lines; split it or say why in LONG_MODULES"


def test_long_module_allowances_do_not_outlive_their_reason() -> None:
    for name in LONG_MODULES:
        assert name in MODULES, f"LONG_MODULES names {name}, which does not exist"
        lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
        assert lines > MAX_LINES, f"{name} has {lines} lines now: drop it from LONG_MODULES"
