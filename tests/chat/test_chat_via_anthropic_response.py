"""Anthropic Message -> OpenAI chat.completion (hydra_proxy.chat.response.writer).

Table-driven: every case is (name, Anthropic message, expected `choices[0].message`,
expected finish_reason). Every completion is validated with the openai SDK's
`ChatCompletion` model; recorded Anthropic responses (non-streaming, and streams
accumulated with the anthropic SDK) are translated and their thinking is replayed through
the request translation, where it must come back byte for byte.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from anthropic.lib.streaming._messages import accumulate_event
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion

from hydra_proxy import continuation
from hydra_proxy.canonical.target import MessagesTarget
from hydra_proxy.chat.mapping import FINISH_REASONS, chat_usage, finish_reason
from hydra_proxy.chat.request.reader import messages_request_from_chat
from hydra_proxy.chat.response.writer import chat_completion_from_message

FIXTURES = Path(__file__).parent.parent / "fixtures" / "anthropic"
KEY = b"continuation-key-0123456789abcdef"
USAGE = {
    "input_tokens": 100,
    "output_tokens": 20,
    "cache_creation_input_tokens": 5,
    "cache_read_input_tokens": 1000,
}


def message(*content: Any, stop_reason: str | None = "end_turn", **extra: Any) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": USAGE,
        **extra,
    }


def text(t: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": t, **extra}


def thinking(t: str, signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": t, "signature": signature}


def redacted(data: str) -> dict[str, Any]:
    return {"type": "redacted_thinking", "data": data}


def tool_use(call_id: str, name: str, inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": inp}


def chat_message(content: str | None, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "refusal": None, "annotations": [], **extra}


def chat_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def complete(msg: dict[str, Any], key: bytes | None = None) -> dict[str, Any]:
    completion = chat_completion_from_message(
        msg,
        completion_id="chatcmpl-1",
        model="claude-test",
        created=1700000000,
        continuation_key=key,
    )
    parsed = ChatCompletion.model_validate(completion)
    assert parsed.object == "chat.completion"
    assert len(parsed.choices) == 1
    return completion


CITATION = {
    "type": "web_search_result_location",
    "cited_text": "Paris is the capital of France.",
    "url": "https://example.com/paris",
    "title": "Paris",
    "encrypted_index": "Eo8B",
}
DOC_CITATION = {
    "type": "char_location",
    "cited_text": "x",
    "document_index": 0,
    "document_title": "Doc",
    "start_char_index": 0,
    "end_char_index": 1,
}

RESPONSES: list[Any] = [
    pytest.param(message(text("Hello.")), chat_message("Hello."), "stop", id="text"),
    pytest.param(
        message(text("Hello, "), text("world.")),
        chat_message("Hello, world."),
        "stop",
        id="text-blocks-joined",
    ),
    pytest.param(message(), chat_message(None), "stop", id="no-content"),
    pytest.param(
        message(
            tool_use("toolu_01", "get_weather", {"city": "Zürich", "days": 3}),
            stop_reason="tool_use",
        ),
        chat_message(
            None,
            tool_calls=[chat_call("toolu_01", "get_weather", '{"city":"Zürich","days":3}')],
        ),
        "tool_calls",
        id="tool-use",
    ),
    pytest.param(
        message(
            text("Let me check."),
            tool_use("toolu_01", "a", {}),
            tool_use("toolu_02", "b", {"z": 1, "a": [1, 2]}),
            stop_reason="tool_use",
        ),
        chat_message(
            "Let me check.",
            tool_calls=[
                chat_call("toolu_01", "a", "{}"),
                chat_call("toolu_02", "b", '{"z":1,"a":[1,2]}'),
            ],
        ),
        "tool_calls",
        id="text-and-parallel-tool-use",
    ),
    pytest.param(
        message({"type": "tool_use", "id": "toolu_01", "name": "now"}, stop_reason="tool_use"),
        chat_message(None, tool_calls=[chat_call("toolu_01", "now", "{}")]),
        "tool_calls",
        id="tool-use-missing-input",
    ),
    pytest.param(
        message(tool_use("toolu_01", "big", {"n": 2**70}), stop_reason="tool_use"),
        chat_message(
            None, tool_calls=[chat_call("toolu_01", "big", '{"n":1180591620717411303424}')]
        ),
        "tool_calls",
        id="tool-use-big-integer",
    ),
    pytest.param(
        message(thinking("Hmm.", "sig"), text("Yes.")),
        chat_message("Yes.", reasoning_content="Hmm."),
        "stop",
        id="thinking-without-key",
    ),
    pytest.param(
        message(redacted("opaque"), text("Yes.")),
        chat_message("Yes."),
        "stop",
        id="redacted-without-key-omitted",
    ),
    pytest.param(
        message(
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01",
                "name": "web_search",
                "input": {"query": "paris"},
            },
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_01",
                "content": [
                    {
                        "type": "web_search_result",
                        "url": "https://example.com/paris",
                        "title": "Paris",
                        "encrypted_content": "x",
                        "page_age": None,
                    }
                ],
            },
            text("The capital is "),
            text("Paris", citations=[CITATION]),
            text("."),
        ),
        chat_message(
            "The capital is Paris.",
            annotations=[
                {
                    "type": "url_citation",
                    "url_citation": {
                        "start_index": 15,
                        "end_index": 20,
                        "url": "https://example.com/paris",
                        "title": "Paris",
                    },
                }
            ],
        ),
        "stop",
        id="server-tools-omitted-citations-annotated",
    ),
    pytest.param(
        message(text("From the doc.", citations=[DOC_CITATION])),
        chat_message("From the doc."),
        "stop",
        id="document-citation-dropped",
    ),
    pytest.param(
        message({"type": "container_upload", "file_id": "f"}, {"type": "future_block"}, text("ok")),
        chat_message("ok"),
        "stop",
        id="unknown-blocks-ignored",
    ),
    pytest.param(
        message(text("I can't"), stop_reason="refusal"),
        chat_message("I can't"),
        "content_filter",
        id="refusal",
    ),
    pytest.param(
        message(text("Cut"), stop_reason="max_tokens"),
        chat_message("Cut"),
        "length",
        id="max-tokens",
    ),
]


@pytest.mark.parametrize(("msg", "expected", "reason"), RESPONSES)
def test_response(msg: dict[str, Any], expected: dict[str, Any], reason: str) -> None:
    completion = complete(msg)
    assert completion == {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "claude-test",
        "choices": [{"index": 0, "message": expected, "logprobs": None, "finish_reason": reason}],
        "usage": {
            "prompt_tokens": 1105,
            "completion_tokens": 20,
            "total_tokens": 1125,
            "prompt_tokens_details": {"cached_tokens": 1000},
        },
    }


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        (None, "stop"),
        ("something_new", "stop"),
    ],
)
def test_finish_reason(stop_reason: str | None, expected: str) -> None:
    assert finish_reason(stop_reason) == expected
    completion = complete(message(text("x"), stop_reason=stop_reason))
    assert completion["choices"][0]["finish_reason"] == expected
    if stop_reason is not None and stop_reason in FINISH_REASONS:
        assert FINISH_REASONS[stop_reason] == expected


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (USAGE, (1105, 20, 1000)),
        ({"input_tokens": 7, "output_tokens": 3}, (7, 3, 0)),
        ({"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": None}, (7, 3, 0)),
        (None, (0, 0, 0)),
        ({}, (0, 0, 0)),
    ],
)
def test_usage(usage: Any, expected: tuple[int, int, int]) -> None:
    prompt, completion_tokens, cached = expected
    assert chat_usage(usage) == {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def test_each_thinking_block_is_followed_by_its_suffix() -> None:
    blocks = [thinking("A. ", "sigA"), redacted("X"), thinking("B.", "sigB")]
    completion = complete(message(*blocks, text("Answer.")), KEY)
    reasoning = completion["choices"][0]["message"]["reasoning_content"]
    seal = continuation.encode
    assert reasoning == (
        "A. "
        + seal([continuation.ThinkingBlock("A. ", "sigA")], KEY)
        + seal([continuation.RedactedBlock("X")], KEY)
        + "B."
        + seal([continuation.ThinkingBlock("B.", "sigB")], KEY)
    ), "as the stream sends it: each block's suffix right after its reasoning"
    assert completion["choices"][0]["message"]["content"] == "Answer."
    assert "hydra-continuation" not in completion["choices"][0]["message"]["content"]
    found = continuation.scan(reasoning, KEY)
    assert all(isinstance(f, continuation.VerifiedSuffix) for f in found) and len(found) == 3
    assert found[-1].end == len(reasoning)  # type: ignore[union-attr]


@pytest.mark.parametrize("zed_default", [False, True], ids=["interleaved", "zed-default"])
def test_replay_reads_the_suffix_in_either_order(zed_default: bool) -> None:
    """Replies written before each block had its own suffix (one suffix at the end of all the
    reasoning) restore the same blocks as today's."""
    blocks = [thinking("A. ", "sigA"), redacted("X"), thinking("B.", "sigB")]
    msg = message(*blocks, text("Answer."), tool_use("toolu_01", "tool_x", {"a": 1}))
    completion = complete(msg, KEY)
    old = copy.deepcopy(completion)
    old["choices"][0]["message"]["reasoning_content"] = "A. B." + continuation.encode(
        [
            continuation.ThinkingBlock("A. ", "sigA"),
            continuation.RedactedBlock("X"),
            continuation.ThinkingBlock("B.", "sigB"),
        ],
        KEY,
    )
    expected = _expected_blocks(msg, zed_default=zed_default)
    assert replay(msg, completion, zed_default=zed_default) == expected
    assert replay(msg, old, zed_default=zed_default) == expected


def test_redacted_only_with_key_is_just_the_suffix() -> None:
    completion = complete(message(redacted("X"), text("ok")), KEY)
    reasoning = completion["choices"][0]["message"]["reasoning_content"]
    assert reasoning == continuation.encode([continuation.RedactedBlock("X")], KEY)


def test_no_thinking_no_suffix() -> None:
    completion = complete(message(text("ok")), KEY)
    assert "reasoning_content" not in completion["choices"][0]["message"]


def test_reasoning_content_is_an_extra_field_the_sdk_keeps() -> None:
    completion = complete(message(thinking("Hmm.", "sig"), text("Yes.")), KEY)
    parsed = ChatCompletion.model_validate(completion)
    extra = parsed.choices[0].message.model_extra or {}
    assert extra["reasoning_content"].startswith("Hmm." + continuation.PREFIX)


# --------------------------------------------------------------- recorded responses


def _events(path: Path) -> list[dict[str, Any]]:
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        lines = [line for line in raw.splitlines() if line.strip()]
    else:
        lines = [line[5:].strip() for line in raw.splitlines() if line.startswith("data:")]
    return [orjson.loads(line) for line in lines]


def accumulate(path: Path) -> dict[str, Any]:
    """A recorded stream accumulated into a Message by the anthropic SDK's own accumulator."""
    snapshot: Any = None
    json_bufs: dict[int, bytes] = {}
    for event in _events(path):
        if event.get("type") in ("ping", "error"):
            continue
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)  # type: ignore[arg-type]
    assert snapshot is not None
    dumped: dict[str, Any] = snapshot.model_dump(mode="json", exclude_none=True)
    dumped.setdefault("stop_sequence", None)
    return dumped


def replay(
    msg: dict[str, Any], completion: dict[str, Any], *, zed_default: bool
) -> list[dict[str, Any]]:
    """Feed the completion's message back as the assistant turn of the next request; return
    the translated Anthropic assistant content."""
    reply = completion["choices"][0]["message"]
    assistant: dict[str, Any] = {"role": "assistant", "content": reply["content"]}
    if zed_default:  # Zed's default: reasoning replayed as plain text before the content
        assistant["content"] = reply.get("reasoning_content", "") + (reply["content"] or "")
    else:
        assistant["reasoning_content"] = reply.get("reasoning_content")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "question"}, assistant]
    tools: list[dict[str, Any]] = []
    for call in reply.get("tool_calls", []):
        assistant.setdefault("tool_calls", []).append(call)
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": "result"})
        tools.append({"type": "function", "function": {"name": call["function"]["name"]}})
    if not reply.get("tool_calls"):
        messages.append({"role": "user", "content": "next"})
    body: dict[str, Any] = {"model": "gpt-4o", "messages": messages, "reasoning_effort": "low"}
    if tools:
        body["tools"] = list({t["function"]["name"]: t for t in tools}.values())
    translation = messages_request_from_chat(
        body, MessagesTarget(model="claude", continuation_key=KEY), stream=False
    )
    assert translation.skipped_reasoning == 0
    assert translation.thinking_disabled is False
    content: list[dict[str, Any]] = translation.body["messages"][1]["content"]
    return content


def _expected_blocks(msg: dict[str, Any], *, zed_default: bool) -> list[dict[str, Any]]:
    out = []
    texts = []
    for block in msg["content"]:
        if block["type"] == "thinking":
            out.append(
                {"type": "thinking", "thinking": block["thinking"], "signature": block["signature"]}
            )
        elif block["type"] == "redacted_thinking":
            out.append({"type": "redacted_thinking", "data": block["data"]})
        elif block["type"] == "text":
            texts.append(block["text"])
    visible = "".join(texts)
    if zed_default:
        visible = visible.lstrip()
    if visible.strip():
        out.append({"type": "text", "text": visible})
    for block in msg["content"]:
        if block["type"] == "tool_use":
            out.append(
                {
                    "type": "tool_use",
                    "id": block["id"],
                    "name": block["name"],
                    "input": block["input"],
                }
            )
    return out


RECORDED = [
    "pydantic-thinking-signature.sse",
    "vercel-thinking-signature.jsonl",
    "pydantic-redacted-thinking.sse",
]


@pytest.mark.parametrize("name", RECORDED)
@pytest.mark.parametrize("zed_default", [False, True], ids=["interleaved", "zed-default"])
def test_recorded_streams_round_trip(name: str, zed_default: bool) -> None:
    msg = accumulate(FIXTURES / name)
    assert any(b["type"] in ("thinking", "redacted_thinking") for b in msg["content"])
    completion = complete(msg, KEY)
    reply = completion["choices"][0]["message"]
    first = msg["content"][0]
    if first["type"] == "thinking":
        assert reply["reasoning_content"].startswith(first["thinking"] + continuation.PREFIX)
    restored = replay(msg, completion, zed_default=zed_default)
    expected = _expected_blocks(msg, zed_default=zed_default)
    assert restored == expected


def test_recorded_nonstreaming_redacted_thinking() -> None:
    msg = orjson.loads(
        (FIXTURES / "pydantic-nonstream-redacted-thinking.1.response.json").read_bytes()
    )["body"]
    completion = complete(msg, KEY)
    reply = completion["choices"][0]["message"]
    assert reply["content"] == msg["content"][1]["text"]
    assert reply["reasoning_content"] == continuation.encode(
        [continuation.RedactedBlock(msg["content"][0]["data"])], KEY
    )
    assert completion["usage"] == {
        "prompt_tokens": 92,
        "completion_tokens": 196,
        "total_tokens": 288,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    assert completion["choices"][0]["finish_reason"] == "stop"


def test_recorded_web_search_citations() -> None:
    msg = accumulate(FIXTURES / "vercel-web-search-citations.jsonl")
    completion = complete(msg)
    reply = completion["choices"][0]["message"]
    texts = [b for b in msg["content"] if b["type"] == "text"]
    assert reply["content"] == "".join(b["text"] for b in texts)
    assert "tool_calls" not in reply
    cited = [c for b in texts for c in b.get("citations") or []]
    assert cited and len(reply["annotations"]) == len(cited)
    for annotation in reply["annotations"]:
        span = annotation["url_citation"]
        assert annotation["type"] == "url_citation"
        assert 0 <= span["start_index"] < span["end_index"] <= len(reply["content"])
        assert span["url"].startswith("https://")
    first = next(b for b in texts if b.get("citations"))
    start = reply["content"].index(first["text"])
    assert reply["annotations"][0]["url_citation"]["start_index"] == start
    assert reply["annotations"][0]["url_citation"]["url"] == first["citations"][0]["url"]


# ------------------------------------------------------------ hypothesis round trip

_SIGNATURES = st.text(min_size=1, max_size=80)
_THINKING = st.text(max_size=200).filter(lambda t: continuation.PREFIX not in t)
_BLOCKS = st.lists(
    st.one_of(
        st.builds(thinking, _THINKING, _SIGNATURES),
        st.builds(redacted, st.text(min_size=1, max_size=80)),
    ),
    min_size=1,
    max_size=5,
)
_VISIBLE = st.text(max_size=100).filter(lambda t: continuation.PREFIX not in t)
_INPUTS = st.dictionaries(
    st.text(max_size=10),
    st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=20), st.booleans(), st.none()),
    max_size=4,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    blocks=_BLOCKS,
    visible=_VISIBLE,
    inputs=st.lists(_INPUTS, min_size=0, max_size=3),
    zed_default=st.booleans(),
)
def test_round_trip_property(
    blocks: list[dict[str, Any]], visible: str, inputs: list[dict[str, Any]], zed_default: bool
) -> None:
    """Any thinking text (any unicode) and signature survives Chat and comes back identical."""
    content: list[dict[str, Any]] = list(blocks)
    if visible:
        content.append(text(visible))
    for i, inp in enumerate(inputs):
        content.append(tool_use(f"toolu_{i:02d}", "tool_x", inp))
    msg = message(*content, stop_reason="tool_use" if inputs else "end_turn")
    completion = complete(msg, KEY)
    has_tail = bool(inputs) or bool(visible.strip())
    if not has_tail:
        # Only thinking and nothing visible: the turn carries nothing to continue from.
        return
    restored = replay(msg, completion, zed_default=zed_default)
    assert restored == _expected_blocks(msg, zed_default=zed_default)
