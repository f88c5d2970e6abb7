"""The JSON-schema sanitiser for Gemini tool declarations (hydra_proxy.gemini.schema)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from hydra_proxy.gemini.schema import (
    MAX_REF_DEPTH,
    SchemaTooLarge,
    function_parameters,
    gemini_schema,
)

FIXTURES = Path(__file__).parent.parent / "fixtures"

# Every key Gemini's Schema object defines that the sanitiser may emit.
ALLOWED_KEYS = {
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
    "items",
    "minimum",
    "maximum",
}
FORBIDDEN_KEYS = {
    "$schema",
    "$ref",
    "$defs",
    "definitions",
    "additionalProperties",
    "propertyNames",
    "const",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "input_examples",
    "examples",
    "default",
    "oneOf",
    "allOf",
}
GEMINI_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}


def schema_problems(node: Any, path: str = "$") -> list[str]:
    """Everything in a sanitised schema Gemini would reject (walks schema positions only:
    property NAMES are data, a property may be called "const")."""
    if not isinstance(node, dict):
        return [f"{path}: not an object"]
    problems = [f"{path}.{key}: key not accepted" for key in node if key not in ALLOWED_KEYS]
    problems += [f"{path}.{key}: forbidden key" for key in node if key in FORBIDDEN_KEYS]
    if "type" in node and node["type"] not in GEMINI_TYPES:
        problems.append(f"{path}.type: {node['type']!r}")
    if "format" in node and (
        node.get("type") != "STRING" or node["format"] not in ("date-time", "enum")
    ):
        problems.append(f"{path}.format: {node['format']!r}")
    if "enum" in node and not all(isinstance(v, str) for v in node["enum"]):
        problems.append(f"{path}.enum: non-string value")
    properties = node.get("properties")
    if properties is not None:
        if not properties:
            problems.append(f"{path}.properties: empty")
        for name, value in properties.items():
            problems += schema_problems(value, f"{path}.properties[{name}]")
    for name in node.get("required", []):
        if name not in (properties or {}):
            problems.append(f"{path}.required: {name!r} names no property")
    if "items" in node:
        problems += schema_problems(node["items"], f"{path}.items")
    for i, member in enumerate(node.get("anyOf", [])):
        problems += schema_problems(member, f"{path}.anyOf[{i}]")
    return problems


def _claude_code_tools() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted((FIXTURES / "claude-code").glob("*.json")):
        body = orjson.loads(path.read_bytes())["body"]
        for tool in body["tools"]:
            found.append((f"{path.stem}:{tool['name']}", tool["input_schema"]))
    return found


def _codex_tools() -> list[tuple[str, dict[str, Any]]]:
    body = orjson.loads((FIXTURES / "gemini" / "codex-request-exec-first-turn.json").read_bytes())
    found = []

    def visit(tools: list[dict[str, Any]], prefix: str) -> None:
        for tool in tools:
            if tool.get("type") == "namespace":
                visit(tool["tools"], f"{prefix}{tool['name']}.")
            elif "parameters" in tool:
                found.append((f"codex:{prefix}{tool['name']}", tool["parameters"]))

    visit(body["tools"], "")
    return found


CAPTURED = _claude_code_tools() + _codex_tools()


def test_captured_requests_cover_the_schemas_that_broke_gemini() -> None:
    raw = orjson.dumps([schema for _, schema in CAPTURED]).decode()
    for key in ("$schema", "additionalProperties", "exclusiveMinimum", "default"):
        assert f'"{key}"' in raw
    assert len(CAPTURED) >= 4 * 12 + 8  # 4 Claude Code requests x 12 tools, Codex tools


@pytest.mark.parametrize(("name", "schema"), CAPTURED, ids=[name for name, _ in CAPTURED])
def test_every_captured_tool_schema_sanitises_clean(name: str, schema: dict[str, Any]) -> None:
    before = orjson.dumps(schema)
    params = function_parameters(schema)
    assert orjson.dumps(schema) == before  # input untouched
    if params is None:
        assert not schema.get("properties")
        return
    assert params["type"] == "OBJECT"
    assert schema_problems(params) == []
    # Nothing the model needs is lost: every property and required name survives.
    assert set(params["properties"]) == set(schema["properties"])
    assert set(params.get("required", [])) == set(schema.get("required", []))


def test_claude_code_read_tool_keeps_integer_bounds() -> None:
    schema = dict(_claude_code_tools())["request-plain:Read"]
    offset = function_parameters(schema)["properties"]["offset"]  # type: ignore[index]
    assert offset["type"] == "INTEGER"
    assert offset["minimum"] == 0


# ------------------------------------------------------------------ one rule per row

RULES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "$schema dropped",
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"},
        {"type": "STRING"},
    ),
    (
        "additionalProperties at the root",
        {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
        {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}},
    ),
    (
        "additionalProperties inside anyOf",
        {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}},
                    "additionalProperties": False,
                },
                {"type": "string"},
            ]
        },
        {
            "anyOf": [
                {"type": "OBJECT", "properties": {"x": {"type": "INTEGER"}}},
                {"type": "STRING"},
            ]
        },
    ),
    (
        "additionalProperties inside items",
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"k": {"type": "string"}},
                "additionalProperties": {"type": "string"},
            },
        },
        {"type": "ARRAY", "items": {"type": "OBJECT", "properties": {"k": {"type": "STRING"}}}},
    ),
    (
        "propertyNames",
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "propertyNames": {"pattern": "^a"},
        },
        {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}},
    ),
    ("string const -> enum", {"const": "fixed"}, {"type": "STRING", "enum": ["fixed"]}),
    ("typed string const", {"type": "string", "const": "x"}, {"type": "STRING", "enum": ["x"]}),
    (
        "boolean const -> type + note",
        {"const": True},
        {"type": "BOOLEAN", "description": "Must be true."},
    ),
    (
        "exclusiveMinimum number -> minimum",
        {"type": "number", "exclusiveMinimum": 0.5},
        {"type": "NUMBER", "minimum": 0.5},
    ),
    (
        "integer exclusiveMinimum stays exact",
        {"type": "integer", "exclusiveMinimum": 0},
        {"type": "INTEGER", "minimum": 1},
    ),
    (
        "integer exclusiveMaximum stays exact",
        {"type": "integer", "exclusiveMaximum": 10},
        {"type": "INTEGER", "maximum": 9},
    ),
    (
        "draft-4 boolean exclusiveMinimum",
        {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
        {"type": "INTEGER", "minimum": 1},
    ),
    (
        "non-numeric exclusiveMaximum dropped",
        {"type": "number", "exclusiveMaximum": "ten"},
        {"type": "NUMBER"},
    ),
    ("format uri dropped", {"type": "string", "format": "uri"}, {"type": "STRING"}),
    (
        "format date-time kept",
        {"type": "string", "format": "date-time"},
        {"type": "STRING", "format": "date-time"},
    ),
    ("format on number dropped", {"type": "number", "format": "double"}, {"type": "NUMBER"}),
    (
        "input_examples / examples / example",
        {"type": "string", "examples": ["a"], "input_examples": [{}], "example": "b"},
        {"type": "STRING"},
    ),
    (
        "default -> description note",
        {"type": "integer", "description": "How many.", "default": 5},
        {"type": "INTEGER", "description": "How many. (default: 5)"},
    ),
    (
        "default already described",
        {"type": "integer", "description": "Count (default 5)", "default": 5},
        {"type": "INTEGER", "description": "Count (default 5)"},
    ),
    ("type array with null", {"type": ["string", "null"]}, {"type": "STRING", "nullable": True}),
    (
        "type array of two",
        {"type": ["string", "integer"]},
        {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
    ),
    (
        "anyOf with null member",
        {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "d"},
        {"type": "STRING", "description": "d", "nullable": True},
    ),
    (
        "oneOf -> anyOf",
        {"oneOf": [{"type": "string"}, {"type": "number"}]},
        {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]},
    ),
    ("anyOf with an unconstrained member", {"anyOf": [{"type": "string"}, {}]}, {}),
    (
        "allOf merged",
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {"type": "integer"}}},
            ]
        },
        {
            "type": "OBJECT",
            "properties": {"a": {"type": "STRING"}, "b": {"type": "INTEGER"}},
            "required": ["a"],
        },
    ),
    (
        "$ref to $defs inlined",
        {
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/Point"}},
            "$defs": {
                "Point": {
                    "type": "object",
                    "properties": {"x": {"type": "number"}},
                    "additionalProperties": False,
                }
            },
        },
        {
            "type": "OBJECT",
            "properties": {"p": {"type": "OBJECT", "properties": {"x": {"type": "NUMBER"}}}},
        },
    ),
    (
        "$ref to definitions, sibling description wins",
        {
            "type": "object",
            "properties": {"c": {"$ref": "#/definitions/Color", "description": "the colour"}},
            "definitions": {
                "Color": {"type": "string", "enum": ["red", "blue"], "description": "a colour"}
            },
        },
        {
            "type": "OBJECT",
            "properties": {
                "c": {"description": "the colour", "type": "STRING", "enum": ["red", "blue"]}
            },
        },
    ),
    (
        "recursive $ref -> plain object",
        {
            "$ref": "#/$defs/Node",
            "$defs": {
                "Node": {
                    "type": "object",
                    "description": "tree",
                    "properties": {"child": {"$ref": "#/$defs/Node"}, "v": {"type": "string"}},
                }
            },
        },
        {
            "type": "OBJECT",
            "description": "tree",
            "properties": {
                "child": {"type": "OBJECT", "description": "tree"},
                "v": {"type": "STRING"},
            },
        },
    ),
    (
        "unresolvable $ref",
        {"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}},
        {"type": "OBJECT", "properties": {"x": {}}},
    ),
    ("empty properties dropped", {"type": "object", "properties": {}}, {"type": "OBJECT"}),
    (
        "required naming no property",
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["a", "ghost", "a"],
        },
        {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "required": ["a"]},
    ),
    ("required with no properties", {"type": "object", "required": ["x"]}, {"type": "OBJECT"}),
    (
        "required holding objects and arrays",
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": [{"a": 1}, ["a"], "a"],
        },
        {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "required": ["a"]},
    ),
    (
        "type inferred from properties",
        {"properties": {"a": {"type": "boolean"}}},
        {"type": "OBJECT", "properties": {"a": {"type": "BOOLEAN"}}},
    ),
    (
        "type inferred from items",
        {"items": {"type": "string"}},
        {"type": "ARRAY", "items": {"type": "STRING"}},
    ),
    ("enum with null", {"enum": ["a", None]}, {"type": "STRING", "enum": ["a"], "nullable": True}),
    (
        "integer enum -> note",
        {"type": "integer", "enum": [1, 2]},
        {"type": "INTEGER", "description": "Allowed values: 1, 2."},
    ),
    (
        "tuple items -> anyOf",
        {"type": "array", "items": [{"type": "string"}, {"type": "number"}]},
        {"type": "ARRAY", "items": {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]}},
    ),
    (
        "counts and pattern kept",
        {"type": "string", "minLength": 1, "maxLength": 9, "pattern": "^a+$"},
        {"type": "STRING", "minLength": 1, "maxLength": 9, "pattern": "^a+$"},
    ),
    (
        "unknown keys dropped",
        {
            "type": "array",
            "items": {"type": "string"},
            "uniqueItems": True,
            "not": {},
            "if": {},
            "then": {},
            "$comment": "x",
        },
        {"type": "ARRAY", "items": {"type": "STRING"}},
    ),
]


@pytest.mark.parametrize(("rule", "schema", "expected"), RULES, ids=[r[0] for r in RULES])
def test_rule(rule: str, schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert gemini_schema(schema) == expected
    assert schema_problems(gemini_schema(schema)) == []


def test_a_property_called_like_a_keyword_is_data() -> None:
    schema = {
        "type": "object",
        "properties": {"const": {"type": "string"}, "default": {"type": "integer"}},
    }
    assert gemini_schema(schema)["properties"] == {
        "const": {"type": "STRING"},
        "default": {"type": "INTEGER"},
    }


def test_function_parameters_without_properties_is_none() -> None:
    assert (
        function_parameters({"type": "object", "properties": {}, "additionalProperties": False})
        is None
    )
    assert function_parameters({"type": "object"}) is None


def test_ref_depth_is_bounded() -> None:
    defs = {
        f"D{i}": {"type": "object", "properties": {"n": {"$ref": f"#/$defs/D{i + 1}"}}}
        for i in range(40)
    }
    out = gemini_schema({"$ref": "#/$defs/D0", "$defs": defs})
    depth = 0
    while "properties" in out:
        out = out["properties"]["n"]
        depth += 1
    assert depth == MAX_REF_DEPTH
    assert out == {"type": "OBJECT"}


def test_ref_bomb_is_refused() -> None:
    defs: dict[str, Any] = {"L0": {"type": "string"}}
    for i in range(1, 12):
        defs[f"L{i}"] = {
            "type": "object",
            "properties": {f"p{k}": {"$ref": f"#/$defs/L{i - 1}"} for k in range(10)},
        }
    with pytest.raises(SchemaTooLarge):
        gemini_schema({"$ref": "#/$defs/L11", "$defs": defs})
