"""The request body's nesting bound: the native core reads the depth off the JSON text,
the pure-Python install walks the parsed value; both give the same answer for every body."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hydra_proxy.json_depth import nested_deeper_than
from support.implementations import NATIVE_MISSING, _native

pytestmark = pytest.mark.skipif(_native is None, reason=NATIVE_MISSING or "native core")

# Strings full of what a byte scan could mistake for structure.
_TRICKY = st.text(alphabet='[]{}"\\,:ab \u00e9\u2028', max_size=12)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | _TRICKY,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TRICKY, inner, max_size=4),
    max_leaves=40,
)


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.integers(min_value=0, max_value=8), st.booleans())
def test_the_text_scan_agrees_with_the_walk(value: Any, limit: int, spaced: bool) -> None:
    text = (
        json.dumps(value, indent=1, ensure_ascii=True).encode() if spaced else orjson.dumps(value)
    )
    expected = depth(value) > limit
    assert nested_deeper_than(value, limit) is expected
    assert _native.json_nested_deeper_than(text, limit) is expected


def test_a_deep_body_is_found_without_recursion() -> None:
    body = b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert _native.json_nested_deeper_than(body, 128)
    assert not _native.json_nested_deeper_than(body, 100_001)
