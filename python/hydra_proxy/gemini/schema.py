"""JSON Schema -> the OpenAPI-3.0 subset Gemini's ``Schema`` accepts.

Gemini answers 400 to a tool schema with a key it does not know (``additionalProperties``
anywhere, even inside ``anyOf``/``items``; ``$schema``; ``propertyNames``; ``const``;
``exclusiveMinimum``; ``input_examples``...), to a type array, to a string ``format`` other
than ``enum``/``date-time`` (Gemini Developer API), and to empty ``properties`` on the
function parameters. So the sanitiser builds a NEW schema from an allow-list of keys; it
never copies a key it does not understand. Rules (each covered by tests):

- ``type``: upper-case Gemini names (``STRING``, ``NUMBER``, ``INTEGER``, ``BOOLEAN``,
  ``ARRAY``, ``OBJECT``); a type array like ``["string", "null"]`` -> that type +
  ``nullable: true``; several non-null types -> ``anyOf`` of one schema per type; a missing
  type is inferred from ``properties`` (OBJECT), ``items`` (ARRAY), a string
  ``enum``/``const`` (STRING); an unknown type name is dropped.
- ``anyOf``/``oneOf`` -> ``anyOf``; ``{"type": "null"}`` members become ``nullable``; a
  single member left is merged into the schema; a member that accepts anything drops the
  union. ``allOf`` members are merged (properties,
  required, first type).
- ``$ref`` to ``#``, ``#/$defs/..`` or ``#/definitions/..`` is inlined (sibling keys of the
  ``$ref`` win); a ref met again inside its own expansion, or deeper than `MAX_REF_DEPTH`,
  becomes a plain ``{"type": "OBJECT"}`` (with the target's description). Unresolvable
  refs become ``{}``. ``$defs``/``definitions`` themselves are dropped. More than
  `MAX_NODES` schema nodes in one request's schemas, or `MAX_REF_REUSE` nodes beyond the
  schemas' own (a ref bomb; `NodeBudget`), or schema nodes nested deeper than `MAX_DEPTH`
  (past it the request could not be written), raise `SchemaTooLarge`.
- ``const``: a string -> ``enum: [value]``; ``null`` -> ``nullable``; other values only
  infer the type. ``enum``: strings kept, ``null`` -> ``nullable``; an enum of non-strings
  (Gemini enums are strings) is dropped and listed in the description.
- ``exclusiveMinimum``/``exclusiveMaximum``: a number -> ``minimum``/``maximum`` (+1/-1 for
  an integer type with an integral bound, so the bound stays exact); a boolean (draft 4)
  is dropped. ``format`` kept only as ``date-time`` on strings (or ``enum`` with an enum).
- ``default`` dropped, its value appended to the description (``(default: 10)``) unless the
  description already speaks of a default;
  ``examples``/``example``/``input_examples``, ``additionalProperties``,
  ``propertyNames``, ``patternProperties``, ``$schema``, ``$id``, ``$comment``,
  ``uniqueItems``, ``multipleOf``, ``not``, ``if``/``then``/``else`` and every other key
  outside the allow-list are dropped.
- ``properties``: each property sanitised; an empty map is dropped. ``required``: only
  names of existing properties, deduplicated; dropped when empty. ``items``: a list (draft
  4 tuple) -> ``anyOf`` of its members.
- Function parameters (`function_parameters`): the root is an OBJECT; with no properties
  left, the declaration gets no ``parameters`` at all (``None``), which every Gemini version
  accepts.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_REF_DEPTH",
    "MAX_REF_REUSE",
    "NodeBudget",
    "SchemaTooLarge",
    "function_parameters",
    "gemini_schema",
]

MAX_REF_DEPTH = 16
# A request's schema nodes in all (about 0.2 s of sanitising; Claude Code's tools hold 66).
MAX_NODES = 20_000
# Nodes one request may visit beyond those its schemas hold (refs inlined more than once):
# about 20 ms of work, and thirty times all that Claude Code's tools hold.
MAX_REF_REUSE = 2048
# Schema nodes within schema nodes; each adds one or two levels to the request's JSON.
MAX_DEPTH = 100

_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}
_COUNTS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties")


class SchemaTooLarge(ValueError):
    """The request's schemas hold (or expand through $ref to) more nodes than its
    NodeBudget allows, or one nests deeper than MAX_DEPTH."""


class NodeBudget:
    """The schema nodes one request may visit, shared by all its schemas: `MAX_NODES` in
    all, of which at most `MAX_REF_REUSE` beyond the schemas' own (refs inlined more than
    once), so a bomb in every tool costs no more than one."""

    def __init__(self) -> None:
        self.visited = 0
        self.left = MAX_REF_REUSE


def _count_nodes(schema: Any) -> int:
    count = 0
    stack = [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            count += 1
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return count


def gemini_schema(schema: Any, budget: NodeBudget | None = None) -> dict[str, Any]:
    """`schema` (JSON Schema, any draft) as a Gemini ``Schema`` object. Never mutates input.
    `budget`: shared by every schema of one request (default: this schema's own)."""
    return _Sanitizer(schema, budget or NodeBudget()).node(schema, ())


def function_parameters(schema: Any, budget: NodeBudget | None = None) -> dict[str, Any] | None:
    """A tool's input schema as ``FunctionDeclaration.parameters``; None: send none."""
    result = gemini_schema(schema, budget)
    if not result.get("properties"):
        return None
    result.pop("anyOf", None)
    result.pop("nullable", None)
    result["type"] = "OBJECT"
    return result


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:
        return repr(value)


def _add_note(out: dict[str, Any], note: str) -> None:
    description = out.get("description")
    out["description"] = f"{description} {note}" if description else note


class _Sanitizer:
    def __init__(self, root: Any, budget: NodeBudget) -> None:
        self.root = root
        self.nodes = 0
        self.budget = budget
        self.own = _count_nodes(root)  # visited past these, a node is a ref's reuse
        self.depth = 0

    # -- $ref

    def _resolve(self, ref: str) -> Any:
        if ref == "#":
            return self.root
        for prefix in ("#/$defs/", "#/definitions/"):
            if ref.startswith(prefix) and isinstance(self.root, dict):
                defs = self.root.get(prefix[2:-1])
                if isinstance(defs, dict):
                    return defs.get(ref[len(prefix) :])
        return None

    def _expand_ref(self, schema: dict[str, Any], refs: tuple[str, ...]) -> dict[str, Any]:
        ref = schema["$ref"]
        target = self._resolve(ref)
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        if not isinstance(target, dict):
            return self.node(siblings, refs) if siblings else {}
        if ref in refs or len(refs) >= MAX_REF_DEPTH:
            out: dict[str, Any] = {"type": "OBJECT"}
            description = siblings.get("description", target.get("description"))
            if isinstance(description, str) and description:
                out["description"] = description
            return out
        return self.node({**target, **siblings}, (*refs, ref))

    # -- one schema node

    def node(self, schema: Any, refs: tuple[str, ...]) -> dict[str, Any]:
        self.nodes += 1
        self.budget.visited += 1
        if self.nodes > self.own:
            self.budget.left -= 1
        if self.budget.visited > MAX_NODES:
            raise SchemaTooLarge(f"the request's schemas hold more than {MAX_NODES} nodes")
        if self.budget.left < 0:
            raise SchemaTooLarge(
                f"the request's schemas expand (through $ref) to more than {MAX_REF_REUSE} "
                "nodes beyond their own"
            )
        if self.depth >= MAX_DEPTH:
            raise SchemaTooLarge(f"schema nests deeper than {MAX_DEPTH} levels")
        self.depth += 1
        try:
            return self._node(schema, refs)
        finally:
            self.depth -= 1

    # One branch per JSON Schema keyword Gemini's dialect treats differently.
    def _node(self, schema: Any, refs: tuple[str, ...]) -> dict[str, Any]:  # noqa: C901
        if not isinstance(schema, dict):
            return {}  # true / {} / junk: any value
        if isinstance(schema.get("$ref"), str):
            return self._expand_ref(schema, refs)
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and all_of:
            schema = self._merge_all_of(schema, all_of, refs)

        out: dict[str, Any] = {}
        for key in ("title", "description"):
            if isinstance(schema.get(key), str) and schema[key]:
                out[key] = schema[key]
        nullable = schema.get("nullable") is True

        types, type_nullable = self._types(schema.get("type"))
        nullable = nullable or type_nullable

        # enum / const
        enum_values: list[str] | None = None
        raw_enum = schema.get("enum")
        if isinstance(raw_enum, list):
            if None in raw_enum:
                nullable = True
            values = [v for v in raw_enum if v is not None]
            if values and all(isinstance(v, str) for v in values):
                enum_values = list(dict.fromkeys(values))
            elif values:
                _add_note(out, "Allowed values: " + ", ".join(_json_text(v) for v in values) + ".")
        if "const" in schema:
            const = schema["const"]
            if const is None:
                nullable = True
            elif isinstance(const, str):
                enum_values = [const]
            elif not types:
                if isinstance(const, bool):
                    types = ["BOOLEAN"]
                elif isinstance(const, int):
                    types = ["INTEGER"]
                elif isinstance(const, float):
                    types = ["NUMBER"]
            if const is not None and not isinstance(const, str):
                _add_note(out, f"Must be {_json_text(const)}.")

        properties = schema.get("properties")
        items = schema.get("items")
        if not types:
            if isinstance(properties, dict):
                types = ["OBJECT"]
            elif items is not None:
                types = ["ARRAY"]
            elif enum_values is not None:
                types = ["STRING"]

        any_of = self._any_of(schema, refs)
        if any_of is not None:
            members, member_nullable = any_of
            nullable = nullable or member_nullable
            if len(members) == 1 and not types:
                merged = members[0]
                for key, value in merged.items():
                    if key == "description" and "description" in out:
                        continue
                    out.setdefault(key, value)
            elif members:
                out["anyOf"] = members

        if len(types) > 1:
            out["anyOf"] = [{"type": t} for t in types] + out.get("anyOf", [])
            types = []
        the_type = types[0] if types else None
        if the_type is not None:
            out["type"] = the_type
        if enum_values is not None and the_type in (None, "STRING"):
            out["enum"] = enum_values
        elif enum_values is not None:
            _add_note(out, "Allowed values: " + ", ".join(enum_values) + ".")

        fmt = schema.get("format")
        if out.get("type") == "STRING" and (
            fmt == "date-time" or (fmt == "enum" and "enum" in out)
        ):
            out["format"] = fmt

        self._bounds(schema, out)
        for key in _COUNTS:
            if _is_count(schema.get(key)):
                out[key] = schema[key]
        if isinstance(schema.get("pattern"), str):
            out["pattern"] = schema["pattern"]

        if isinstance(properties, dict):
            props = {
                name: self.node(value, refs)
                for name, value in properties.items()
                if isinstance(name, str)
            }
            if props:
                out["properties"] = props
                required = schema.get("required")
                if isinstance(required, list):
                    # Names only (a client's schema may hold anything; dict keys must hash).
                    strings = (n for n in required if isinstance(n, str))
                    names = [n for n in dict.fromkeys(strings) if n in props]
                    if names:
                        out["required"] = names
        if isinstance(items, dict) or items is True:
            out["items"] = self.node(items, refs)
        elif isinstance(items, list) and items:
            members = [self.node(item, refs) for item in items]
            out["items"] = members[0] if len(members) == 1 else {"anyOf": members}

        if "default" in schema and "default" not in out.get("description", "").lower():
            _add_note(out, f"(default: {_json_text(schema['default'])})")
        if nullable:
            out["nullable"] = True
        return out

    @staticmethod
    def _types(raw: Any) -> tuple[list[str], bool]:
        names = raw if isinstance(raw, list) else [raw] if raw is not None else []
        nullable = False
        types: list[str] = []
        for name in names:
            if not isinstance(name, str):
                continue
            lowered = name.lower()
            if lowered == "null":
                nullable = True
            elif lowered in _TYPES and _TYPES[lowered] not in types:
                types.append(_TYPES[lowered])
        return types, nullable

    def _any_of(
        self, schema: dict[str, Any], refs: tuple[str, ...]
    ) -> tuple[list[dict[str, Any]], bool] | None:
        raw: list[Any] = []
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                raw.extend(schema[key])
        if not raw:
            return None
        members: list[dict[str, Any]] = []
        nullable = False
        for member in raw:
            if isinstance(member, dict) and (
                member.get("type") == "null" or member.get("const", ...) is None
            ):
                nullable = True
                continue
            cleaned = self.node(member, refs)
            if cleaned.pop("nullable", False):
                nullable = True
            members.append(cleaned)
        if any(not member for member in members):
            members = []  # one member accepts anything: the union constrains nothing
        return members, nullable

    def _merge_all_of(
        self, schema: dict[str, Any], all_of: list[Any], refs: tuple[str, ...]
    ) -> dict[str, Any]:
        """One schema from `schema` and its allOf members (refs resolved first)."""
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        properties: dict[str, Any] = dict(merged.get("properties") or {})
        required: list[Any] = list(merged.get("required") or [])
        for member in all_of:
            while isinstance(member, dict) and isinstance(member.get("$ref"), str):
                ref = member["$ref"]
                if ref in refs or len(refs) >= MAX_REF_DEPTH:
                    break
                refs = (*refs, ref)
                target = self._resolve(ref)
                member = (
                    {**target, **{k: v for k, v in member.items() if k != "$ref"}}
                    if (isinstance(target, dict))
                    else {}
                )
            if not isinstance(member, dict):
                continue
            if isinstance(member.get("properties"), dict):
                properties.update(member["properties"])
            if isinstance(member.get("required"), list):
                required.extend(member["required"])
            for key, value in member.items():
                if key not in ("properties", "required", "$ref", "allOf"):
                    merged.setdefault(key, value)
        if properties:
            merged["properties"] = properties
        if required:
            merged["required"] = required
        return merged

    @staticmethod
    def _bounds(schema: dict[str, Any], out: dict[str, Any]) -> None:
        integer = out.get("type") == "INTEGER"
        for key, exclusive, step, pick in (
            ("minimum", "exclusiveMinimum", 1, max),
            ("maximum", "exclusiveMaximum", -1, min),
        ):
            bound = schema.get(key)
            value: float | None = bound if _is_number(bound) else None
            excl = schema.get(exclusive)
            if isinstance(excl, (int, float)) and not isinstance(excl, bool):
                adjusted = excl + step if integer and float(excl).is_integer() else excl
                value = adjusted if value is None else pick(value, adjusted)
            elif excl is True and value is not None and integer and float(value).is_integer():
                value = value + step  # draft 4: exclusiveMinimum: true next to minimum
            if value is not None:
                out[key] = value
