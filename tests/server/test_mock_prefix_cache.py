"""The mock's prompt cache by prefix: what it counts as cached, per key, in the order a
provider renders a prompt."""

from __future__ import annotations

from collections.abc import Collection

import orjson

from hydra_proxy.mock.prefix_cache import PrefixCache, prompt_bytes, shared_prefix

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def chat(*texts: str, **extra: object) -> dict[str, object]:
    return {"model": "m", "messages": [{"role": "user", "content": t} for t in texts],
            "tools": TOOLS, **extra}  # fmt: skip


def test_shared_prefix() -> None:
    assert shared_prefix(b"", b"abc") == 0
    assert shared_prefix(b"abcdef", b"abcxyz") == 3
    assert shared_prefix(b"abc", b"abc") == 3
    assert shared_prefix(b"abc", b"abcdef") == 3


def test_the_prompt_is_rendered_tools_first_without_settings() -> None:
    body = chat("hi", max_tokens=5, stream=True)
    assert prompt_bytes("chat", body) == orjson.dumps(TOOLS) + orjson.dumps(body["messages"])
    gemini = {"contents": [1], "systemInstruction": {"parts": []}, "generationConfig": {}}
    assert prompt_bytes("gemini:m:generateContent:False", gemini) == b'{"parts":[]}[1]'


def test_cached_tokens_are_the_prefix_shared_with_the_last_request_of_the_key() -> None:
    cache = PrefixCache()
    first = chat("a" * 400)
    prompt, cached = cache.usage("chat", first, {})
    assert cached == 0 and prompt == -(-len(prompt_bytes("chat", first)) // 4)
    grown = chat("a" * 400, "b" * 400)
    prompt, cached = cache.usage("chat", grown, {})
    common = shared_prefix(prompt_bytes("chat", first), prompt_bytes("chat", grown))
    assert cached == common // 4 and 0 < cached < prompt
    # Another key has its own last request; settings change nothing.
    other = chat("a" * 400, "b" * 400, prompt_cache_key="other", max_tokens=9)
    assert cache.usage("chat", other, {})[1] == 0
    again = chat("a" * 400, "b" * 400, prompt_cache_key="other")
    prompt, cached = cache.usage("chat", again, {})
    assert cached == len(prompt_bytes("chat", again)) // 4
    # The header names a key where the body has none.
    assert cache.usage("chat", first, {"x-mock-cache-key": "h"})[1] == 0
    cache.clear()
    assert cache.usage("chat", grown, {})[1] == 0


EPH = {"type": "ephemeral"}


def messages(count: int, marked: Collection[int] = (), top: bool = False) -> dict[str, object]:
    """A Messages request of `count` user text blocks, the `marked` ones breakpoints."""
    blocks: list[dict[str, object]] = [
        {"type": "text", "text": f"block {i} " + "x" * 40} for i in range(count)
    ]
    for i in marked:
        blocks[i]["cache_control"] = EPH
    body: dict[str, object] = {"model": "claude", "system": "Be brief.",
                               "messages": [{"role": "user", "content": blocks}]}  # fmt: skip
    if top:
        body["cache_control"] = EPH
    return body


def test_anthropic_caches_only_at_breakpoints() -> None:
    cache = PrefixCache()
    # No breakpoint: nothing written, nothing read, however much is shared.
    assert cache.usage("anthropic", messages(4), {})[1] == 0
    assert cache.usage("anthropic", messages(5), {})[1] == 0
    # Written at block 3; read by a later request whose breakpoint is at or after it.
    assert cache.usage("anthropic", messages(4, {3}), {})[1] == 0
    prompt, cached = cache.usage("anthropic", messages(6, {5}), {})
    assert 0 < cached < prompt
    assert cached == cache.usage("anthropic", messages(6, {3}), {})[1]  # the same prefix
    # Without a breakpoint of its own, a request reads nothing.
    assert cache.usage("anthropic", messages(6), {})[1] == 0
    # The same request again reads all of it (cache_control itself is not rendered).
    prompt, cached = cache.usage("anthropic", messages(6, {5}), {})
    assert cached >= prompt - 1


def test_anthropic_looks_back_twenty_blocks_and_automatic_caching_marks_the_last() -> None:
    cache = PrefixCache()
    cache.usage("anthropic", messages(2, top=True), {})  # automatic: written at the last block
    assert cache.usage("anthropic", messages(22, {21}), {})[1] > 0  # 20 blocks back: read
    cache.clear()
    cache.usage("anthropic", messages(2, {1}), {})
    assert cache.usage("anthropic", messages(23, {22}), {})[1] == 0  # 21 back: too far
    assert cache.usage("anthropic", messages(23, {1, 22}), {})[1] > 0  # its own breakpoint


def test_anthropic_renders_a_string_as_its_text_block_and_skips_the_billing_header() -> None:
    cache = PrefixCache()
    first: dict[str, object] = {
        "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=1.a;"},
                   {"type": "text", "text": "Be brief."}],
        "messages": [{"role": "user", "content": "q" * 80},
                     {"role": "assistant", "content": [{"type": "text", "text": "a" * 80,
                                                        "cache_control": EPH}]}],
    }  # fmt: skip
    cache.usage("anthropic", first, {})
    second: dict[str, object] = {
        "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=1.b;"},
                   {"type": "text", "text": "Be brief."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "q" * 80}]},
                     {"role": "assistant", "content": [{"type": "text", "text": "a" * 80}]},
                     {"role": "user", "content": [{"type": "text", "text": "next",
                                                   "cache_control": EPH}]}],
    }  # fmt: skip
    prompt, cached = cache.usage("anthropic", second, {})
    assert 40 < cached < prompt  # all but the new message
