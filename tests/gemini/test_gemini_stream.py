"""Gemini ``streamGenerateContent?alt=sse`` -> Anthropic Messages and OpenAI Chat streams
(AnthropicViaGeminiStream, ChatViaGeminiStream), on both implementations.

The translated recordings are fed to the official SDKs (anthropic's stream accumulator,
openai's chunk types), which must rebuild what the Gemini stream carried (rebuilt here
independently from the recording); native and Python agree byte for byte on recordings and
generated streams at random splits; a streamed reply gives the same Message as the
non-streamed reader (hydra_proxy.gemini.response.reader); and the thought signature of a streamed
function-call turn reaches Gemini again on the next turn.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import anthropic
import httpx2 as httpx
import openai
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hydra_proxy import continuation
from hydra_proxy.gemini.decoder import (
    MAX_ARGUMENTS_DEPTH,
    MSG_ARGUMENTS_TOO_DEEP,
    MSG_BAD_JSON_PATH,
)
from hydra_proxy.gemini.request.writer import gemini_request_from_messages, gemini_target
from hydra_proxy.gemini.response.reader import message_from_gemini_response
from hydra_proxy.gemini.thought_signature import carried_thought_signature, same_signature
from hydra_proxy.signature import verify_thinking
from hydra_proxy.stream.messages import MSG_CUT_OFF
from support import anthropic_grammar
from support.gemini_fixtures import collapsed_response, load_json, stream_chunks
from support.gemini_golden import gemini_class
from support.gemini_streams import GEMINI_STREAMS, chunk, frame, gemini_stream, streams
from support.implementations import end_state, feed_all

KEY = b"gemini-stream-test-key"
MESSAGE_ID = "msg_gem1"
PARTIAL = [n for n in GEMINI_STREAMS if b"partialArgs" in gemini_stream(n)]
WHOLE = [n for n in GEMINI_STREAMS if n not in PARTIAL]
NESTED = "vercel-google-vertex-stream-tool-call-arguments-nested.1.jsonl"
RECORDING = "pydantic-gemini3pro-stream-function-call-thought-signature"


def messages(impl: str, data: bytes, cuts: list[int] | None = None, **options: Any) -> Any:
    t = gemini_class("anthropic_via_gemini", impl)(
        MESSAGE_ID, "claude-x", 17, **{"signing_key": KEY, **options}
    )
    return feed_all(t, data, cuts), t


def chat(impl: str, data: bytes, cuts: list[int] | None = None, **options: Any) -> Any:
    t = gemini_class("chat_via_gemini", impl)(
        "chatcmpl-gem",
        "gemini-x",
        1764547200,
        message_id=MESSAGE_ID,
        **{"include_usage": True, "signing_key": KEY, "continuation_key": KEY, **options},
    )
    return feed_all(t, data, cuts), t


def run_both(data: bytes, cuts: list[int], signing_key: bytes | None = KEY) -> bytes:
    """Both compositions on both implementations; native == Python. The Messages output."""
    outputs = []
    for run, options in (
        (messages, {"signing_key": signing_key}),
        (chat, {"signing_key": signing_key, "continuation_key": signing_key}),
    ):
        native_out, native = run("native", data, cuts, **options)
        python_out, python = run("python", data, cuts, **options)
        assert native_out == python_out, "native and Python outputs differ"
        assert end_state(native) == end_state(python), "native and Python end states differ"
        outputs.append(native_out)
    return outputs[0]


# -- what the recordings carry, rebuilt independently ---------------------------------------

# The arguments of the recordings that stream them (`partialArgs`), read off the recordings.
STREAMED_ARGUMENTS = {
    "vercel-google-stream-tool-call-arguments.jsonl": [
        ("getWeather", {"location": "Boston"}),
        ("getWeather", {"location": "San Francisco"}),
    ],
    "vercel-google-stream-no-args-tool-call.jsonl": [
        ("read_theme", {}),
        ("read_screen", {"id": "A"}),
        ("read_screen", {"id": "B"}),
        ("read_screen", {"id": "C"}),
    ],
    "vercel-google-stream-tool-call-array-arguments-missing-terminal-function-call.jsonl": [
        (
            "writeItems",
            {
                "operations": [
                    {"action": "add", "description": "Fresh red apple", "itemid": "apple_001", "price": 0.5},
                    {"action": "add", "description": "Ripe yellow banana", "itemid": "banana_001", "price": 0.3},
                ]
            },
        )
    ],
}  # fmt: skip


def truth(name: str) -> dict[str, Any]:
    """Text, thinking, calls, thought signatures, finish reason and usage of a recording."""
    text, thinking, calls, signatures = [], [], [], []
    finish, usage = None, None
    for payload in stream_chunks(name):
        if payload.get("usageMetadata", {}).get("promptTokenCount") is not None:
            usage = payload["usageMetadata"]
        candidate = payload["candidates"][0]
        finish = candidate.get("finishReason") or finish
        for part in candidate["content"].get("parts", []):
            if part.get("thoughtSignature"):
                signatures.append(part["thoughtSignature"])
            if part.get("thought"):
                thinking.append(part["text"])
            elif "text" in part:
                text.append(part["text"])
            call = part.get("functionCall")
            if call and call.get("name"):
                calls.append((call["name"], call.get("args")))
    if name in STREAMED_ARGUMENTS:
        calls = STREAMED_ARGUMENTS[name]
    return {
        "text": "".join(text).strip(),
        "thinking": "".join(thinking),
        "calls": [(n, a if a is not None else {}) for n, a in calls],
        "signatures": signatures,
        "finish": finish,
        "usage": usage,
    }


def sdk_final_message(sse: bytes) -> anthropic.types.Message:
    """Run the official SDK's streaming helper over `sse` as if it came from the API."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse)

    client = anthropic.Anthropic(
        api_key="k",
        base_url="http://proxy.test",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    with client.messages.stream(
        model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        for _ in stream:
            pass
        return stream.get_final_message()


def content(message: anthropic.types.Message) -> list[dict[str, Any]]:
    """The blocks as Message dicts hold them (the fields hydra_proxy.gemini.response.reader sets)."""
    keys = {
        "text": ("type", "text"),
        "thinking": ("type", "thinking", "signature"),
        "tool_use": ("type", "id", "name", "input"),
    }
    blocks = [b.model_dump() for b in message.content]
    return [{k: b[k] for k in keys[b["type"]]} for b in blocks]


@pytest.mark.parametrize("name", GEMINI_STREAMS)
def test_anthropic_sdk_rebuilds_every_recording(impl: str, name: str) -> None:
    out, t = messages(impl, gemini_stream(name))
    expected = truth(name)
    anthropic_grammar.check(out)
    message = sdk_final_message(out)
    blocks = content(message)
    assert "".join(b["text"] for b in blocks if b["type"] == "text").strip() == expected["text"]
    assert "".join(b["thinking"] for b in blocks if b["type"] == "thinking") == expected["thinking"]
    calls = [(b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"]
    if name == NESTED:  # (its arguments: test_nested_streamed_arguments_are_reassembled_in_order)
        calls = [(n, {}) for n, _ in calls]
    assert calls == expected["calls"]
    ids = [b["id"] for b in blocks if b["type"] == "tool_use"]
    assert len(set(ids)) == len(ids) and all(i.startswith("toolu_gem1_") for i in ids)
    # Each thoughtSignature is carried, in order, by a thinking block just before its part's
    # block; thinking without one is signed as reasoning text.
    carried = [carried_thought_signature(b, KEY) for b in blocks if b["type"] == "thinking"]
    assert [c for c in carried if c is not None] == expected["signatures"]
    for block, signature in zip(
        [b for b in blocks if b["type"] == "thinking"], carried, strict=True
    ):
        assert signature is not None or verify_thinking(block["thinking"], block["signature"], KEY)
    assert message.stop_reason == ("tool_use" if expected["calls"] else "end_turn")
    assert expected["finish"] == "STOP"
    usage = expected["usage"]
    cached = usage.get("cachedContentTokenCount", 0)
    assert message.usage.input_tokens == usage["promptTokenCount"] - cached
    assert message.usage.cache_read_input_tokens == cached
    assert message.usage.output_tokens == usage.get("candidatesTokenCount", 0) + usage.get(
        "thoughtsTokenCount", 0
    )
    assert t.complete and t.error is None


def test_nested_streamed_arguments_are_reassembled_in_order(impl: str) -> None:
    message = sdk_final_message(messages(impl, gemini_stream(NESTED))[0])
    (call,) = [b for b in content(message) if b["type"] == "tool_use"]
    assert call["name"] == "cookRecipe"
    recipe = call["input"]["recipe"]
    # Every piece of the recording, at its path, in the order the paths first came.
    pieces: dict[str, str] = {}
    for payload in stream_chunks(NESTED):
        for part in payload["candidates"][0]["content"]["parts"]:
            for arg in part["functionCall"].get("partialArgs", []):
                pieces[arg["jsonPath"]] = pieces.get(arg["jsonPath"], "") + arg["stringValue"]
    assert len(pieces) > 20
    for path, value in pieces.items():
        node: Any = call["input"]
        for step in path[2:].replace("[", ".").replace("]", "").split("."):
            node = node[int(step)] if step.isdigit() else node[step]
        assert node == value, path
    assert recipe["ingredients"][0] == {"amount": "16 oz", "name": "Lasagna noodles"}
    assert recipe["steps"][-1] == "Let stand for 15 minutes before serving."
    assert list(recipe) == sorted(
        {p.split(".")[2].split("[")[0] for p in pieces}, key=list(recipe).index
    )


def openai_sdk_chunks(sse: bytes) -> list[Any]:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse)

    client = openai.OpenAI(
        api_key="k",
        base_url="http://proxy.test/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    return list(
        client.chat.completions.create(
            model="gemini-x", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )


@pytest.mark.parametrize("name", GEMINI_STREAMS)
def test_openai_sdk_accepts_every_recording(impl: str, name: str) -> None:
    out, t = chat(impl, gemini_stream(name))
    expected = truth(name)
    chunks = openai_sdk_chunks(out)
    text, reasoning, calls = [], [], {}
    finish, usage = None, None
    for c in chunks:
        assert c.object == "chat.completion.chunk" and c.id == "chatcmpl-gem"
        if c.usage is not None:
            usage = c.usage
        for choice in c.choices:
            text.append(choice.delta.content or "")
            reasoning.append((choice.delta.model_extra or {}).get("reasoning_content") or "")
            for call in choice.delta.tool_calls or []:
                entry = calls.setdefault(call.index, {"name": None, "args": ""})
                if call.function is not None:
                    entry["name"] = entry["name"] or call.function.name
                    entry["args"] += call.function.arguments or ""
            finish = choice.finish_reason or finish
    assert "".join(text).strip() == expected["text"]
    # The reasoning, then the continuation suffix carrying the thinking blocks' signatures
    # (the thought signatures among them) for the client to replay.
    shown = "".join(reasoning)
    suffix_at = shown.find(continuation.PREFIX)
    assert shown[: suffix_at if suffix_at >= 0 else None] == expected["thinking"]
    found = continuation.find(shown, KEY)
    signatures = [
        carried_thought_signature({"type": "thinking", "signature": b.signature}, KEY)
        for b in (found.blocks if isinstance(found, continuation.VerifiedSuffix) else [])
        if isinstance(b, continuation.ThinkingBlock)
    ]
    assert [s for s in signatures if s is not None] == expected["signatures"]
    rebuilt_calls = [(c["name"], orjson.loads(c["args"])) for c in calls.values()]
    if name == NESTED:
        rebuilt_calls = [(n, {}) for n, _ in rebuilt_calls]
    assert rebuilt_calls == expected["calls"]
    assert finish == ("tool_calls" if expected["calls"] else "stop")
    meta = expected["usage"]
    assert usage is not None and usage.prompt_tokens == meta["promptTokenCount"]
    assert usage.completion_tokens == meta.get("candidatesTokenCount", 0) + meta.get(
        "thoughtsTokenCount", 0
    )
    assert t.complete


@pytest.mark.parametrize("name", WHOLE)
def test_streamed_and_non_streamed_give_the_same_message(impl: str, name: str) -> None:
    """The stream decoder makes the non-streamed reader's decisions: same blocks, ids,
    signatures, stop reason and usage for the reply the stream adds up to."""
    streamed = sdk_final_message(messages(impl, gemini_stream(name))[0])
    whole = message_from_gemini_response(
        collapsed_response(name), message_id=MESSAGE_ID, model="claude-x", signing_key=KEY
    )

    def merged(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # generateContent may return a text in several parts; a stream continues one block.
        out: list[dict[str, Any]] = []
        for block in blocks:
            if block["type"] == "text" and out and out[-1]["type"] == "text":
                out[-1] = {"type": "text", "text": out[-1]["text"] + block["text"]}
            else:
                out.append(dict(block))
        return out

    assert merged(content(streamed)) == merged(whole["content"])
    assert streamed.stop_reason == whole["stop_reason"]
    assert streamed.usage.input_tokens == whole["usage"]["input_tokens"]
    assert streamed.usage.output_tokens == whole["usage"]["output_tokens"]
    assert streamed.usage.cache_read_input_tokens == whole["usage"]["cache_read_input_tokens"]


def test_streamed_thought_signature_reaches_gemini_on_the_next_turn(impl: str) -> None:
    """pydantic-ai's gemini-3-pro recording streamed through AnthropicViaGeminiStream; the
    assistant message as Claude Code replays it (thinking + signature, tool_use) and the
    tool result, written by gemini.request.writer: the functionCall part carries the
    recorded .2 request's thoughtSignature (the same bytes; the exact text Gemini sent)."""
    message = sdk_final_message(messages(impl, gemini_stream(f"{RECORDING}.1.sse"))[0])
    assistant = content(message)
    assert [b["type"] for b in assistant] == ["thinking", "tool_use"]
    assert message.stop_reason == "tool_use"
    recorded_1 = load_json(f"{RECORDING}.1.request.json")["body"]
    recorded_2 = load_json(f"{RECORDING}.2.request.json")["body"]
    body = {
        "model": "claude-x",
        "max_tokens": 1000,
        "messages": [
            {"role": "user", "content": recorded_1["contents"][0]["parts"][0]["text"]},
            {"role": "assistant", "content": copy.deepcopy(assistant)},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": assistant[1]["id"], "content": "Mexico"}
                ],
            },
        ],
        "tools": [
            {
                "name": "get_country",
                "description": "",
                "input_schema": {"type": "object", "properties": {}},
            }
        ],
    }
    out = gemini_request_from_messages(body, gemini_target("gemini-3-pro-preview", signing_key=KEY))
    (part,) = out["contents"][1]["parts"]
    (recorded_part,) = recorded_2["contents"][1]["parts"]
    assert part["functionCall"] == {"name": "get_country", "args": {}}
    assert same_signature(part["thoughtSignature"], recorded_part["thoughtSignature"])
    sent = stream_chunks(f"{RECORDING}.1.sse")[0]["candidates"][0]["content"]["parts"][0]
    assert part["thoughtSignature"] == sent["thoughtSignature"]
    assert out["contents"][2]["parts"] == [
        {"functionResponse": {"name": "get_country", "response": {"output": "Mexico"}}}
    ]


# -- native == Python --------------------------------------------------------------------


@pytest.fixture
def require_native() -> None:
    gemini_class("anthropic_via_gemini", "native")


@pytest.mark.usefixtures("require_native")
@pytest.mark.parametrize("name", GEMINI_STREAMS)
def test_differential_fixture(name: str) -> None:
    data = gemini_stream(name)
    whole = run_both(data, [])
    rng = random.Random(name)
    for _ in range(3):
        assert run_both(data, rng.sample(range(1, len(data)), k=min(len(data) - 1, 40))) == whole
    assert run_both(data, list(range(1, min(len(data), 3000)))) == whole
    anthropic_grammar.check(whole)


@pytest.mark.usefixtures("require_native")
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(streams(), st.data(), st.booleans())
def test_generated_streams(data_bytes: bytes, data: st.DataObject, signed: bool) -> None:
    cuts = data.draw(st.lists(st.integers(1, max(1, len(data_bytes) - 1)), max_size=12))
    out = run_both(data_bytes, cuts if len(data_bytes) > 1 else [], KEY if signed else None)
    assert out == run_both(data_bytes, [], KEY if signed else None)
    anthropic_grammar.check(out)


@pytest.mark.usefixtures("require_native")
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(GEMINI_STREAMS), st.data())
def test_corrupted_recordings(name: str, data: st.DataObject) -> None:
    body = bytearray(gemini_stream(name))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(body) - 1))
        body[at : at + 2] = data.draw(st.sampled_from([b"\xff", b"}", b'"', b"\r\n\r\n", b"1"]))
    cut = data.draw(st.integers(1, len(body)))
    run_both(bytes(body[:cut]), data.draw(st.lists(st.integers(1, max(1, cut - 1)), max_size=5)))


# -- corner cases, by meaning ---------------------------------------------------------------

STOP = chunk({"text": ""}, finish="STOP", usage={"promptTokenCount": 10, "candidatesTokenCount": 2})


def rebuilt(impl: str, data: bytes) -> anthropic_grammar.Rebuilt:
    return anthropic_grammar.check(messages(impl, data)[0])


def test_cut_off_stream_is_an_error(impl: str) -> None:
    r = rebuilt(impl, frame(chunk({"text": "Hel"})))
    assert r.error == {"type": "api_error", "message": MSG_CUT_OFF}
    assert not r.complete


def test_error_chunk_keeps_its_type_and_message(impl: str) -> None:
    error = {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}
    r = rebuilt(impl, frame(chunk({"text": "Hel"}), {"error": error}))
    assert r.error == {"type": "rate_limit_error", "message": "Resource has been exhausted"}


def _nested(depth: int) -> Any:
    """`depth` arrays and objects, nested: an object outermost, then lists."""
    inner: Any = 1
    for _ in range(depth - 1):
        inner = [inner]
    return {"deep": inner}


@pytest.mark.parametrize("depth", [MAX_ARGUMENTS_DEPTH, MAX_ARGUMENTS_DEPTH + 1])
def test_deeply_nested_arguments_pass_up_to_the_bound_then_fail(impl: str, depth: int) -> None:
    """Arguments as deep as the JSON reader allows (1024) but past what orjson writes (254)
    end the stream with a clear error on both implementations, the same bytes."""
    call = {"functionCall": {"name": "Run", "args": _nested(depth)}}
    data = frame(chunk(call), STOP)
    out, _ = messages(impl, data)
    assert out == messages("python", data)[0] and out == messages("native", data)[0]
    assert chat(impl, data)[0] == chat("python", data)[0] == chat("native", data)[0]
    events = [orjson.loads(line[6:]) for line in out.split(b"\n") if line.startswith(b"data: ")]
    # (read by hand: the SDK's own JSON reader stops at 200 levels)
    arguments = "".join(
        e["delta"]["partial_json"]
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    )
    if depth <= MAX_ARGUMENTS_DEPTH:
        assert events[-1]["type"] == "message_stop"
        assert orjson.loads(arguments) == _nested(depth)
    else:
        assert events[-1] == {
            "type": "error",
            "error": {"type": "api_error", "message": MSG_ARGUMENTS_TOO_DEEP},
        }
        assert arguments == ""


def test_blocked_prompt_is_a_refusal(impl: str) -> None:
    r = rebuilt(impl, frame({"promptFeedback": {"blockReason": "SAFETY"}}))
    assert r.complete and r.stop_reason == "refusal" and r.content == []


def test_malformed_function_call_is_a_retryable_error(impl: str) -> None:
    lost = {"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "bad"}]}
    r = rebuilt(impl, frame(chunk({"text": "Calling"}), lost))
    assert r.error is not None and r.error["type"] == "api_error"
    assert "MALFORMED_FUNCTION_CALL" in r.error["message"] and ": bad;" in r.error["message"]


def test_parallel_calls_get_stable_distinct_ids(impl: str) -> None:
    calls = chunk(
        {"functionCall": {"name": "Read", "args": {"path": "a"}}, "thoughtSignature": "QUJD"},
        {"functionCall": {"name": "Read", "args": {"path": "b"}}},
    )
    data = frame(calls, STOP)
    blocks = content(sdk_final_message(messages(impl, data)[0]))
    assert [b["type"] for b in blocks] == ["thinking", "tool_use", "tool_use"]
    assert [b["id"] for b in blocks[1:]] == ["toolu_gem1_0", "toolu_gem1_1"]
    assert [b["input"] for b in blocks[1:]] == [{"path": "a"}, {"path": "b"}]
    assert carried_thought_signature(blocks[0], KEY) == "QUJD"
    assert blocks == content(sdk_final_message(messages(impl, data)[0]))  # same ids again


def test_streamed_arguments_across_chunks(impl: str) -> None:
    pieces = [
        {"jsonPath": "$.file.path", "stringValue": "src/", "willContinue": True},
        {"jsonPath": "$.file.path", "stringValue": "main.rs"},
        {"jsonPath": "$.edits[0].line", "numberValue": 3},
        {"jsonPath": "$.edits[1].line", "numberValue": 4.5},
        {"jsonPath": "$.dry", "boolValue": False},
    ]
    parts = [{"functionCall": {"name": "Edit", "willContinue": True}}]
    parts += [{"functionCall": {"partialArgs": [p], "willContinue": True}} for p in pieces]
    parts.append({"functionCall": {}})
    blocks = content(sdk_final_message(messages(impl, frame(*[chunk(p) for p in parts], STOP))[0]))
    assert blocks == [
        {
            "type": "tool_use",
            "id": "toolu_gem1_0",
            "name": "Edit",
            "input": {
                "file": {"path": "src/main.rs"},
                "edits": [{"line": 3}, {"line": 4.5}],
                "dry": False,
            },
        }
    ]


def test_unfollowable_argument_path_is_an_error(impl: str) -> None:
    parts = [
        {"functionCall": {"name": "Edit", "willContinue": True}},
        {"functionCall": {"partialArgs": [{"jsonPath": "$.a[3]", "numberValue": 1}]}},
    ]
    r = rebuilt(impl, frame(*[chunk(p) for p in parts], STOP))
    assert r.error == {"type": "api_error", "message": MSG_BAD_JSON_PATH}


def test_oversize_event_is_an_error(impl: str) -> None:
    out, t = messages(impl, frame(chunk({"text": "x" * 500}), STOP), max_event_bytes=200)
    assert t.error is not None and t.error[0] == "api_error" and "200" in t.error[1]
    anthropic_grammar.check(out)
