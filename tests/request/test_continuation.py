"""The continuation suffix format (python/hydra_proxy/continuation.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hydra_proxy import continuation
from hydra_proxy.continuation import RedactedBlock, ThinkingBlock, VerifiedSuffix

KEY = b"k" * 32
BLOCKS = [
    ThinkingBlock("first thought ", "sigA=="),
    RedactedBlock("REDACTED"),
    ThinkingBlock("second 🧠", "sigB"),
]


def reasoning_of(blocks: list[continuation.Block]) -> str:
    return "".join(b.text for b in blocks if isinstance(b, ThinkingBlock))


def test_round_trip_and_span() -> None:
    text = "visible before " + reasoning_of(BLOCKS) + continuation.encode(BLOCKS, KEY) + " after"
    found = continuation.find(text, KEY)
    assert isinstance(found, VerifiedSuffix) and found.blocks == BLOCKS
    assert text[: found.start] == "visible before " and text[found.end :] == " after"


def test_marker_text_inside_the_reasoning_still_verifies() -> None:
    tricky = [ThinkingBlock("about the proxy: " + continuation.PREFIX + "xyz]] and more", "sig")]
    text = reasoning_of(tricky) + continuation.encode(tricky, KEY)
    found = continuation.find(text, KEY)
    assert (
        isinstance(found, VerifiedSuffix)
        and found.blocks == tricky
        and (found.start, found.end) == (0, len(text))
    )


def test_tampering_wrong_key_and_edits_do_not_verify() -> None:
    suffix = continuation.encode(BLOCKS, KEY)
    reasoning = reasoning_of(BLOCKS)
    assert continuation.find(reasoning + suffix, b"other key") is False
    assert continuation.find(reasoning.replace("first", "First") + suffix, KEY) is False
    assert continuation.find(reasoning[1:] + suffix, KEY) is False
    payload_at = len(continuation.PREFIX) + 3
    flipped = (
        suffix[:payload_at] + ("A" if suffix[payload_at] != "A" else "B") + suffix[payload_at + 1 :]
    )
    assert continuation.find(reasoning + flipped, KEY) is False
    assert continuation.find(reasoning + suffix[:-2], KEY) is False
    assert continuation.find("no suffix at all", KEY) is None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.builds(ThinkingBlock, st.text(), st.text()),
            st.builds(RedactedBlock, st.text()),
        ),
        min_size=1,
        max_size=5,
    ),
    st.text(),
    st.text(),
)
def test_any_blocks_round_trip(blocks: list[continuation.Block], before: str, after: str) -> None:
    suffix = continuation.encode(blocks, KEY)
    text = before + reasoning_of(blocks) + suffix + after
    found = continuation.find(text, KEY)
    assert isinstance(found, VerifiedSuffix) and found.blocks == blocks
    assert text[found.start : found.end] == reasoning_of(blocks) + suffix
