"""No import circle: the modules of hydra_proxy import one another as a tree without loops.
The graph is read from the source (ast): each module's imports at module level (in `try`
and `if` blocks too, but not under ``if TYPE_CHECKING``, which never runs), an import of a
package's name counting as one of its ``__init__``."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import hydra_proxy

PACKAGE = Path(hydra_proxy.__file__).resolve().parent


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and not _type_checking(node):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _module_level(block)


def modules(root: Path) -> dict[str, Path]:
    """Every module under the package `root`, by dotted name."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports when it is loaded."""
    every = modules(root)
    graph = {}
    for name, path in every.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        imported = set()
        for node in _module_level(ast.parse(path.read_text()).body):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
                continue
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:  # a submodule by name, else a name of the package
                submodule = f"{target}.{alias.name}"
                imported.add(submodule if submodule in every else target)
        graph[name] = {m for m in imported if m in every and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import one another, in a circle (strongly connected
    components of more than one module, or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative Tarjan: no recursion limit to meet
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in graph[node]:
                    found.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def test_the_package_has_no_import_circle() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 100, "the walk reads the whole package"
    assert "hydra_proxy.server.pipeline.exchange" in graph["hydra_proxy.server.app"]
    assert cycles(graph) == []


def test_the_walk_finds_a_circle_through_a_package_name_and_not_through_type_checking(
    tmp_path: Path,
) -> None:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("from .a import A\n")
    (root / "a.py").write_text("from .sub.b import B\nA = 1\n")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "b.py").write_text(
        "try:\n    from .. import A\nexcept ImportError:\n    pass\n"
    )
    (root / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n"
    )
    (root / "d.py").write_text("from . import c\nD = 1\n")
    assert cycles(import_graph(root)) == [["pkg", "pkg.a", "pkg.sub.b"]]
