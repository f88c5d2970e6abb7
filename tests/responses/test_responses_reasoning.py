"""The reasoning carriers (hydra_proxy.responses.reasoning): restored only when they verify.

Client carrier: a reasoning item's ``encrypted_content`` holding Claude's signed/redacted
thinking or proxy-signed provider reasoning. Upstream carrier: a thinking block signature
holding an OpenAI reasoning item. Any change to any byte, another key, or no key: nothing.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hydra_proxy import continuation
from hydra_proxy.responses.reasoning import (
    CARRIER_PREFIX,
    UPSTREAM_PREFIX,
    decode_carrier,
    encode_carrier,
    is_carrier,
    sign_upstream_item,
    verify_upstream_item,
)
from hydra_proxy.signature import is_proxy_signature, sign_thinking, verify_thinking

KEY = b"responses-test-key-0123456789abcdef"
OTHER = b"another-key-0123456789abcdefghijk"
BLOCKS = [
    {
        "type": "thinking",
        "thinking": "First, \U0001f600 astral ünd \n lines.",
        "signature": "EqQBsig1",
    },
    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
    {"type": "thinking", "thinking": "", "signature": "EqQBsig2"},
    # Reasoning that talks about the carrier itself must not confuse it.
    {"type": "thinking", "thinking": continuation.PREFIX + "x.y]]", "signature": "s3"},
    {"type": "thinking", "thinking": "Need ls.", "signature": sign_thinking("Need ls.", KEY)},
]


def test_carrier_round_trip() -> None:
    value = encode_carrier(BLOCKS, KEY)
    assert value.startswith(CARRIER_PREFIX) and is_carrier(value)
    assert decode_carrier(value, KEY) == BLOCKS
    assert value.isascii() is False  # the texts are carried as they are, not encoded


def test_carrier_is_the_continuation_suffix() -> None:
    # One definition of the format: prefix + texts + exactly the Chat continuation suffix.
    value = encode_carrier(BLOCKS[:2], KEY)
    suffix = continuation.encode(
        [
            continuation.ThinkingBlock(BLOCKS[0]["thinking"], "EqQBsig1"),
            continuation.RedactedBlock("EmwKAhgBEgy3va3pzix"),
        ],
        KEY,
    )
    assert value == CARRIER_PREFIX + BLOCKS[0]["thinking"] + suffix


def _variants(value: str) -> list[str]:
    body = value[len(CARRIER_PREFIX) :]
    at = body.index(continuation.PREFIX)
    return [
        value.replace("First", "Frist", 1),  # the thinking text
        value.replace(CARRIER_PREFIX, "hydra-reasoning:v2:", 1),  # the version
        value[:-3] + ("A" if value[-3] != "A" else "B") + value[-2:],  # the MAC
        value[: len(CARRIER_PREFIX) + at + len(continuation.PREFIX) + 4]
        + "x"
        + value[len(CARRIER_PREFIX) + at + len(continuation.PREFIX) + 5 :],  # the block list
        value + " ",  # anything after it
        "x" + value,  # anything before it
        value[:-2],  # truncated
        CARRIER_PREFIX + body[at:],  # the texts removed
    ]


@pytest.mark.parametrize("index", range(8))
def test_tampered_carrier_is_refused(index: int) -> None:
    value = encode_carrier(BLOCKS, KEY)
    tampered = _variants(value)[index]
    assert tampered != value
    assert decode_carrier(tampered, KEY) is None


def test_carrier_needs_the_key() -> None:
    value = encode_carrier(BLOCKS, KEY)
    assert decode_carrier(value, OTHER) is None
    assert decode_carrier(value, None) is None
    assert decode_carrier(None, KEY) is None
    assert decode_carrier(12, KEY) is None
    assert decode_carrier("gAAAAABo-6wE6H4S9A886ZkwXcvvHqZ6Vx5BtpYv", KEY) is None


def test_upstream_item_round_trip() -> None:
    signature = sign_upstream_item("Summary.", "rs_01", "gAAAAABo-6wE", KEY)
    assert signature.startswith(UPSTREAM_PREFIX)
    assert verify_upstream_item("Summary.", signature, KEY) == {
        "id": "rs_01",
        "encrypted_content": "gAAAAABo-6wE",
    }
    # A proxy signature: stripped before Anthropic, and the Chat writer does not replay it.
    assert is_proxy_signature(signature)
    assert not verify_thinking("Summary.", signature, KEY)


def test_upstream_item_refused_when_anything_changes() -> None:
    signature = sign_upstream_item("Summary.", "rs_01", "gAAAAABo-6wE", KEY)
    item_b64, mac_b64 = signature[len(UPSTREAM_PREFIX) :].split(".")
    swapped = sign_upstream_item("Summary.", "rs_02", "gAAAAABo-other", KEY)
    other_item = swapped[len(UPSTREAM_PREFIX) :].split(".")[0]
    for thinking, sig, key in [
        ("Summary!", signature, KEY),  # the text
        ("Summary.", signature, OTHER),  # the key
        ("Summary.", signature, b""),  # no key
        ("Summary.", UPSTREAM_PREFIX + other_item + "." + mac_b64, KEY),  # the item
        ("Summary.", UPSTREAM_PREFIX + item_b64 + "." + mac_b64[:-2], KEY),  # the MAC
        ("Summary.", UPSTREAM_PREFIX + item_b64, KEY),  # no MAC
        ("Summary.", UPSTREAM_PREFIX + "!!." + mac_b64, KEY),  # not base64
        ("Summary.", sign_thinking("Summary.", KEY), KEY),  # a plain proxy signature
        ("Summary.", None, KEY),
    ]:
        assert verify_upstream_item(thinking, sig, key) is None


_block = st.one_of(
    st.builds(
        lambda text, sig: {"type": "thinking", "thinking": text, "signature": sig},
        st.text(),
        st.text(alphabet=st.characters(codec="ascii"), max_size=40),
    ),
    st.builds(
        lambda data: {"type": "redacted_thinking", "data": data},
        st.text(alphabet=st.characters(codec="ascii"), min_size=1, max_size=40),
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_block, min_size=1, max_size=5), st.data())
def test_carrier_property(blocks: list[dict[str, str]], data: st.DataObject) -> None:
    value = encode_carrier(blocks, KEY)
    assert decode_carrier(value, KEY) == blocks
    at = data.draw(st.integers(min_value=len(CARRIER_PREFIX), max_value=len(value) - 1))
    replacement = data.draw(st.characters(codec="utf-8").filter(lambda c: c != value[at]))
    changed = value[:at] + replacement + value[at + 1 :]
    # Refused, or (a base64 character whose unused low bits changed) the very same blocks:
    # never different content.
    assert decode_carrier(changed, KEY) in (None, blocks)
