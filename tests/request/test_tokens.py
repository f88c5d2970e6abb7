"""Token counting: the packaged o200k vocabulary, the request walk, images, caching and the
calibration against real Anthropic count_tokens answers."""

from __future__ import annotations

import base64
import copy
import hashlib
import math
import os
import shutil
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest

from hydra_proxy import tokens

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES = Path(__file__).parent.parent / "fixtures"
DATA = ROOT / "python" / "hydra_proxy" / "data"


def _fixture(name: str) -> dict[str, Any]:
    body: dict[str, Any] = orjson.loads((FIXTURES / name).read_bytes())["body"]
    return body


def _claude_code(name: str) -> dict[str, Any]:
    return _fixture(f"claude-code/{name}.json")


# --- the tokenizer ------------------------------------------------------------------


def test_known_o200k_token_ids() -> None:
    enc = tokens.load_encoding()
    # Published o200k_base answers: tiktoken-rs tests/tiktoken.rs (o200k_base_test) and the
    # "hello world" check found in many o200k ports.
    assert enc.encode_ordinary("hello world") == [24912, 2375]
    assert enc.encode_ordinary("This is a test         with a lot of spaces") == [
        2500, 382, 261, 1746, 269, 483, 261, 3261, 328, 18608,
    ]  # fmt: skip
    assert enc.encode("<|endoftext|>", allowed_special="all") == [199999]
    assert enc.n_vocab == 200_019
    assert enc.decode(enc.encode_ordinary("ひらがなカタカナ漢字")) == "ひらがなカタカナ漢字"


def test_text_tokens_treats_special_tokens_and_surrogates_as_text() -> None:
    assert tokens.text_tokens("") == 0
    assert tokens.text_tokens("hello world") == 2
    assert tokens.text_tokens("<|endoftext|>") > 1  # ordinary text, never the special id
    assert tokens.text_tokens("\ud800 a lone surrogate from JSON " * 10) > 0
    long = "Please explain what Python is. " * 10
    assert tokens.text_tokens(long) == len(tokens.load_encoding().encode_ordinary(long))


def test_encoding_is_loaded_once() -> None:
    assert tokens.load_encoding() is tokens.load_encoding()


def test_vocabulary_file_is_the_pinned_one() -> None:
    data = (DATA / tokens.VOCABULARY_FILE).read_bytes()
    assert hashlib.sha256(data).hexdigest() == tokens.VOCABULARY_SHA256
    # The hash tiktoken pins for o200k_base (tiktoken_ext/openai_public.py).
    assert tokens.VOCABULARY_SHA256 == (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
    )
    sources = (DATA / "SOURCES.md").read_text()
    assert tokens.VOCABULARY_SHA256 in sources
    assert "tiktoken-rs" in sources and "MIT" in sources


def test_a_corrupt_vocabulary_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_encoding", None)
    monkeypatch.setattr(tokens, "_read_vocabulary", lambda: b"IQ== 0\n")
    with pytest.raises(ValueError, match="sha256"):
        tokens.load_encoding()


_NO_NETWORK = r"""
import os, socket, sys, tempfile

def refuse(*args, **kwargs):
    raise OSError("network access attempted")

class NoSocket(socket.socket):
    def __init__(self, *args, **kwargs):
        refuse()

socket.socket = NoSocket
socket.create_connection = refuse
socket.getaddrinfo = refuse

from hydra_proxy import tokens
n = tokens.count_tokens({"system": "You are a scientist",
                         "messages": [{"role": "user", "content": "Hello, Claude"}]})
assert "requests" not in sys.modules, "the HTTP client behind tiktoken's downloads was imported"
print(n)
"""


def test_vocabulary_loads_with_no_network_and_writes_no_cache(tmp_path: Path) -> None:
    # A fresh process (nothing loaded yet) whose sockets all fail, with tiktoken's download
    # cache pointed at an empty directory: counting must work and leave it empty.
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIKTOKEN", "DATA_GYM"))}
    env.update(
        TIKTOKEN_CACHE_DIR=str(cache),
        TMPDIR=str(tmp_path),
        http_proxy="http://192.0.2.1:9",
        https_proxy="http://192.0.2.1:9",
    )
    result = subprocess.run(
        [sys.executable, "-c", _NO_NETWORK],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == 14
    assert list(cache.iterdir()) == []
    assert not (tmp_path / "data-gym-cache").exists()


# --- calibration against Anthropic --------------------------------------------------

# Real Anthropic answers: the recorded count_tokens call (pydantic-ai cassette, see
# fixtures/SOURCES.md) and the two examples with their bodies in Anthropic's token-counting
# guide (claude-opus-4-6: 14 tokens without tools, 403 with the get_weather tool).
_GET_WEATHER = {
    "name": "get_weather",
    "description": "Get the current weather in a given location",
    "input_schema": {
        "type": "object",
        "properties": {
            "location": {
                "type": "string",
                "description": "The city and state, e.g. San Francisco, CA",
            }
        },
        "required": ["location"],
    },
}
CALIBRATION: list[tuple[str, dict[str, Any], int]] = [
    (
        "recorded pydantic-count-tokens.1",
        _fixture("anthropic/pydantic-count-tokens.1.request.json"),
        orjson.loads((FIXTURES / "anthropic/pydantic-count-tokens.1.response.json").read_bytes())[
            "body"
        ]["input_tokens"],
    ),
    (
        "docs: system + one message",
        {
            "model": "claude-opus-4-6",
            "system": "You are a scientist",
            "messages": [{"role": "user", "content": "Hello, Claude"}],
        },
        14,
    ),
    (
        "docs: one tool",
        {
            "model": "claude-opus-4-6",
            "tools": [_GET_WEATHER],
            "messages": [{"role": "user", "content": "What's the weather like in San Francisco?"}],
        },
        403,
    ),
]


@pytest.mark.parametrize(("name", "body", "expected"), CALIBRATION, ids=[c[0] for c in CALIBRATION])
def test_calibration_against_anthropic(name: str, body: dict[str, Any], expected: int) -> None:
    ours = tokens.count_tokens(body)
    ratio = ours / expected
    print(f"{name}: ours {ours} / Anthropic {expected} = {ratio:.3f}")
    assert 0.9 <= ratio <= 1.1, (name, ours, expected)


def test_the_recorded_fixture_is_the_request_that_was_answered() -> None:
    # count_tokens.2 is the same prompt sent for real: 1111 cached + 3 uncached input tokens.
    usage = orjson.loads(
        (FIXTURES / "anthropic/pydantic-count-tokens.2.response.json").read_bytes()
    )["body"]["usage"]
    assert usage["cache_read_input_tokens"] + usage["input_tokens"] == 1114
    second = _fixture("anthropic/pydantic-count-tokens.2.request.json")
    first = _fixture("anthropic/pydantic-count-tokens.1.request.json")
    assert tokens.count_tokens(second) == tokens.count_tokens(first)


def test_claude_code_request_counts_everything() -> None:
    body = _claude_code("request-plain")
    total = tokens.count_tokens(body)
    chars = len(orjson.dumps([body["system"], body["messages"], body["tools"]]))
    assert chars / 6 < total < chars / 2.5, (total, chars)
    # System, tools and messages each count (CLIProxyAPI #679 ignored system and tools).
    without_system = tokens.count_tokens({**body, "system": []})
    without_tools = tokens.count_tokens({**body, "tools": []})
    without_messages = tokens.count_tokens({**body, "messages": []})
    system_tokens = total - without_system
    tool_tokens = total - without_tools
    assert system_tokens > 1000 and tool_tokens > 5000 and total - without_messages > 2000
    # A tool with defer_loading is not in the model's context.
    (deferred,) = (t for t in body["tools"] if t.get("defer_loading"))
    assert tokens.count_tokens(
        {**body, "tools": [t for t in body["tools"] if t is not deferred]}
    ) == (total)


def test_claude_code_follow_up_requests_grow() -> None:
    plain = tokens.count_tokens(_claude_code("request-plain"))
    after = _claude_code("request-after-tool-result")
    signed = _claude_code("request-replaying-signed-thinking")
    assert tokens.count_tokens(after) > plain
    # The replayed thinking block counts its text, not its signature.
    (thinking,) = (
        block
        for message in signed["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "thinking"
    )
    assert tokens.count_tokens(signed) == tokens.count_tokens(after) + 1 + tokens.text_tokens(
        thinking["thinking"]
    )
    resigned = copy.deepcopy(signed)
    for message in resigned["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "thinking":
                block["signature"] = "x" * 5000
    assert tokens.count_tokens(resigned) == tokens.count_tokens(signed)


def test_blocks_count_their_text() -> None:
    base = {"messages": [{"role": "user", "content": "hi"}]}
    n = tokens.count_tokens(base)
    text = "The quick brown fox jumps over the lazy dog. " * 20
    k = tokens.text_tokens(text)

    def with_blocks(*blocks: dict[str, Any]) -> int:
        return tokens.count_tokens(
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": list(blocks)},
                ]
            }
        )

    overhead = with_blocks() - n  # one more message, no content
    assert overhead > 0
    assert with_blocks({"type": "text", "text": text}) - n - overhead >= k
    assert with_blocks({"type": "thinking", "thinking": text, "signature": "s"}) - n - overhead >= k
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": text}}
    assert with_blocks(tool_use) - n - overhead >= tokens.text_tokens(
        orjson.dumps(tool_use["input"]).decode()
    )
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [{"type": "text", "text": text}],
    }
    assert with_blocks(result) - n - overhead >= k
    assert with_blocks({**result, "content": text}) - n - overhead >= k
    document = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": text},
    }
    assert with_blocks(document) - n - overhead >= k
    redacted = {"type": "redacted_thinking", "data": "A" * 4000}
    assert with_blocks(redacted) - n - overhead >= 700  # ~3000 encrypted bytes


def test_tools_count_the_tool_use_prompt_and_definitions() -> None:
    base = {"messages": [{"role": "user", "content": "hi"}]}
    n = tokens.count_tokens(base)
    one = tokens.count_tokens({**base, "tools": [_GET_WEATHER]})
    assert one - n == 346 + 2 + 8 + 34  # prompt + name + description + compact schema
    forced = tokens.count_tokens({**base, "tools": [_GET_WEATHER], "tool_choice": {"type": "any"}})
    assert one - forced == 346 - 313
    bash = tokens.count_tokens({**base, "tools": [{"type": "bash_20250124", "name": "bash"}]})
    assert bash - n == 346 + 245
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    assert tokens.count_tokens({**base, "tools": [search]}) - n > 346
    assert tokens.count_tokens({**base, "tools": []}) == n


def test_never_zero_and_never_raises_on_odd_bodies() -> None:
    assert tokens.count_tokens({}) >= 1
    assert tokens.estimate_input_tokens({}) >= 1
    assert tokens.estimate_input_tokens({"messages": []}) >= 1
    odd: dict[str, Any] = {
        "system": 42,
        "messages": [None, "x", {"content": {"type": "text", "text": None}}, {"content": [1, [2]]}],
        "tools": [None, {"name": 5, "input_schema": {"a": {1, 2}}}],
    }
    assert tokens.estimate_input_tokens(odd) >= 1


def test_fallback_when_the_tokenizer_cannot_load(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def missing() -> bytes:
        raise FileNotFoundError("o200k_base.tiktoken")

    monkeypatch.setattr(tokens, "_encoding", None)
    monkeypatch.setattr(tokens, "_encoding_failed", False)
    monkeypatch.setattr(tokens, "_read_vocabulary", missing)
    body = {"messages": [{"role": "user", "content": "x" * 400}]}
    assert tokens.estimate_input_tokens(body) == 100
    assert tokens.estimate_input_tokens(body) == 100
    assert "tokenizer unavailable" in caplog.text
    with pytest.raises(FileNotFoundError):
        tokens.count_tokens(body)


# --- the cache ----------------------------------------------------------------------


def test_cache_gives_the_same_count_warm_and_cold() -> None:
    body = _claude_code("request-after-tool-result")
    tokens._cache.clear()
    cold = tokens.count_tokens(body)
    misses = tokens._cache.misses
    assert misses > 0
    warm = tokens.count_tokens(body)
    assert warm == cold
    assert tokens._cache.misses == misses  # everything came from the cache
    # The counts equal a count done without the cache.
    tokens._cache.clear()
    original_min = tokens._CACHE_MIN_CHARS
    try:
        tokens._CACHE_MIN_CHARS = 10**9
        assert tokens.count_tokens(body) == cold
    finally:
        tokens._CACHE_MIN_CHARS = original_min


def test_a_changed_message_changes_the_count() -> None:
    body = _claude_code("request-after-tool-result")
    before = tokens.count_tokens(body)
    changed = copy.deepcopy(body)
    first_text = changed["messages"][0]["content"][0]
    first_text["text"] += "\n\nAnd one more sentence, for the count to notice."
    assert tokens.count_tokens(changed) > before
    assert tokens.count_tokens(body) == before  # the original is still counted as before
    grown = copy.deepcopy(body)
    grown["messages"].append({"role": "assistant", "content": [{"type": "text", "text": "Done."}]})
    assert tokens.count_tokens(grown) > before


def test_lru_is_bounded() -> None:
    lru = tokens._Lru(3)
    for i in range(5):
        lru.put(bytes([i]), i)
    assert list(lru.entries) == [b"\x02", b"\x03", b"\x04"]
    assert lru.get(b"\x02") == 2  # now the most recent
    lru.put(b"\x05", 5)
    assert list(lru.entries) == [b"\x04", b"\x02", b"\x05"]
    assert lru.get(b"\x00") is None


def test_huge_texts_are_sampled_close_to_the_full_count() -> None:
    enc = tokens.load_encoding()
    words = ("alpha beta gamma delta epsilon 12345 {json: [1, 2]} " * 8 + "\n") * 4000
    assert len(words) > tokens._EXACT_CHARS
    full = len(enc.encode_ordinary(words))
    sampled = tokens._tokenize(words)
    assert abs(sampled - full) / full < 0.02


def test_counting_speed_on_claude_code_requests() -> None:
    tokens.load_encoding()
    for name in ("request-plain", "request-after-tool-result"):
        body = _claude_code(name)
        tokens._cache.clear()
        start = time.perf_counter()
        tokens.count_tokens(body)
        cold = time.perf_counter() - start
        runs = []
        for _ in range(20):
            start = time.perf_counter()
            tokens.count_tokens(body)
            runs.append(time.perf_counter() - start)
        warm = sorted(runs)[len(runs) // 2]
        print(f"{name}: cold {cold * 1e3:.2f} ms, warm {warm * 1e3:.3f} ms")
        assert warm < cold
        assert warm < 0.02  # generous: about 0.15 ms on the 2-core dev machine


# --- images and documents -----------------------------------------------------------


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\x00" + bytes(width) for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _jpeg(width: int, height: int, padding: int = 0) -> bytes:
    """A decodable baseline greyscale JPEG, every 8x8 block mid-grey.

    One Huffman code each: DC category 0 and AC end-of-block, both "0", so each block is two
    zero bits. ``padding`` bytes of APP1 segments come before the frame header, as a large
    EXIF block would.
    """

    def segment(marker: int, payload: bytes) -> bytes:
        return struct.pack(">BBH", 0xFF, marker, len(payload) + 2) + payload

    blocks = math.ceil(width / 8) * math.ceil(height / 8)
    bits = "00" * blocks
    bits += "1" * (-len(bits) % 8)
    scan = bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))
    apps = b""
    while padding > 0:
        size = min(padding, 60000)
        apps += segment(0xE1, b"Exif\x00\x00" + bytes(size))
        padding -= size
    return (
        b"\xff\xd8"
        + segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
        + apps
        + segment(0xDB, b"\x00" + bytes([1] * 64))
        + segment(0xC0, struct.pack(">BHHBBBB", 8, height, width, 1, 1, 0x11, 0))
        + segment(0xC4, b"\x00" + bytes([1] + [0] * 15) + b"\x00")
        + segment(0xC4, b"\x10" + bytes([1] + [0] * 15) + b"\x00")
        + segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
        + scan
        + b"\xff\xd9"
    )


def _gif(width: int, height: int) -> bytes:
    """A decodable GIF, all pixels colour 0: literal LZW codes, a clear code every two."""
    codes = [4]
    for i in range(width * height):
        codes.append(0)
        if i % 2 == 1:
            codes.append(4)
    codes.append(5)
    acc = nbits = 0
    data = bytearray()
    for code in codes:
        acc |= code << nbits
        nbits += 3
        while nbits >= 8:
            data.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8
    if nbits:
        data.append(acc)
    blocks = b"".join(
        bytes([len(data[i : i + 255])]) + data[i : i + 255] for i in range(0, len(data), 255)
    )
    return (
        b"GIF89a"
        + struct.pack("<HHBBB", width, height, 0x80, 0, 0)
        + b"\x00\x00\x00\xff\xff\xff"
        + b"\x2c"
        + struct.pack("<HHHHB", 0, 0, width, height, 0)
        + b"\x02"
        + blocks
        + b"\x00\x3b"
    )


# Real WebP files of 37x23 (lossy VP8, lossless VP8L, and VP8X with EXIF) and 301x7 (VP8X
# with alpha), written by Pillow 13.0.0.
_WEBP = {
    "VP8": (
        "UklGRkoAAABXRUJQVlA4ID4AAABQAwCdASolABcAPtFmrFCoJaQipWgBABoJZwDG5oAAK/fDcAD+7QcvrvFpRr/8"
        "lP8Xfebvvuus23d6pgAAAA==",
        (37, 23),
    ),
    "VP8L": ("UklGRh4AAABXRUJQVlA4TBEAAAAvJIAFAAdQhSJXof+BiOh/AAA=", (37, 23)),
    "VP8X-exif": (
        "UklGRm4AAABXRUJQVlA4WAoAAAAIAAAAJAAAFgAAVlA4ID4AAABQAwCdASolABcAPtFmrFCoJaQipWgBABoJZwDG"
        "5oAAK/fDcAD+7QcvrvFpRr/8lP8Xfebvvuus23d6pgAAAEVYSUYKAAAATU0AKgAAAAgAAA==",
        (37, 23),
    ),
    "VP8X-alpha": (
        "UklGRoYAAABXRUJQVlA4WAoAAAAQAAAALAEABgAAQUxQSBAAAAABB1DAiAgACeH/ejGi/ykCVlA4IFAAAAAQBACd"
        "ASotAQcAPtFor1KoJiQioagBABoJaQDKLoAADbPekgQIECA+AAD+7QcvrvFpRr/+Sn+LvvN33kz9u8OPS7bzEfJU"
        "RIrgEh7oxdgAAA==",
        (301, 7),
    ),
}


@pytest.mark.parametrize(("width", "height"), [(1, 1), (37, 23), (1000, 1000), (3000, 2000)])
def test_image_size_from_generated_files(width: int, height: int) -> None:
    assert tokens.image_size(_png(width, height)) == (width, height)
    assert tokens.image_size(_jpeg(width, height)) == (width, height)
    assert tokens.image_size(_gif(width, height)) == (width, height)


@pytest.mark.parametrize("kind", sorted(_WEBP))
def test_image_size_of_webp(kind: str) -> None:
    data, size = _WEBP[kind]
    assert tokens.image_size(base64.b64decode(data)) == size


def test_image_size_rejects_other_bytes() -> None:
    assert tokens.image_size(b"") is None
    assert tokens.image_size(b"not an image at all") is None
    assert tokens.image_size(b"\xff\xd8\xff\xe0\x00") is None  # truncated JPEG
    assert tokens.image_size(_jpeg(10, 10)[:30]) is None


def test_anthropic_image_formula() -> None:
    # Anthropic's vision guide: tokens = width * height / 750, about 54 for 200x200, 1334 for
    # 1000x1000 and 1590 for 1092x1092; larger images are scaled down to at most ~1600.
    assert tokens.image_tokens_for_size(200, 200) == 54
    assert tokens.image_tokens_for_size(1000, 1000) == 1334
    assert tokens.image_tokens_for_size(1092, 1092) == 1590
    assert tokens.image_tokens_for_size(4000, 3000) == 1600
    assert tokens.image_tokens_for_size(4000, 100) == math.ceil(1568 * 39.2 / 750)
    assert tokens.image_tokens_for_size(1, 1) == 1


def _image_block(data: bytes, media_type: str) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": media_type,
            "data": base64.b64encode(data).decode(),
        },
    }


def test_images_in_requests() -> None:
    def count(*blocks: dict[str, Any]) -> int:
        return tokens.count_tokens({"messages": [{"role": "user", "content": list(blocks)}]})

    empty = count()
    assert count(_image_block(_png(1000, 1000), "image/png")) - empty == 1334
    assert count(_image_block(_jpeg(200, 200), "image/jpeg")) - empty == 54
    assert count(_image_block(_gif(30, 25), "image/gif")) - empty == 1
    # A JPEG whose frame header lies past the first 64 KiB of base64 (a long EXIF block).
    big_exif = _jpeg(1092, 1092, padding=200_000)
    assert count(_image_block(big_exif, "image/jpeg")) - empty == 1590
    # Unknown size: the fixed estimate.
    url = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    assert count(url) - empty == 1600
    assert count(_image_block(b"garbage", "image/png")) - empty == 1600
    # Images inside tool results count the same way, and never as base64 text.
    result = {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [_image_block(_png(1000, 1000), "image/png")],
    }
    assert 1334 < count(result) - empty < 1334 + 10


def _pdf(pages: int) -> bytes:
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Count {pages} >>".encode()]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages
    body = b"%PDF-1.4\n"
    for number, obj in enumerate(objects, 1):
        body += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    return body + b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"


def test_pdf_pages_and_tokens() -> None:
    assert tokens.pdf_pages(_pdf(1)) == 1
    assert tokens.pdf_pages(_pdf(7)) == 7
    # Page objects hidden in compressed object streams: the page tree's /Count, else size.
    assert tokens.pdf_pages(b"%PDF-1.5 << /Type /Pages /Kids [3 0 R] /Count 12 >>") == 12
    assert tokens.pdf_pages(b"%PDF-1.7" + bytes(500_000)) == 10

    def count(*blocks: dict[str, Any]) -> int:
        return tokens.count_tokens({"messages": [{"role": "user", "content": list(blocks)}]})

    empty = count()
    pdf = base64.b64encode(_pdf(3)).decode()
    document = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": pdf},
    }
    assert count(document) - empty == 3 * tokens._PDF_TOKENS_PER_PAGE
    assert count(document) - empty == 3 * tokens._PDF_TOKENS_PER_PAGE  # from the cache
    titled = {**document, "title": "Quarterly report"}
    assert count(titled) - count(document) == tokens.text_tokens("Quarterly report")


# --- the wheel ----------------------------------------------------------------------


@pytest.mark.e2e
def test_the_vocabulary_ships_in_the_wheel(tmp_path: Path) -> None:
    import zipfile

    maturin = shutil.which("maturin") or str(Path(sys.executable).parent / "maturin")
    subprocess.run(
        [maturin, "build", "--release", "--out", str(tmp_path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("hydra_proxy-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        data = archive.read(f"hydra_proxy/data/{tokens.VOCABULARY_FILE}")
        assert "hydra_proxy/data/SOURCES.md" in archive.namelist()
    assert hashlib.sha256(data).hexdigest() == tokens.VOCABULARY_SHA256
