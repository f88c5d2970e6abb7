"""The exchange in parts, each set in one module: what is known when the request is read
(the Exchange's own fields, set in server/pipeline/exchange.py; who sent it and what it asks are
frozen), what the route decides (server/pipeline/routing.py) and what the answer records
(server/pipeline/outcome.py). A static walk over the package finds every store to an attribute of
an expression whose type is a part and checks it is in the part's module."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

import hydra_proxy
from hydra_proxy.config.routes import RequestTraits
from hydra_proxy.server.pipeline.exchange import FROZEN_PARTS, PARTS, Asked, Caller

PACKAGE = Path(hydra_proxy.__file__).resolve().parent
# Which part an attribute of a part is: exchange.route is a Routing, and so on.
NAMES = {part.__name__: part for part in PARTS}


def module_of(part: type) -> Path:
    return Path(inspect.getfile(part)).resolve()


def part_attributes() -> dict[tuple[type, str], type]:
    """(part, attribute) -> the part that attribute holds, read from the annotations of
    each part's __init__ (self.route: Routing = ...) and its assignments' constructors."""
    found: dict[tuple[type, str], type] = {}
    for part in PARTS:
        tree = ast.parse(module_of(part).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == part.__name__:
                for stmt in ast.walk(node):
                    if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
                        continue
                    called = stmt.value.func
                    for target in stmt.targets:
                        if (
                            isinstance(target, ast.Attribute)
                            and isinstance(target.value, ast.Name)
                            and target.value.id == "self"
                            and isinstance(called, ast.Name)
                            and called.id in NAMES
                        ):
                            found[part, target.attr] = NAMES[called.id]
    return found


HOLDS = part_attributes()


def _annotation_part(annotation: ast.expr | None) -> type | None:
    if annotation is None:
        return None
    text = ast.unparse(annotation).strip("'\"")
    return NAMES.get(text.split(" | ")[0])


class Stores(ast.NodeVisitor):
    """Every store to an attribute of a part-typed expression in one module: a parameter
    annotated with a part, `self` inside a part's own class, a local bound to one, and the
    parts a part holds (exchange.route, exchange.outcome)."""

    def __init__(self) -> None:
        self.found: list[tuple[type, str, int]] = []
        self.scopes: list[dict[str, type]] = [{}]
        self.classes: list[str] = []

    def type_of(self, node: ast.expr) -> type | None:
        if isinstance(node, ast.Name):
            for scope in reversed(self.scopes):
                if node.id in scope:
                    return scope[node.id]
            return None
        if isinstance(node, ast.Attribute):
            owner = self.type_of(node.value)
            return None if owner is None else HOLDS.get((owner, node.attr))
        return None

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        scope: dict[str, type] = {}
        arguments = node.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            part = _annotation_part(arg.annotation)
            if part is not None:
                scope[arg.arg] = part
        if self.classes and self.classes[-1] in NAMES and arguments.args:
            scope[arguments.args[0].arg] = NAMES[self.classes[-1]]
        self.scopes.append(scope)
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _targets(self, target: ast.expr, lineno: int) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._targets(element, lineno)
        elif isinstance(target, ast.Starred):
            self._targets(target.value, lineno)
        elif isinstance(target, ast.Attribute):
            owner = self.type_of(target.value)
            if owner is not None:
                self.found.append((owner, target.attr, lineno))

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._targets(target, node.lineno)
            bound = self.type_of(node.value)
            if isinstance(target, ast.Name) and bound is not None:
                self.scopes[-1][target.id] = bound
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._targets(node.target, node.lineno)
        part = _annotation_part(node.annotation)
        if isinstance(node.target, ast.Name) and part is not None:
            self.scopes[-1][node.target.id] = part
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._targets(node.target, node.lineno)
        self.generic_visit(node)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._targets(node.target, node.lineno)
        self.generic_visit(node)

    visit_AsyncFor = visit_For  # type: ignore[assignment]

    def visit_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self._targets(node.optional_vars, node.context_expr.lineno)
        self.generic_visit(node)


def stores(source: str) -> list[tuple[type, str, int]]:
    visitor = Stores()
    visitor.visit(ast.parse(source))
    return visitor.found


def misplaced(path: Path) -> Iterator[str]:
    for part, name, line in stores(path.read_text()):
        if path.resolve() != module_of(part):
            yield f"{path.relative_to(PACKAGE)}:{line}: {part.__name__}.{name}"


def test_every_field_of_a_part_is_set_in_the_parts_module_only() -> None:
    found = [where for path in sorted(PACKAGE.rglob("*.py")) for where in misplaced(path)]
    assert found == []


def test_the_walk_finds_a_store_through_a_parameter_a_held_part_and_a_local() -> None:
    source = (
        "def note(exchange: Exchange) -> None:\n"
        "    exchange.protocol = 'chat'\n"
        "    exchange.route.attempt = None\n"
        "    outcome = exchange.outcome\n"
        "    outcome.status, other.status = 200, 0\n"
        "    outcome.estimate += 1\n"
    )
    assert [(part.__name__, name) for part, name, _ in stores(source)] == [
        ("Exchange", "protocol"),
        ("Routing", "attempt"),
        ("Outcome", "status"),
        ("Outcome", "estimate"),
    ]


def test_each_part_holds_only_its_declared_fields() -> None:
    assert HOLDS, "the exchange holds its route and outcome"
    for part in PARTS:
        assert "__slots__" in vars(part), part  # a misspelt or new field cannot be added


@pytest.mark.parametrize("part", FROZEN_PARTS, ids=lambda part: part.__name__)
def test_who_sent_the_request_and_what_it_asks_are_set_once(part: type) -> None:
    made = {Caller: Caller(b"key"), Asked: Asked(RequestTraits("m"), stream=False)}[part]
    field = made._fields[0]
    with pytest.raises(AttributeError):
        setattr(made, field, None)
