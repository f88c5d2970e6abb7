"""The input's upper bound a budget or tpm limit reserves (tokens.input_bound, and
RequestTraits.input_bound: the larger of it and the estimate): whatever text a client
arranges where the estimate samples, the real count is at most BOUND_BYTES_PER_TOKEN
times the reservation (hypothesis over arbitrary mixtures of text, long enough to be
sampled); the crafted prompt that made the sampled estimate 261 times too small; and an
honest prompt not reserved far above its count."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hydra_proxy.config.routes import RequestTraits
from hydra_proxy.tokens import (
    _WINDOW_CHARS,
    _WINDOWS,
    BOUND_BYTES_PER_TOKEN,
    estimate_input_tokens,
    input_bound,
    load_encoding,
)


def real_tokens(text: str) -> int:
    return len(load_encoding().encode_ordinary(text))


def reserved(body: dict[str, object]) -> int:
    traits = RequestTraits(
        "m", estimate=lambda: estimate_input_tokens(body), bound=lambda: input_bound(body)
    )
    return traits.input_bound


PIECES = st.one_of(
    st.text(max_size=40),  # any code points
    st.sampled_from([" ", "  ", "\n", "\t", "the ", "Hello, world. ", "def f(x):\n    ", "0123"]),
    st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), max_size=30),
    st.text(alphabet=st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF), max_size=30),
    st.text(alphabet="!@#$%^&*()[]{}<>?/|~`", max_size=30),
)
MIXTURES = st.lists(st.tuples(PIECES, st.integers(1, 3000)), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MIXTURES, st.booleans())
def test_no_arrangement_of_text_pushes_the_reservation_down(
    mixture: list[tuple[str, int]], in_blocks: bool
) -> None:
    text = "".join(piece * times for piece, times in mixture)
    content: object = [{"type": "text", "text": text}] if in_blocks else text
    body = {"messages": [{"role": "user", "content": content}]}
    real = real_tokens(text)
    assert input_bound(body) * BOUND_BYTES_PER_TOKEN >= real
    assert reserved(body) * BOUND_BYTES_PER_TOKEN >= real


def crafted(chars: int = 200_000) -> str:
    """Dense text (emoji: several tokens each) with spaces where the estimate samples."""
    step = (chars - _WINDOW_CHARS) / (_WINDOWS - 1)
    windows = [(round(i * step), round(i * step) + _WINDOW_CHARS) for i in range(_WINDOWS)]
    rng = random.Random(1)
    dense = [chr(c) for c in range(0x1F300, 0x1F5FF)]
    return "".join(
        " " if any(a <= i < b for a, b in windows) else rng.choice(dense) for i in range(chars)
    )


def test_the_crafted_prompt_is_reserved_within_the_factor() -> None:
    text = crafted()
    body = {"messages": [{"role": "user", "content": text}]}
    real = real_tokens(text)
    assert estimate_input_tokens(body) * 100 < real  # the sampled estimate is fooled
    assert reserved(body) * BOUND_BYTES_PER_TOKEN >= real  # the reservation is not


def test_an_honest_prompt_is_not_reserved_far_above_its_count() -> None:
    text = "The proxy counts what a member may spend before it asks the upstream. " * 3000
    body = {"messages": [{"role": "user", "content": text}]}
    assert reserved(body) <= 1.3 * real_tokens(text)


def test_images_and_documents_count_as_the_estimate_sizes_them() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo" * 50_000}}  # fmt: skip
    body = {"messages": [{"role": "user", "content": [image, {"type": "text", "text": "hi"}]}]}
    assert 1600 <= input_bound(body) < 1700  # not the 550 kB of base64 read as text
