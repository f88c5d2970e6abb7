"""Non-streamed replies both ways (hydra_proxy.responses.response) and the error shapes.

Every recorded Anthropic Message goes through the response writer and every produced
``response`` must pass the openai SDK's `Response` model in strict mode; every recorded
Responses ``response`` goes through the response reader and must pass the anthropic SDK's
`Message` model. Round trips: recording -> reader -> writer keeps the output items, and
Message -> writer -> reader gives the Message back (thinking through the carrier).
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from anthropic.types import Message
from openai.types.responses import (
    Response,
    ResponseErrorEvent,
    ResponseFailedEvent,
)

from hydra_proxy.canonical.target import MessagesTarget
from hydra_proxy.errors import ProxyError, invalid_request
from hydra_proxy.responses.context import ResponsesContext
from hydra_proxy.responses.errors import (
    error_body,
    error_event,
    failed_event,
    response_error_code,
    upstream_failure,
)
from hydra_proxy.responses.items import item_id, response_status, responses_usage
from hydra_proxy.responses.reasoning import decode_carrier, verify_upstream_item
from hydra_proxy.responses.request.reader import messages_request_from_responses
from hydra_proxy.responses.response.reader import message_from_response
from hydra_proxy.responses.response.writer import response_from_message, thinking_text
from hydra_proxy.signature import verify_thinking
from hydra_proxy.tokens import text_tokens
from support.responses_fixtures import (
    anthropic_messages,
    codex_first_turn,
    error_recordings,
    request_recordings,
    response_recordings,
)

KEY = b"responses-test-key-0123456789abcdef"
TARGET = MessagesTarget(model="claude-test", continuation_key=KEY)
CODEX = messages_request_from_responses(codex_first_turn(), TARGET).context
PLAIN = ResponsesContext(model="gpt-test")
MESSAGES = anthropic_messages()
RESPONSES = response_recordings()


def write(message: dict[str, Any], context: ResponsesContext = CODEX, **kw: Any) -> Any:
    kw.setdefault("key", KEY)
    out = response_from_message(message, context, response_id="resp_t1", created_at=7, **kw)
    Response.model_validate(copy.deepcopy(out), strict=True)
    return out


def message(*content: dict[str, Any], stop_reason: str = "end_turn", **usage: int) -> Any:
    return {
        "id": "msg_t",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 20, **usage},
    }


THINKING = {"type": "thinking", "thinking": "Let me look.", "signature": "EqQBsig"}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}


def tool_use(call_id: str, name: str, tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


# ------------------------------------------------------------------ Message -> response


@pytest.mark.parametrize("name", list(MESSAGES))
@pytest.mark.parametrize("context", [CODEX, PLAIN], ids=["codex", "plain"])
def test_recorded_messages_make_valid_responses(name: str, context: ResponsesContext) -> None:
    recorded = MESSAGES[name]
    out = write(recorded, context)
    assert out["object"] == "response" and out["id"] == "resp_t1"
    assert out["status"] == "completed"
    texts = "".join(b["text"] for b in recorded["content"] if b["type"] == "text")
    got = "".join(
        part["text"]
        for item in out["output"]
        if item["type"] == "message"
        for part in item["content"]
    )
    assert got == texts
    calls = [b for b in recorded["content"] if b["type"] == "tool_use"]
    items = [i for i in out["output"] if i["type"] == "function_call"]
    assert [(i["call_id"], i["name"], orjson.loads(i["arguments"])) for i in items] == [
        (b["id"], b["name"], b["input"]) for b in calls
    ]
    reasoning = [i for i in out["output"] if i["type"] == "reasoning"]
    thinking = [b for b in recorded["content"] if b["type"] in ("thinking", "redacted_thinking")]
    assert bool(reasoning) == bool(thinking)
    for item in reasoning:
        assert ("encrypted_content" in item) == context.include_encrypted
    usage = recorded["usage"]
    expected_input = (
        usage["input_tokens"]
        + (usage.get("cache_read_input_tokens") or 0)
        + (usage.get("cache_creation_input_tokens") or 0)
    )
    assert out["usage"]["input_tokens"] == expected_input
    assert out["usage"]["input_tokens_details"]["cached_tokens"] == (
        usage.get("cache_read_input_tokens") or 0
    )
    assert out["usage"]["total_tokens"] == expected_input + usage["output_tokens"]
    assert out["tools"] == context.tools and out["store"] is False


def test_output_items_in_order_with_ids() -> None:
    out = write(
        message(
            THINKING,
            {"type": "text", "text": "Listing."},
            tool_use("call_1", "exec_command", {"cmd": "ls"}),
            tool_use("call_2", "multi_agent_v1__spawn_agent", {}),
            REDACTED,
            {"type": "text", "text": "Done"},
            stop_reason="tool_use",
        ),
        reasoning_tokens=text_tokens("Let me look."),
    )
    assert [(i["type"], i["id"]) for i in out["output"]] == [
        ("reasoning", "rs_t1_0"),
        ("message", "msg_t1_1"),
        ("function_call", "fc_t1_2"),
        ("function_call", "fc_t1_3"),
        ("reasoning", "rs_t1_4"),
        ("message", "msg_t1_5"),
    ]
    first, _, call1, call2, second, _ = out["output"]
    assert first["summary"] == [{"type": "summary_text", "text": "Let me look."}]
    assert decode_carrier(first["encrypted_content"], KEY) == [THINKING]
    assert second["summary"] == []  # redacted thinking has no text to show
    assert decode_carrier(second["encrypted_content"], KEY) == [REDACTED]
    assert call1 == {
        "id": "fc_t1_2",
        "type": "function_call",
        "status": "completed",
        "call_id": "call_1",
        "name": "exec_command",
        "arguments": '{"cmd":"ls"}',
    }
    assert call2["name"] == "spawn_agent" and call2["namespace"] == "multi_agent_v1"
    assert call2["arguments"] == "{}"
    assert out["usage"]["output_tokens_details"]["reasoning_tokens"] == text_tokens("Let me look.")
    assert write(message(THINKING), reasoning_tokens=500)["usage"]["output_tokens_details"] == {
        "reasoning_tokens": 20  # never more than the output tokens
    }
    assert thinking_text(message(THINKING, REDACTED, THINKING)) == "Let me look." * 2


def test_custom_tool_call_item() -> None:
    body = codex_first_turn()
    body["tools"] = [*body["tools"], {"type": "custom", "name": "apply_patch"}]
    context = messages_request_from_responses(body, TARGET).context
    out = write(
        message(
            tool_use("call_p", "apply_patch", {"input": "*** Begin Patch\n"}),
            stop_reason="tool_use",
        ),
        context,
    )
    assert out["output"] == [
        {
            "id": "ctc_t1_0",
            "type": "custom_tool_call",
            "call_id": "call_p",
            "name": "apply_patch",
            "input": "*** Begin Patch\n",
        }
    ]


def test_no_summary_and_no_encrypted_content_unless_asked() -> None:
    out = write(message(THINKING, {"type": "text", "text": "x"}), PLAIN)
    assert out["output"][0] == {"id": "rs_t1_0", "type": "reasoning", "summary": []}


def test_no_key_no_carrier() -> None:
    out = write(message(THINKING, {"type": "text", "text": "x"}), key=None)
    assert "encrypted_content" not in out["output"][0]


@pytest.mark.parametrize(
    ("stop_reason", "status", "details"),
    [
        ("end_turn", "completed", None),
        ("tool_use", "completed", None),
        ("stop_sequence", "completed", None),
        ("pause_turn", "completed", None),
        ("max_tokens", "incomplete", {"reason": "max_output_tokens"}),
        ("model_context_window_exceeded", "incomplete", {"reason": "max_output_tokens"}),
        ("refusal", "incomplete", {"reason": "content_filter"}),
        (None, "completed", None),
    ],
)
def test_status(stop_reason: Any, status: str, details: Any) -> None:
    assert response_status(stop_reason) == (status, details)
    out = write(message({"type": "text", "text": "cut"}, stop_reason=stop_reason))
    assert out["status"] == status and out["incomplete_details"] == details
    assert out["output"][-1]["status"] == ("incomplete" if status == "incomplete" else "completed")


def test_url_citations_become_annotations() -> None:
    cited = {
        "type": "text",
        "text": "It is sunny.",
        "citations": [
            {
                "type": "web_search_result_location",
                "url": "https://example.com/w",
                "title": "Weather",
                "cited_text": "sunny",
                "encrypted_index": "x",
            }
        ],
    }
    out = write(message({"type": "text", "text": "Today: "}, cited))
    part = out["output"][0]["content"][0]
    assert part["text"] == "Today: It is sunny."
    assert part["annotations"] == [
        {
            "type": "url_citation",
            "start_index": 7,
            "end_index": 19,
            "url": "https://example.com/w",
            "title": "Weather",
        }
    ]


def test_usage_with_cache() -> None:
    usage = {
        "input_tokens": 5,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 20,
        "output_tokens": 7,
    }
    assert responses_usage(usage, reasoning_tokens=50) == {
        "input_tokens": 125,
        "input_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 20},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 7},
        "total_tokens": 132,
    }
    assert responses_usage(None)["total_tokens"] == 0


def test_item_id() -> None:
    assert item_id("fc", "resp_abc", 3) == "fc_abc_3"


# ------------------------------------------------------------------ response -> Message


def read(response: dict[str, Any]) -> dict[str, Any]:
    out = message_from_response(response, message_id="msg_r1", model="gpt-x", key=KEY)
    Message.model_validate(copy.deepcopy(out))
    return out


@pytest.mark.parametrize("name", list(RESPONSES))
def test_recorded_responses_read(name: str) -> None:
    recorded = RESPONSES[name]
    out = read(recorded)
    texts = [
        part["text"]
        for item in recorded["output"]
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    ]
    assert [b["text"] for b in out["content"] if b["type"] == "text"] == texts
    calls = [i for i in recorded["output"] if i["type"] == "function_call"]
    uses = [b for b in out["content"] if b["type"] == "tool_use"]
    assert [(u["id"], u["name"], u["input"]) for u in uses] == [
        (c["call_id"], c["name"], orjson.loads(c["arguments"])) for c in calls
    ]
    assert out["stop_reason"] == ("tool_use" if calls else "end_turn")
    usage = recorded["usage"]
    cached = usage["input_tokens_details"]["cached_tokens"]
    assert (
        out["usage"]["input_tokens"] + out["usage"]["cache_read_input_tokens"]
        == usage["input_tokens"]
    )
    assert out["usage"]["cache_read_input_tokens"] == cached
    assert out["usage"]["output_tokens"] == usage["output_tokens"]
    for item, block in zip(
        [i for i in recorded["output"] if i["type"] == "reasoning" and i.get("encrypted_content")],
        [b for b in out["content"] if b["type"] == "thinking"],
        strict=True,
    ):
        summary = "\n\n".join(s["text"] for s in item["summary"])
        assert block["thinking"] == summary
        assert verify_upstream_item(block["thinking"], block["signature"], KEY) == {
            "id": item["id"],
            "encrypted_content": item["encrypted_content"],
        }


def test_reasoning_without_encrypted_content() -> None:
    recorded = RESPONSES["pydantic-o3mini-reasoning-no-summary.response.json"]
    assert recorded["output"][0]["type"] == "reasoning"
    assert recorded["output"][0]["summary"] == []
    assert [b["type"] for b in read(recorded)["content"]] == ["text"]  # nothing to replay
    summarised = copy.deepcopy(recorded)
    summarised["output"][0]["summary"] = [{"type": "summary_text", "text": "Thought."}]
    block = read(summarised)["content"][0]
    assert block["thinking"] == "Thought."
    assert verify_thinking("Thought.", block["signature"], KEY)


@pytest.mark.parametrize(
    ("details", "stop_reason"),
    [({"reason": "max_output_tokens"}, "max_tokens"), ({"reason": "content_filter"}, "refusal")],
)
def test_incomplete_response(details: dict[str, str], stop_reason: str) -> None:
    recorded = copy.deepcopy(RESPONSES["oaipy-gpt4omini-text.json"])
    recorded["status"] = "incomplete"
    recorded["incomplete_details"] = details
    assert read(recorded)["stop_reason"] == stop_reason


def test_namespaced_and_custom_calls_read() -> None:
    recorded = copy.deepcopy(RESPONSES["vercel-azure-gpt51-function-call.json"])
    call = next(i for i in recorded["output"] if i["type"] == "function_call")
    call["namespace"] = "ns"
    recorded["output"].append(
        {
            "type": "custom_tool_call",
            "id": "ctc_1",
            "call_id": "call_c",
            "name": "apply_patch",
            "input": "*** Begin Patch",
        }
    )
    uses = [b for b in read(recorded)["content"] if b["type"] == "tool_use"]
    assert uses[0]["name"] == "ns__" + call["name"]
    assert uses[1] == tool_use("call_c", "apply_patch", {"input": "*** Begin Patch"})


def test_failed_response_raises() -> None:
    recorded = copy.deepcopy(RESPONSES["oaipy-gpt4omini-text.json"])
    recorded["status"] = "failed"
    recorded["error"] = {"code": "rate_limit_exceeded", "message": "Slow down"}
    with pytest.raises(ProxyError) as caught:
        read(recorded)
    assert caught.value.status == 429 and caught.value.error_type == "rate_limit_error"
    assert caught.value.message == "Slow down"
    recorded["error"] = {"code": "invalid_image", "message": "bad image"}
    assert upstream_failure(recorded).status == 400  # type: ignore[union-attr]
    recorded["error"] = None
    assert upstream_failure(recorded).error_type == "api_error"  # type: ignore[union-attr]
    assert upstream_failure(RESPONSES["oaipy-gpt4omini-text.json"]) is None
    with pytest.raises(ProxyError):
        message_from_response([], message_id="m", model="x")


# ------------------------------------------------------------------------ round trips


def _context_for(name: str, recorded: dict[str, Any]) -> ResponsesContext:
    """The context of the request that produced a recording (its echo when not recorded)."""
    request = request_recordings().get(name.replace(".response.json", ".request.json"))
    if request is not None:
        return messages_request_from_responses(request, TARGET).context
    body = {
        "model": recorded["model"],
        "input": "x",
        "tools": recorded["tools"],
        "reasoning": recorded.get("reasoning"),
        "include": ["reasoning.encrypted_content"],
    }
    return messages_request_from_responses(body, TARGET).context


@pytest.mark.parametrize("name", list(RESPONSES))
def test_round_trip_response_reader_then_writer(name: str) -> None:
    recorded = RESPONSES[name]
    context = _context_for(name, recorded)
    again = write(read(recorded), context, model=recorded["model"])
    replayable = [
        i
        for i in recorded["output"]
        if i["type"] != "reasoning" or i.get("encrypted_content") or i.get("summary")
    ]
    assert [i["type"] for i in again["output"]] == [i["type"] for i in replayable]
    for old, new in zip(replayable, again["output"], strict=True):
        if old["type"] == "message":
            assert [p["text"] for p in new["content"]] == [p["text"] for p in old["content"]]
        elif old["type"] == "function_call":
            assert (new["call_id"], new["name"]) == (old["call_id"], old["name"])
            assert orjson.loads(new["arguments"]) == orjson.loads(old["arguments"])
        else:
            if context.summary:  # the summary parts, joined into one thinking text
                joined = "\n\n".join(part["text"] for part in old["summary"])
                expected = [{"type": "summary_text", "text": joined}] if joined else []
                assert new["summary"] == expected
            # The client carrier holds the thinking block that holds OpenAI's own item.
            (block,) = decode_carrier(new["encrypted_content"], KEY) or []
            assert verify_upstream_item(block["thinking"], block["signature"], KEY) == {
                "id": old["id"],
                "encrypted_content": old["encrypted_content"],
            }
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        assert again["usage"][key] == recorded["usage"][key]
    assert again["status"] == recorded["status"] and again["model"] == recorded["model"]


@pytest.mark.parametrize("name", list(MESSAGES))
def test_round_trip_message_writer_then_reader(name: str) -> None:
    recorded = MESSAGES[name]
    again = read(write(recorded))
    expected = [
        {
            k: v
            for k, v in b.items()
            if k in ("type", "text", "thinking", "signature", "data", "id", "name", "input")
        }
        for b in recorded["content"]
    ]
    assert again["content"] == expected
    assert again["stop_reason"] == recorded["stop_reason"]
    for key in ("input_tokens", "output_tokens"):
        assert again["usage"][key] == recorded["usage"][key]
    assert again["usage"]["cache_read_input_tokens"] == (
        recorded["usage"].get("cache_read_input_tokens") or 0
    )


# ----------------------------------------------------------------------------- errors


def test_error_body_before_the_first_byte() -> None:
    body = orjson.loads(error_body(invalid_request("input[3].call_id: bad", "input[3].call_id")))
    assert body == {
        "error": {
            "message": "input[3].call_id: bad",
            "type": "invalid_request_error",
            "param": "input[3].call_id",
            "code": None,
        }
    }
    for recorded in error_recordings().values():  # OpenAI's own error bodies: same keys
        assert set(recorded["error"]) == set(body["error"])


def test_failed_event_after_the_first_byte() -> None:
    started = write(message({"type": "text", "text": "partial"}))
    event = failed_event(started, "overloaded_error", "Overloaded", 12)
    ResponseFailedEvent.model_validate(copy.deepcopy(event), strict=True)
    assert event["response"]["status"] == "failed"
    assert event["response"]["error"] == {"code": "server_error", "message": "Overloaded"}
    assert event["response"]["output"] == started["output"]
    assert started["status"] == "completed", "the started response is not modified"
    limited = failed_event(started, "rate_limit_error", "Slow down", 3)
    assert limited["response"]["error"]["code"] == "rate_limit_exceeded"


def test_error_event() -> None:
    event = error_event("invalid_request_error", "prompt is too long", 4)
    ResponseErrorEvent.model_validate(event, strict=True)
    assert event == {
        "type": "error",
        "code": "invalid_prompt",
        "message": "prompt is too long",
        "param": None,
        "sequence_number": 4,
    }
    assert response_error_code("api_error") == "server_error"
