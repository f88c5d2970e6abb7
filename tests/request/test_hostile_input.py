"""Hostile request content, 1-8 MB of it, through every scan the proxy runs over what a
client sends: the token estimate (texts, PDFs, images, base64 documents), continuation
suffixes and carriers, Gemini tool schemas, embedded JSON. Each answer is checked, and so
is the work: the characters tokenized, the bytes read, the MACs computed, the schema nodes
visited are counted and bounded whatever the input's size (no test here times anything;
benches/hostile.py reports the CPU each input costs).
"""

from __future__ import annotations

import base64
import struct
from typing import Any

import orjson
import pytest

from hydra_proxy import continuation, tokens
from hydra_proxy.canonical.target import MessagesTarget
from hydra_proxy.chat.request.reader import messages_request_from_chat
from hydra_proxy.errors import ProxyError
from hydra_proxy.gemini import schema as gemini_schema
from hydra_proxy.gemini.request.writer import gemini_request_from_messages, gemini_target
from hydra_proxy.json_depth import MAX_EMBEDDED_DEPTH, nested_deeper_than
from hydra_proxy.responses.request.reader import messages_request_from_responses

MB = 1 << 20
KEY = b"k" * 32


def count(*blocks: dict[str, Any]) -> tuple[int, tokens.Budget]:
    budget = tokens.Budget()
    total = tokens.count_tokens(
        {"messages": [{"role": "user", "content": list(blocks)}]}, budget=budget
    )
    return total, budget


@pytest.fixture(autouse=True)
def cold_cache() -> None:
    tokens._cache.clear()


# --- PDFs: the page tree search --------------------------------------------------------


def pdf_block(data: bytes) -> dict[str, Any]:
    return {
        "type": "document",
        "source": {
            "type": "base64",
            "media_type": "application/pdf",
            "data": base64.b64encode(data).decode(),
        },
    }


@pytest.mark.parametrize("size", [1 * MB, 8 * MB])
def test_a_pdf_of_repeated_count_markers_is_counted_by_size_and_read_at_its_ends(
    size: int,
) -> None:
    # "/Count 1 " repeated: each marker once sent the page-tree regex scanning to the end.
    hostile = b"%PDF-1.7\n" + b"/Count 1 " * (size // 9)
    total, budget = count(pdf_block(hostile))
    assert tokens.pdf_pages(hostile) == round(len(hostile) / tokens._PDF_BYTES_PER_PAGE)
    pages = (total - count()[0]) // tokens._PDF_TOKENS_PER_PAGE
    assert pages == max(1, round(len(hostile) / tokens._PDF_BYTES_PER_PAGE))
    assert budget.scanned_bytes <= 2 * tokens._PDF_SCAN_BYTES + 1


def test_the_page_tree_markers_repeated_in_one_run_are_read_once() -> None:
    # "/Type /Pages" and "/Count N" repeated with no ">" between them: one run of bytes.
    hostile = b"%PDF-1.7 << " + b"/Type /Pages /Count 7 " * (2 * MB // 22)
    assert tokens._page_tree_count(hostile) == 7
    assert tokens.pdf_pages(hostile) == 7
    # And alternated with ">" so every run is short: each is still read once.
    hostile = b"%PDF-1.7 " + b"<< /Type /Pages /Count 9 >>" * (2 * MB // 27)
    assert tokens._page_tree_count(hostile) == 9


def test_a_large_pdf_is_counted_from_its_ends() -> None:
    pages = 60
    objects = b"".join(
        b"%d 0 obj << /Type /Page /Parent 2 0 R >> endobj\n" % i + b"x" * 200_000
        for i in range(pages)
    )  # about 12 MB: page objects all through the file
    with_tree = b"%PDF-1.4\n1 0 obj << /Type /Pages /Count 60 >> endobj\n" + objects
    assert count(pdf_block(with_tree))[0] - count()[0] == 60 * tokens._PDF_TOKENS_PER_PAGE
    # Without the tree's /Count among the ends: the page objects there, scaled to the file.
    estimated = tokens.pdf_pages(b"%PDF-1.4\n" + objects[:500_000], size=len(objects))
    assert 40 <= estimated <= 80


# --- images ----------------------------------------------------------------------------


def image_block(data: bytes, media: str = "image/jpeg") -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": media, "data": base64.b64encode(data).decode()},
    }


@pytest.mark.parametrize(
    "body",
    [
        b"\xff" * (4 * MB),  # fill bytes, never a marker
        b"\xff\x01" * (2 * MB),  # markers without a length, one after another
        b"\xff\xe1\x00\x02" * MB,  # empty APP1 segments, each 4 bytes
    ],
    ids=["fill", "bare-markers", "tiny-segments"],
)
def test_a_jpeg_that_never_reaches_its_frame_reads_a_bounded_prefix(body: bytes) -> None:
    total, budget = count(image_block(b"\xff\xd8" + body))
    assert total - count()[0] == tokens._IMAGE_DEFAULT_TOKENS
    assert budget.scanned_bytes <= tokens._IMAGE_SCAN_B64_CHARS * 3 // 4


def test_a_jpeg_frame_after_a_long_exif_block_is_still_found() -> None:
    frame = struct.pack(">BBHBHHB", 0xFF, 0xC0, 11, 8, 600, 800, 1)
    exif = b"".join(
        struct.pack(">BBH", 0xFF, 0xE1, 60002) + bytes(60000) for _ in range(8)
    )  # 480 kB of EXIF before the frame header
    total, _ = count(image_block(b"\xff\xd8" + exif + frame + bytes(4 * MB)))
    assert total - count()[0] == tokens.image_tokens_for_size(800, 600)


# --- texts: the tokenizer's budget -------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["a" * (8 * MB), " " * (8 * MB), "\U0001f600" * (2 * MB), "!" * (4 * MB)],
    ids=["letters", "spaces", "emoji", "punctuation"],
)
def test_one_huge_text_made_to_be_slow_is_counted_on_windows(text: str) -> None:
    total, budget = count({"type": "text", "text": text})
    assert budget.examined_chars <= tokens._EXACT_CHARS
    enc = tokens.load_encoding()
    window = text[: tokens._WINDOW_CHARS]
    expected = len(enc.encode_ordinary(window)) * len(text) / len(window)
    assert abs((total - count()[0]) - expected) / expected < 0.01


def test_many_distinct_texts_are_tokenized_within_the_request_budget() -> None:
    # 8 MB in 2,000 distinct texts: tokenized until the budget is spent, then estimated.
    texts = [f"{i:06d} " + "lorem ipsum dolor sit amet " * 150 for i in range(2000)]
    total, budget = count(*({"type": "text", "text": t} for t in texts))
    assert budget.examined_chars <= tokens.REQUEST_BUDGET_CHARS
    assert budget.estimated_chars > 7 * MB
    enc = tokens.load_encoding()
    exact = sum(len(enc.encode_ordinary(t)) for t in texts)
    assert abs(total - exact) / exact < 0.05


def test_texts_counted_once_come_from_the_cache_without_spending_the_budget() -> None:
    texts = [f"{i} " + "the quick brown fox " * 500 for i in range(20)]  # 200 kB in all
    blocks = [{"type": "text", "text": t} for t in texts]
    _, budget = count(*blocks[:6])
    assert budget.estimated_chars == 0
    _, again = count(*blocks[:6])
    assert again.examined_chars == 0  # all cached
    # A request of all twenty: the six known ones are free, the budget counts the rest.
    _, budget = count(*blocks)
    assert budget.counted_chars >= sum(len(t) for t in texts[6:9])


def test_a_base64_text_document_is_decoded_within_its_bound() -> None:
    text = ("plain words in a text file\n" * (8 * MB // 27)).encode()
    block = {
        "type": "document",
        "source": {"type": "base64", "media_type": "text/plain", "data": base64.b64encode(text)},
    }
    block["source"]["data"] = block["source"]["data"].decode()  # type: ignore[index, union-attr]
    total, budget = count(block)
    assert budget.scanned_bytes <= tokens._DOCUMENT_SCAN_B64_CHARS * 3 // 4
    enc = tokens.load_encoding()
    expected = len(enc.encode_ordinary("plain words in a text file\n")) * (8 * MB // 27)
    assert abs((total - count()[0]) - expected) / expected < 0.02


def test_a_tool_input_nested_past_what_orjson_writes_still_counts() -> None:
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    total, _ = count({"type": "tool_use", "id": "t", "name": "f", "input": {"x": deep}})
    assert total > count()[0]


# --- continuation suffixes ---------------------------------------------------------------


class MacCounter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self.hashed = 0
        original = continuation._mac

        def counted(key: bytes, encoded: bytes, reasoning: str) -> bytes:
            self.calls += 1
            self.hashed += len(reasoning)
            return original(key, encoded, reasoning)

        monkeypatch.setattr(continuation, "_mac", counted)


@pytest.mark.parametrize("where", ["reasoning", "carrier"])
def test_a_text_of_megabytes_of_markers_is_refused_unread(
    monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    macs = MacCounter(monkeypatch)
    text = continuation.PREFIX * (8 * MB // len(continuation.PREFIX))
    with pytest.raises(ProxyError) as refused:
        if where == "reasoning":
            continuation.scan(text, KEY)
        else:
            continuation.find(text, KEY)
    assert refused.value.status == 400
    assert f"at most {continuation.MAX_MARKERS}" in refused.value.message
    assert macs.calls == 0


def test_forged_suffixes_cost_a_bounded_number_of_macs(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each forged suffix claims all the text before it as its reasoning: a MAC over up to
    # 8 MB, once for each of them unless bounded.
    filler = "x" * (8 * MB // continuation.MAX_MARKERS)
    parts = []
    for i in range(continuation.MAX_MARKERS):
        claimed = (len(filler) + 1) * i + len(filler)
        parts.append(filler)
        parts.append(continuation.encode([continuation.ThinkingBlock("?" * claimed, "sig")], KEY))
    text = "".join(parts)
    macs = MacCounter(monkeypatch)
    assert continuation.find(text, KEY) is False
    assert macs.calls == continuation.MAX_FAILED_MACS
    macs.calls = macs.hashed = 0
    found = continuation.scan(text, KEY)
    assert len(found) == continuation.MAX_MARKERS  # every marker cut as broken
    assert all(isinstance(span, tuple) for span in found)
    assert macs.calls == continuation.MAX_FAILED_MACS
    assert macs.hashed <= continuation.MAX_FAILED_MACS * len(text)


def test_valid_suffixes_one_after_another_are_each_verified_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reasoning = "some reasoning " * 8000  # 120 kB each
    unit = reasoning + continuation.encode([continuation.ThinkingBlock(reasoning, "sig")], KEY)
    text = unit * continuation.MAX_MARKERS  # about 8 MB
    macs = MacCounter(monkeypatch)
    found = continuation.scan(text, KEY)
    assert len(found) == continuation.MAX_MARKERS
    assert all(isinstance(f, continuation.VerifiedSuffix) for f in found)
    assert macs.calls == len(found) and macs.hashed == len(found) * len(reasoning)


def test_a_chat_request_replaying_megabytes_of_markers_is_a_400() -> None:
    forged = continuation.encode([continuation.ThinkingBlock("r" * 50, "sig")], b"x" * 32)
    content = ("r" * 50 + forged) * (4 * MB // (50 + len(forged)))
    request = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": content, "reasoning_content": content},
            {"role": "user", "content": "again"},
        ],
    }
    with pytest.raises(ProxyError) as refused:
        messages_request_from_chat(
            request, MessagesTarget(model="m", continuation_key=KEY), stream=False
        )
    assert refused.value.status == 400 and "continuation suffix markers" in refused.value.message


# --- tool schemas (Gemini) -------------------------------------------------------------


def ref_bomb(levels: int = 16) -> dict[str, Any]:
    """About 1.5 kB that expands to 2**levels nodes: each definition refers twice to the
    next."""
    defs: dict[str, Any] = {
        f"d{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/d{i + 1}"}, "b": {"$ref": f"#/$defs/d{i + 1}"}},
        }
        for i in range(levels)
    }
    defs[f"d{levels}"] = {"type": "string"}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}


class NodeCounter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.visited = 0
        original = gemini_schema._Sanitizer.node

        def counted(sanitizer: Any, schema: Any, refs: tuple[str, ...]) -> dict[str, Any]:
            self.visited += 1
            return original(sanitizer, schema, refs)

        monkeypatch.setattr(gemini_schema._Sanitizer, "node", counted)


def gemini_body(tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "gemini-2.5-pro",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": tools,
    }


def test_tools_full_of_ref_bombs_are_refused_within_the_requests_node_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools = [{"name": f"t{i}", "description": "d", "input_schema": ref_bomb()} for i in range(5000)]
    assert len(orjson.dumps(tools)) > 7 * MB
    nodes = NodeCounter(monkeypatch)
    with pytest.raises(ProxyError) as refused:
        gemini_request_from_messages(gemini_body(tools), gemini_target("gemini-2.5-pro"))
    assert refused.value.status == 400 and "beyond their own" in refused.value.message
    assert nodes.visited <= 2 * gemini_schema.MAX_REF_REUSE


def test_a_schema_whose_refs_nest_past_what_can_be_written_is_a_400() -> None:
    def deep(levels: int, leaf: dict[str, Any]) -> dict[str, Any]:
        for _ in range(levels):
            leaf = {"type": "object", "properties": {"a": leaf}}
        return leaf

    defs: dict[str, Any] = {f"d{i}": deep(40, {"$ref": f"#/$defs/d{i + 1}"}) for i in range(15)}
    defs["d15"] = {"type": "string"}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}
    tool = {"name": "deep", "description": "d", "input_schema": schema}
    with pytest.raises(ProxyError) as refused:
        gemini_request_from_messages(gemini_body([tool]), gemini_target("gemini-2.5-pro"))
    assert refused.value.status == 400 and "deeper than" in refused.value.message


def test_tools_of_more_schema_nodes_than_a_request_may_hold_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    schema = {
        "type": "object",
        "properties": {
            f"p{i}": {"type": "object", "properties": {"a": {"type": "string"}}} for i in range(17)
        },
    }  # 35 nodes, no $ref: 5,000 tools hold 175,000 (7 MB)
    tools = [{"name": f"t{i}", "description": "d", "input_schema": schema} for i in range(5000)]
    nodes = NodeCounter(monkeypatch)
    with pytest.raises(ProxyError) as refused:
        gemini_request_from_messages(gemini_body(tools), gemini_target("gemini-2.5-pro"))
    assert refused.value.status == 400
    assert f"more than {gemini_schema.MAX_NODES} nodes" in refused.value.message
    assert nodes.visited == gemini_schema.MAX_NODES + 1


def test_many_ordinary_tools_fit_the_budget() -> None:
    # 300 MCP-sized tools (a few $refs each, used once): no amplification, no refusal.
    tool = {
        "type": "object",
        "properties": {"q": {"$ref": "#/$defs/Query"}, "n": {"type": "integer"}},
        "$defs": {"Query": {"type": "object", "properties": {"text": {"type": "string"}}}},
    }
    tools = [{"name": f"t{i}", "description": "d", "input_schema": tool} for i in range(300)]
    body = gemini_request_from_messages(gemini_body(tools), gemini_target("gemini-2.5-pro"))
    assert len(body["tools"][0]["functionDeclarations"]) == 300


# --- embedded JSON -----------------------------------------------------------------------


def test_tool_arguments_nested_past_the_bound_are_a_400() -> None:
    deep = "[" * (MAX_EMBEDDED_DEPTH + 1) + "]" * (MAX_EMBEDDED_DEPTH + 1)
    request = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"x":' + deep + "}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        ],
    }
    with pytest.raises(ProxyError) as refused:
        messages_request_from_chat(request, MessagesTarget(model="m"), stream=False)
    assert refused.value.status == 400 and "nested deeper than 128" in refused.value.message
    # One level less is a request the proxy can write.
    within = "[" * (MAX_EMBEDDED_DEPTH - 1) + "]" * (MAX_EMBEDDED_DEPTH - 1)
    call = request["messages"][1]["tool_calls"][0]  # type: ignore[index]
    call["function"]["arguments"] = '{"x":' + within + "}"
    body = messages_request_from_chat(request, MessagesTarget(model="m"), stream=False).body
    assert orjson.dumps(body)


def test_nesting_is_measured_without_recursion() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    assert nested_deeper_than(deep, 128) and not nested_deeper_than(deep, 100_001)


# --- what the request fuzz found (tests/property/test_fuzz_requests.py) -----------------------------


def test_a_schemas_required_list_holding_lists_and_objects_keeps_its_names() -> None:
    # A 500 before (unhashable entries), on every route to Gemini.
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": [["a"], "a", {"b": 1}, "a", 7, "b"],
    }
    assert gemini_schema.gemini_schema(schema)["required"] == ["a", "b"]


# --- lists of distinct entries: looked up, never scanned ---------------------------------


class CountedStr(str):
    """A string that counts the comparisons made with it (a list scan makes one per
    element; a dict or set lookup by hash about one)."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        CountedStr.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


@pytest.fixture()
def counted() -> type[CountedStr]:
    CountedStr.compared = 0
    return CountedStr


def test_distinct_unknown_responses_tools_and_items_are_counted_once_each(
    counted: type[CountedStr],
) -> None:
    n = 20_000
    body = {
        "model": "m",
        "input": [{"type": counted(f"hosted_{i}")} for i in range(n)]
        + [{"role": "user", "content": "hi"}],
        "tools": [{"type": counted(f"server_tool_{i}")} for i in range(n)],
    }
    translation = messages_request_from_responses(body, MessagesTarget(model="m"))
    assert len(translation.dropped_items) == n and len(translation.dropped_tools) == n
    assert counted.compared <= 20 * n  # a list scan: n * n / 2 = 200 million


def test_allowed_tools_are_looked_up_not_scanned(counted: type[CountedStr]) -> None:
    n = 20_000
    names = [counted(f"tool_{i}") for i in range(n)]
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
            for name in names
        ],
        "tool_choice": {
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "auto",
                "tools": [{"type": "function", "function": {"name": n}} for n in names],
            },
        },
    }
    counted.compared = 0
    translation = messages_request_from_chat(body, MessagesTarget(model="m"), stream=False)
    assert len(translation.body["tools"]) == n
    assert counted.compared <= 20 * n


def test_thousands_of_forged_reasoning_carriers_cost_a_bounded_number_of_macs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hydra_proxy.responses.reasoning import encode_carrier
    from hydra_proxy.responses.request.reader import replay

    forged = encode_carrier(
        [{"type": "thinking", "thinking": "t" * 300, "signature": "s"}], b"x" * 32
    )
    valid = encode_carrier([{"type": "thinking", "thinking": "mine", "signature": "s"}], KEY)
    items: list[dict[str, Any]] = [
        {"type": "reasoning", "id": f"rs_{i}", "summary": [], "encrypted_content": forged}
        for i in range(10_000)
    ]
    body = {"model": "m", "input": [*items, {"role": "user", "content": "hi"}]}
    macs = MacCounter(monkeypatch)
    translation = messages_request_from_responses(
        body, MessagesTarget(model="m", continuation_key=KEY)
    )
    assert translation.skipped_reasoning == 10_000
    assert macs.calls == replay.MAX_FORGED
    # Carriers that verify are never capped.
    body = {
        "model": "m",
        "input": [
            {"role": "user", "content": "hi"},
            *({"type": "reasoning", "id": f"rs_{i}", "summary": [], "encrypted_content": valid}
              for i in range(500)),
            {"role": "user", "content": "again"},
        ],
    }  # fmt: skip
    translation = messages_request_from_responses(
        body, MessagesTarget(model="m", continuation_key=KEY)
    )
    assert translation.skipped_reasoning == 0
