"""OpenAI Chat request -> Anthropic Messages request (hydra_proxy.chat.request.reader).

Table-driven: every mapping case is (name, Chat request, expected Anthropic request), every
validation case is (name, Chat request, param, message fragment). Every produced body is
validated with the official anthropic SDK types and checked against Anthropic's sequence
and thinking rules (`assert_valid_anthropic`).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from anthropic.types.message_create_params import (
    MessageCreateParamsNonStreaming,
    MessageCreateParamsStreaming,
)
from pydantic import TypeAdapter

from hydra_proxy import continuation
from hydra_proxy.canonical.params import JSON_OBJECT_INSTRUCTION
from hydra_proxy.canonical.target import MessagesTarget
from hydra_proxy.canonical.turns import LEADING_USER_PLACEHOLDER
from hydra_proxy.chat.request.reader import Translation, messages_request_from_chat
from hydra_proxy.errors import ProxyError

FIXTURES = Path(__file__).parent.parent / "fixtures"
MODEL = "claude-test"
TARGET = MessagesTarget(model=MODEL)
KEY = b"continuation-key-0123456789abcdef"
KEYED = MessagesTarget(model=MODEL, continuation_key=KEY)
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
JPEG = "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBD"
GIF = "R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw=="
WEBP = "UklGRiQAAABXRUJQVlA4IBgAAAAwAQCdASoBAAEAAwA0JaQAA3AA/vuUAAA="
PDF = "JVBERi0xLjQKJcOkw7zDtsOfCjIgMCBvYmoKPDwvTGVuZ3RoIDMgMCBSL0Zp"
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}

_NON_STREAMING = TypeAdapter(MessageCreateParamsNonStreaming)
_STREAMING = TypeAdapter(MessageCreateParamsStreaming)


# ------------------------------------------------------------------------- builders


def req(*messages: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": list(messages), **extra}


def anth(*messages: Any, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 8192, "messages": list(messages)}
    body["stream"] = False
    body.update(extra)
    return body


def sys_(content: Any) -> dict[str, Any]:
    return {"role": "system", "content": content}


def dev(content: Any) -> dict[str, Any]:
    return {"role": "developer", "content": content}


def u(content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, **extra}


def a(content: Any = None, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, **extra}


def tool(call_id: str, content: Any = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def call(call_id: str, name: str = "get_weather", arguments: Any = '{"city":"Paris"}') -> Any:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_part(url: str, **extra: Any) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url, **extra}}


def file_part(**file: Any) -> dict[str, Any]:
    return {"type": "file", "file": file}


def fn_tool(name: Any = "get_weather", parameters: Any = WEATHER_SCHEMA, **extra: Any) -> Any:
    function: dict[str, Any] = {"name": name, "parameters": parameters, **extra}
    if parameters is None:
        del function["parameters"]
    return {"type": "function", "function": function}


def ut(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def at(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def use(call_id: str, name: str = "get_weather", inp: Any = None) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": {"city": "Paris"} if inp is None else inp,
    }


def result(call_id: str, content: Any = "ok") -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    if content is not None:
        block["content"] = content
    return block


def b64_image(media: str, data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}


def hashed(seed: str) -> str:
    return "call_" + hashlib.sha256(seed.encode()).hexdigest()[:24]


def anth_tool(name: str = "get_weather", schema: Any = WEATHER_SCHEMA, **extra: Any) -> Any:
    return {"name": name, **extra, "input_schema": schema}


USER = u("hi")
USER_T = ut(text("hi"))
EPH = {"type": "ephemeral"}


# ------------------------------------------------------------------ validity checks


def _drain(value: Any) -> Any:
    """Materialise pydantic's lazy iterators so every nested item gets validated."""
    if isinstance(value, dict):
        return {k: _drain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_drain(v) for v in value]
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, Iterator) or hasattr(value, "__iter__"):
        return [_drain(v) for v in value]
    return value


def assert_valid_anthropic(body: dict[str, Any]) -> None:
    """The official SDK types accept the body, and Anthropic's request rules hold."""
    adapter = _STREAMING if body.get("stream") else _NON_STREAMING
    _drain(adapter.validate_python(copy.deepcopy(body)))
    messages = body["messages"]
    assert messages, "no messages"
    assert messages[0]["role"] == "user"
    seen_ids: set[str] = set()
    for i, message in enumerate(messages):
        assert message["role"] in ("user", "assistant")
        if i:
            assert message["role"] != messages[i - 1]["role"], "roles must alternate"
        content = message["content"]
        assert isinstance(content, list) and content, f"messages[{i}] empty"
        for block in content:
            if block["type"] == "text":
                assert block["text"].strip(), "whitespace-only text block"
        if message["role"] == "user":
            kinds = [b["type"] == "tool_result" for b in content]
            assert kinds == sorted(kinds, reverse=True), "tool_result blocks must come first"
            results = {b["tool_use_id"] for b in content if b["type"] == "tool_result"}
            if results:
                previous = messages[i - 1]
                calls = {b["id"] for b in previous["content"] if b["type"] == "tool_use"}
                assert results == calls, "tool results must answer the previous calls exactly"
        else:
            assert content[-1]["type"] not in ("thinking", "redacted_thinking")
            for block in content:
                if block["type"] == "tool_use":
                    assert block["id"] not in seen_ids, "duplicate tool_use id"
                    seen_ids.add(block["id"])
                    if i + 1 < len(messages):
                        nxt = messages[i + 1]["content"]
                        assert any(
                            b["type"] == "tool_result" and b["tool_use_id"] == block["id"]
                            for b in nxt
                        )
            for block in content:
                if block["type"] == "thinking":
                    assert isinstance(block["signature"], str)
    final = messages[-1]
    if final["role"] == "assistant" and final["content"][-1]["type"] == "text":
        assert final["content"][-1]["text"] == final["content"][-1]["text"].rstrip()
    thinking: dict[str, Any] = body.get("thinking") or {"type": "disabled"}
    on = thinking["type"] != "disabled"
    if on:
        assert "temperature" not in body and "top_k" not in body
        assert body.get("top_p", 1) >= 0.95
        if thinking["type"] == "enabled":
            assert 1024 <= thinking["budget_tokens"] < body["max_tokens"]
        last_user = max(
            i
            for i, m in enumerate(messages)
            if m["role"] == "user" and not any(b["type"] == "tool_result" for b in m["content"])
        )
        loop = messages[last_user + 1 :]
        if loop:
            assert loop[0]["content"][0]["type"] in ("thinking", "redacted_thinking")
        choice = body.get("tool_choice", {}).get("type")
        assert choice not in ("any", "tool")
    elif final["role"] == "assistant":
        assert all(b["type"] not in ("thinking", "redacted_thinking") for b in final["content"])
    assert not ("temperature" in body and "top_p" in body)


def translate(
    body: dict[str, Any], target: MessagesTarget = TARGET, *, stream: bool = False
) -> Translation:
    before = copy.deepcopy(body)
    out = messages_request_from_chat(body, target, stream=stream)
    assert body == before, "the input must not be modified"
    assert_valid_anthropic(out.body)
    return out


# ------------------------------------------------------------------- mapping table

MAPPING: list[Any] = [
    # --- system / developer
    pytest.param(req(sys_("Be brief."), USER), anth(USER_T, system="Be brief."), id="system"),
    pytest.param(req(dev("Be brief."), USER), anth(USER_T, system="Be brief."), id="developer"),
    pytest.param(
        req(sys_([part("one"), part("two")]), USER),
        anth(USER_T, system="one\ntwo"),
        id="system-text-parts",
    ),
    pytest.param(
        req(sys_("A"), u("hi"), dev("B"), a("ok"), sys_("C"), u("more")),
        anth(USER_T, at(text("ok")), ut(text("more")), system="A\nB\nC"),
        id="system-anywhere-hoisted-in-order",
    ),
    pytest.param(
        req(sys_("  \n"), sys_("A"), USER), anth(USER_T, system="A"), id="system-whitespace-dropped"
    ),
    # --- user content
    pytest.param(req(u("hi")), anth(USER_T), id="user-string"),
    pytest.param(
        req(u([part("a"), part("b")])), anth(ut(text("a"), text("b"))), id="user-text-parts"
    ),
    pytest.param(
        req(u([part("look"), image_part(f"data:image/png;base64,{PNG}", detail="high")])),
        anth(ut(text("look"), b64_image("image/png", PNG))),
        id="image-data-url-png",
    ),
    pytest.param(
        req(u([image_part(f"data:image/jpg;base64,{JPEG}")])),
        anth(ut(b64_image("image/jpeg", JPEG))),
        id="image-jpg-alias",
    ),
    pytest.param(
        req(
            u(
                [
                    image_part(f"data:image/gif;base64,{GIF}"),
                    image_part(f"data:image/webp;base64,{WEBP}"),
                ]
            )
        ),
        anth(ut(b64_image("image/gif", GIF), b64_image("image/webp", WEBP))),
        id="image-gif-webp",
    ),
    pytest.param(
        req(u([image_part(f"data:image/jpeg;base64,{PNG}")])),
        anth(ut(b64_image("image/png", PNG))),
        id="image-media-type-from-magic-bytes",
    ),
    pytest.param(
        req(u([image_part(f"data:IMAGE/GIF;BASE64,{GIF[:20]}\n{GIF[20:].rstrip('=')}")])),
        anth(ut(b64_image("image/gif", GIF))),
        id="image-base64-whitespace-and-padding-normalised",
    ),
    pytest.param(
        req(u([image_part("https://example.com/cat.png")])),
        anth(
            ut({"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}})
        ),
        id="image-https-url",
    ),
    pytest.param(
        req(u([{"type": "image_url", "image_url": "https://example.com/cat.png"}])),
        anth(
            ut({"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}})
        ),
        id="image-url-bare-string",
    ),
    pytest.param(
        req(u([file_part(file_data=f"data:application/pdf;base64,{PDF}", filename="spec.pdf")])),
        anth(
            ut(
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                    "title": "spec.pdf",
                }
            )
        ),
        id="file-pdf",
    ),
    pytest.param(
        req(u([file_part(file_data=PDF)])),
        anth(
            ut(
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                }
            )
        ),
        id="file-pdf-bare-base64",
    ),
    pytest.param(
        req(u([file_part(file_data="data:text/plain;base64,aGVsbG8K", filename="a.txt")])),
        anth(
            ut(
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "hello\n"},
                    "title": "a.txt",
                }
            )
        ),
        id="file-text-plain",
    ),
    pytest.param(
        req(u([file_part(file_data=f"data:image/png;base64,{PNG}", filename="x.png")])),
        anth(ut(b64_image("image/png", PNG))),
        id="file-image",
    ),
    pytest.param(
        req(u("hi"), u("   \n"), u([part(" ")]), u([])),
        anth(USER_T),
        id="whitespace-only-user-messages-dropped",
    ),
    pytest.param(
        req(u([part("a"), part("  "), part("b")])),
        anth(ut(text("a"), text("b"))),
        id="whitespace-only-text-part-dropped",
    ),
    pytest.param(
        req(u("a"), u([part("b")]), u("c", name="bob")),
        anth(ut(text("a"), text("b"), text("c"))),
        id="consecutive-user-merged-name-ignored",
    ),
    # --- assistant content
    pytest.param(
        req(u("hi"), a("Hello."), u("more")),
        anth(USER_T, at(text("Hello.")), ut(text("more"))),
        id="assistant-string",
    ),
    pytest.param(
        req(u("hi"), a([part("one"), {"type": "refusal", "refusal": "no"}]), u("more")),
        anth(USER_T, at(text("one"), text("no")), ut(text("more"))),
        id="assistant-text-and-refusal-parts",
    ),
    pytest.param(
        req(u("hi"), a(None, refusal="I can't help with that."), u("more")),
        anth(USER_T, at(text("I can't help with that.")), ut(text("more"))),
        id="assistant-refusal-field",
    ),
    pytest.param(
        req(u("hi"), a("", name="x"), u("more")),
        anth(ut(text("hi"), text("more"))),
        id="empty-assistant-dropped-users-merged",
    ),
    pytest.param(
        req(u("hi"), a("one"), a([part("two")]), u("more")),
        anth(USER_T, at(text("one"), text("two")), ut(text("more"))),
        id="consecutive-assistant-merged",
    ),
    pytest.param(
        req(a("Hello! How can I help?"), u("hi")),
        anth(ut(text(LEADING_USER_PLACEHOLDER)), at(text("Hello! How can I help?")), USER_T),
        id="leading-assistant-gets-placeholder-user",
    ),
    pytest.param(
        req(u("hi"), a("The answer is:  \n")),
        anth(USER_T, at(text("The answer is:"))),
        id="final-assistant-trailing-whitespace-stripped",
    ),
    # --- tool calls and results
    pytest.param(
        req(u("hi"), a(None, tool_calls=[call("call_1")]), tool("call_1", "18C")),
        anth(USER_T, at(use("call_1")), ut(result("call_1", "18C"))),
        id="tool-call-and-out",
    ),
    pytest.param(
        req(
            u("hi"),
            a("Checking.", tool_calls=[call("call_1"), call("call_2", "get_time", "{}")]),
            tool("call_1", "18C"),
            tool("call_2", [part("12:00")]),
        ),
        anth(
            USER_T,
            at(text("Checking."), use("call_1"), use("call_2", "get_time", {})),
            ut(result("call_1", "18C"), result("call_2", [text("12:00")])),
        ),
        id="consecutive-tool-messages-one-turn",
    ),
    pytest.param(
        req(u("hi"), a(None, tool_calls=[call("call_1")]), tool("call_1"), u("and now?")),
        anth(USER_T, at(use("call_1")), ut(result("call_1"), text("and now?"))),
        id="user-after-tools-merged-after-results",
    ),
    pytest.param(
        req(
            u("hi"),
            a(None, tool_calls=[call("call_1"), call("call_2")]),
            tool("call_1"),
            u("wait"),
            tool("call_2"),
        ),
        anth(
            USER_T,
            at(use("call_1"), use("call_2")),
            ut(result("call_1"), result("call_2"), text("wait")),
        ),
        id="tool-results-placed-before-user-text",
    ),
    pytest.param(
        req(
            u("hi"),
            a(None, tool_calls=[call("call_1", "screenshot", "")]),
            tool("call_1", [part("Here:"), image_part(f"data:image/png;base64,{PNG}")]),
        ),
        anth(
            USER_T,
            at(use("call_1", "screenshot", {})),
            ut(result("call_1", [text("Here:"), b64_image("image/png", PNG)])),
        ),
        id="tool-out-image-zed-empty-arguments",
    ),
    pytest.param(
        req(u("hi"), a(None, tool_calls=[call("call_1")]), tool("call_1", ""), u("next")),
        anth(USER_T, at(use("call_1")), ut(result("call_1", None), text("next"))),
        id="tool-out-empty-content-omitted",
    ),
    pytest.param(
        req(
            u("hi"),
            a(None, tool_calls=[call("call_1", arguments={"city": "Oslo"})]),
            tool("call_1"),
        ),
        anth(USER_T, at(use("call_1", inp={"city": "Oslo"})), ut(result("call_1"))),
        id="arguments-given-as-object",
    ),
    pytest.param(
        req(u("hi"), a(None, tool_calls=[call("call_1", arguments="  ")]), tool("call_1")),
        anth(USER_T, at(use("call_1", inp={})), ut(result("call_1"))),
        id="arguments-whitespace-empty-object",
    ),
    pytest.param(
        req(
            u("hi"),
            a(None, tool_calls=[call("functions.get_weather:0")]),
            tool("functions.get_weather:0"),
        ),
        anth(
            USER_T,
            at(use(hashed("functions.get_weather:0"))),
            ut(result(hashed("functions.get_weather:0"))),
        ),
        id="tool-id-outside-anthropic-pattern-hashed",
    ),
    pytest.param(
        req(
            u("hi"),
            a(None, tool_calls=[call("0")]),
            tool("0", "r1"),
            a(None, tool_calls=[call("0")]),
            tool("0", "r2"),
        ),
        anth(
            USER_T,
            at(use("0")),
            ut(result("0", "r1")),
            at(use(hashed("0\x00messages[3].tool_calls[0]"))),
            ut(result(hashed("0\x00messages[3].tool_calls[0]"), "r2")),
        ),
        id="tool-id-reused-later-renamed",
    ),
    pytest.param(
        req(
            u("hi"),
            a(None, tool_calls=[{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]),
            tool("c1"),
        ),
        anth(USER_T, at(use("c1", "f", {})), ut(result("c1"))),
        id="tool-call-without-type",
    ),
    # --- tools and tool_choice
    pytest.param(
        req(USER, tools=[fn_tool(description="Weather.", strict=True)]),
        anth(USER_T, tools=[anth_tool(description="Weather.")]),
        id="tools-strict-dropped",
    ),
    pytest.param(
        req(USER, tools=[fn_tool(description="")]),
        anth(USER_T, tools=[anth_tool()]),
        id="tools-empty-description-omitted",
    ),
    pytest.param(
        req(USER, tools=[fn_tool("now", None), fn_tool("later", {})]),
        anth(
            USER_T,
            tools=[
                anth_tool("now", {"type": "object", "properties": {}}),
                anth_tool("later", {"type": "object", "properties": {}}),
            ],
        ),
        id="tools-missing-parameters",
    ),
    pytest.param(
        req(USER, tools=[fn_tool(parameters={"properties": {"a": {"type": "integer"}}})]),
        anth(
            USER_T,
            tools=[anth_tool(schema={"type": "object", "properties": {"a": {"type": "integer"}}})],
        ),
        id="tools-schema-without-type",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], tool_choice="none"),
        anth(USER_T, tools=[anth_tool()], tool_choice={"type": "none"}),
        id="tool-choice-none",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], tool_choice="auto"),
        anth(USER_T, tools=[anth_tool()], tool_choice={"type": "auto"}),
        id="tool-choice-auto",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], tool_choice="required"),
        anth(USER_T, tools=[anth_tool()], tool_choice={"type": "any"}),
        id="tool-choice-required",
    ),
    pytest.param(
        req(
            USER,
            tools=[fn_tool()],
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
        ),
        anth(USER_T, tools=[anth_tool()], tool_choice={"type": "tool", "name": "get_weather"}),
        id="tool-choice-named",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], parallel_tool_calls=False),
        anth(
            USER_T,
            tools=[anth_tool()],
            tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        ),
        id="parallel-tool-calls-false",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], tool_choice="required", parallel_tool_calls=False),
        anth(
            USER_T,
            tools=[anth_tool()],
            tool_choice={"type": "any", "disable_parallel_tool_use": True},
        ),
        id="parallel-tool-calls-false-required",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], tool_choice="none", parallel_tool_calls=False),
        anth(USER_T, tools=[anth_tool()], tool_choice={"type": "none"}),
        id="parallel-tool-calls-false-none",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], parallel_tool_calls=True),
        anth(USER_T, tools=[anth_tool()]),
        id="parallel-tool-calls-true",
    ),
    pytest.param(
        req(USER, tool_choice="auto", parallel_tool_calls=False),
        anth(USER_T),
        id="tool-choice-without-tools-dropped",
    ),
    pytest.param(
        req(
            USER,
            tools=[fn_tool("a"), fn_tool("b"), fn_tool("c")],
            tool_choice={
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "required",
                    "tools": [
                        {"type": "function", "function": {"name": "c"}},
                        {"type": "function", "function": {"name": "a"}},
                    ],
                },
            },
        ),
        anth(USER_T, tools=[anth_tool("a"), anth_tool("c")], tool_choice={"type": "any"}),
        id="tool-choice-allowed-tools",
    ),
    # --- parameters
    pytest.param(
        req(USER, max_completion_tokens=100, max_tokens=200),
        anth(USER_T, max_tokens=100),
        id="max-completion-tokens-preferred",
    ),
    pytest.param(req(USER, max_tokens=200), anth(USER_T, max_tokens=200), id="max-tokens"),
    pytest.param(
        req(USER, max_tokens=None, max_completion_tokens=None),
        anth(USER_T),
        id="max-tokens-null-default",
    ),
    pytest.param(req(USER, stop="END"), anth(USER_T, stop_sequences=["END"]), id="stop-string"),
    pytest.param(
        req(USER, stop=["a", "b", " c", "d"]),
        anth(USER_T, stop_sequences=["a", "b", " c", "d"]),
        id="stop-list-of-four",
    ),
    pytest.param(req(USER, stop=[]), anth(USER_T), id="stop-empty-list"),
    pytest.param(
        req(USER, temperature=1.7), anth(USER_T, temperature=1.0), id="temperature-clamped"
    ),
    pytest.param(req(USER, temperature=0.2), anth(USER_T, temperature=0.2), id="temperature"),
    pytest.param(req(USER, temperature=0), anth(USER_T, temperature=0), id="temperature-zero"),
    pytest.param(req(USER, top_p=0.9), anth(USER_T, top_p=0.9), id="top-p"),
    pytest.param(
        req(USER, temperature=1, top_p=0.9),
        anth(USER_T, top_p=0.9),
        id="temperature-default-dropped-for-top-p",
    ),
    pytest.param(
        req(USER, temperature=0.5, top_p=0.9),
        anth(USER_T, temperature=0.5),
        id="top-p-dropped-for-temperature",
    ),
    pytest.param(req(USER, top_k=40), anth(USER_T, top_k=40), id="top-k-extension"),
    pytest.param(
        req(USER, user="user-42"), anth(USER_T, metadata={"user_id": "user-42"}), id="user"
    ),
    pytest.param(
        req(USER, safety_identifier="sid-1"),
        anth(USER_T, metadata={"user_id": "sid-1"}),
        id="safety-identifier",
    ),
    pytest.param(
        req(USER, user="x" * 300),
        anth(USER_T, metadata={"user_id": hashlib.sha256(b"x" * 300).hexdigest()}),
        id="user-too-long-hashed",
    ),
    pytest.param(
        req(
            USER,
            seed=7,
            store=True,
            metadata={"k": "v"},
            service_tier="auto",
            prompt_cache_retention="24h",
            verbosity="low",
            prediction={"type": "content", "content": "x"},
            n=1,
            logprobs=False,
            top_logprobs=0,
            presence_penalty=0,
            frequency_penalty=0.0,
            logit_bias={},
            modalities=["text"],
            audio=None,
            web_search_options=None,
            functions=None,
            some_vendor_extension={"x": 1},
        ),
        anth(USER_T),
        id="harmless-knobs-dropped",
    ),
    # --- reasoning effort and thinking
    pytest.param(
        req(USER, reasoning_effort="none"),
        anth(USER_T, thinking={"type": "disabled"}),
        id="effort-none",
    ),
    pytest.param(
        req(USER, reasoning_effort="minimal"),
        anth(USER_T, thinking={"type": "disabled"}),
        id="effort-minimal",
    ),
    pytest.param(
        req(USER, reasoning_effort="low"),
        anth(USER_T, thinking={"type": "enabled", "budget_tokens": 2048}),
        id="effort-low",
    ),
    pytest.param(
        req(USER, reasoning_effort="medium"),
        anth(USER_T, max_tokens=16384, thinking={"type": "enabled", "budget_tokens": 8192}),
        id="effort-medium-raises-max-tokens",
    ),
    pytest.param(
        req(USER, reasoning_effort="high"),
        anth(USER_T, max_tokens=24576, thinking={"type": "enabled", "budget_tokens": 16384}),
        id="effort-high",
    ),
    pytest.param(
        req(USER, reasoning_effort="xhigh"),
        anth(USER_T, max_tokens=40192, thinking={"type": "enabled", "budget_tokens": 32000}),
        id="effort-xhigh",
    ),
    pytest.param(
        req(USER, reasoning_effort="max"),
        anth(USER_T, max_tokens=40192, thinking={"type": "enabled", "budget_tokens": 32000}),
        id="effort-max",
    ),
    pytest.param(
        req(USER, reasoning_effort="high", max_completion_tokens=1000),
        anth(USER_T, max_tokens=17384, thinking={"type": "enabled", "budget_tokens": 16384}),
        id="effort-high-small-max-tokens",
    ),
    pytest.param(
        req(USER, reasoning_effort="low", max_completion_tokens=30000),
        anth(USER_T, max_tokens=30000, thinking={"type": "enabled", "budget_tokens": 2048}),
        id="effort-low-room-enough",
    ),
    pytest.param(
        req(USER, reasoning_effort="high", temperature=0.3, top_k=5, top_p=0.5),
        anth(
            USER_T,
            max_tokens=24576,
            thinking={"type": "enabled", "budget_tokens": 16384},
            top_p=0.95,
        ),
        id="thinking-drops-temperature-top-k-raises-top-p",
    ),
    pytest.param(
        req(USER, reasoning_effort="low", top_p=0.99),
        anth(USER_T, thinking={"type": "enabled", "budget_tokens": 2048}, top_p=0.99),
        id="thinking-keeps-high-top-p",
    ),
    pytest.param(
        req(USER, reasoning_effort="none", temperature=0.3),
        anth(USER_T, thinking={"type": "disabled"}, temperature=0.3),
        id="thinking-off-keeps-temperature",
    ),
    pytest.param(
        req(
            USER,
            thinking={"type": "enabled", "budget_tokens": 1024},
            max_tokens=4096,
            reasoning_effort="high",
        ),
        anth(USER_T, max_tokens=4096, thinking={"type": "enabled", "budget_tokens": 1024}),
        id="native-thinking-wins",
    ),
    pytest.param(
        req(USER, thinking={"type": "adaptive", "display": "summarized"}, reasoning_effort="high"),
        anth(
            USER_T,
            thinking={"type": "adaptive", "display": "summarized"},
            output_config={"effort": "high"},
        ),
        id="native-adaptive-with-effort",
    ),
    pytest.param(
        req(USER, thinking={"type": "disabled"}),
        anth(USER_T, thinking={"type": "disabled"}),
        id="native-thinking-disabled",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], tool_choice="required", reasoning_effort="high"),
        anth(
            USER_T, tools=[anth_tool()], tool_choice={"type": "any"}, thinking={"type": "disabled"}
        ),
        id="forced-tool-choice-turns-thinking-off",
    ),
    # --- response format
    pytest.param(
        req(USER, response_format={"type": "text"}), anth(USER_T), id="response-format-text"
    ),
    pytest.param(
        req(
            USER,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "weather", "schema": WEATHER_SCHEMA, "strict": True},
            },
        ),
        anth(USER_T, output_config={"format": {"type": "json_schema", "schema": WEATHER_SCHEMA}}),
        id="response-format-json-schema",
    ),
    pytest.param(
        req(sys_("Be brief."), USER, response_format={"type": "json_object"}),
        anth(USER_T, system="Be brief.\n" + JSON_OBJECT_INSTRUCTION),
        id="response-format-json-object",
    ),
    # --- thinking, however it is asked
    pytest.param(
        req(USER, reasoning={"effort": "high"}),
        anth(USER_T, max_tokens=24576, thinking={"type": "enabled", "budget_tokens": 16384}),
        id="openrouter-reasoning-effort",
    ),
    pytest.param(
        req(USER, reasoning={"effort": "low"}, reasoning_effort="high"),
        anth(USER_T, thinking={"type": "enabled", "budget_tokens": 2048}),
        id="openrouter-reasoning-wins-over-reasoning-effort",
    ),
    pytest.param(
        req(USER, reasoning={"max_tokens": 3000}),
        anth(USER_T, thinking={"type": "enabled", "budget_tokens": 3000}),
        id="openrouter-reasoning-max-tokens",
    ),
    pytest.param(
        req(USER, reasoning={"max_tokens": 10}),
        anth(USER_T, thinking={"type": "enabled", "budget_tokens": 1024}),
        id="openrouter-reasoning-max-tokens-raised-to-the-minimum",
    ),
    pytest.param(
        req(USER, reasoning={"enabled": True}),
        anth(USER_T, max_tokens=16384, thinking={"type": "enabled", "budget_tokens": 8192}),
        id="openrouter-reasoning-enabled",
    ),
    pytest.param(
        req(USER, reasoning={}),
        anth(USER_T, max_tokens=16384, thinking={"type": "enabled", "budget_tokens": 8192}),
        id="openrouter-reasoning-empty-object-turns-it-on",
    ),
    pytest.param(
        req(USER, reasoning={"enabled": False}, reasoning_effort="high"),
        anth(USER_T, thinking={"type": "disabled"}),
        id="openrouter-reasoning-disabled",
    ),
    pytest.param(
        req(USER, reasoning={"effort": "none"}),
        anth(USER_T, thinking={"type": "disabled"}),
        id="openrouter-reasoning-effort-none",
    ),
    pytest.param(
        req(USER, reasoning={"effort": "low", "exclude": True}),
        anth(USER_T, thinking={"type": "enabled", "budget_tokens": 2048, "display": "omitted"}),
        id="openrouter-reasoning-exclude-omits-the-reasoning",
    ),
    pytest.param(
        req(USER, enable_thinking=True),
        anth(USER_T, max_tokens=16384, thinking={"type": "enabled", "budget_tokens": 8192}),
        id="qwen-enable-thinking",
    ),
    pytest.param(
        req(USER, chat_template_kwargs={"enable_thinking": True}),
        anth(USER_T, max_tokens=16384, thinking={"type": "enabled", "budget_tokens": 8192}),
        id="qwen-enable-thinking-in-chat-template-kwargs",
    ),
    pytest.param(
        req(USER, enable_thinking=False),
        anth(USER_T, thinking={"type": "disabled"}),
        id="qwen-enable-thinking-false",
    ),
    pytest.param(
        req(USER, enable_thinking=True, reasoning_effort="low"),
        anth(USER_T, thinking={"type": "enabled", "budget_tokens": 2048}),
        id="qwen-enable-thinking-with-an-effort",
    ),
    pytest.param(
        req(
            USER, thinking={"type": "enabled", "budget_tokens": 1500}, reasoning={"effort": "high"}
        ),
        anth(USER_T, thinking={"type": "enabled", "budget_tokens": 1500}),
        id="anthropic-thinking-wins-over-openrouter-reasoning",
    ),
    # --- prompt-cache breakpoints
    pytest.param(
        req(
            sys_("Be brief.") | {"cache_control": EPH},
            u("one"),
            a(None, tool_calls=[call("toolu_01") | {"cache_control": EPH}]),
            tool("toolu_01") | {"cache_control": EPH},
        ),
        anth(
            ut(text("one")),
            at(use("toolu_01") | {"cache_control": EPH}),
            ut(result("toolu_01") | {"cache_control": EPH}),
            system=[{"type": "text", "text": "Be brief.", "cache_control": EPH}],
        ),
        id="cache-control-opencode-on-messages-and-tool-calls",
    ),
    pytest.param(
        req(u([part("a"), part("b") | {"cache_control": EPH}, part("c")])),
        anth(ut(text("a"), text("b") | {"cache_control": EPH}, text("c"))),
        id="cache-control-on-a-part",
    ),
    pytest.param(
        req(u([part("a"), part("b")], cache_control={"type": "ephemeral", "ttl": "1h"})),
        anth(ut(text("a"), text("b") | {"cache_control": {"type": "ephemeral", "ttl": "1h"}})),
        id="cache-control-on-a-user-message-marks-its-last-block",
    ),
    pytest.param(
        req(u("q"), a("Sure.", tool_calls=[call("toolu_01")], cache_control=EPH), tool("toolu_01")),
        anth(
            ut(text("q")),
            at(text("Sure."), use("toolu_01") | {"cache_control": EPH}),
            ut(result("toolu_01")),
        ),
        id="cache-control-on-an-assistant-message-with-tool-calls",
    ),
    pytest.param(
        req(
            u("q"),
            a(None, tool_calls=[call("toolu_01")]),
            tool("toolu_01", [part("out") | {"cache_control": EPH}]),
        ),
        anth(
            ut(text("q")),
            at(use("toolu_01")),
            ut(result("toolu_01", [text("out")]) | {"cache_control": EPH}),
        ),
        id="cache-control-inside-a-tool-result-is-the-results",
    ),
    pytest.param(
        req(*[u(f"m{i}", cache_control=EPH) for i in range(6)]),
        anth(ut(*[text(f"m{i}") | ({"cache_control": EPH} if i >= 2 else {}) for i in range(6)])),
        id="cache-control-at-most-four-the-last-kept",
    ),
    pytest.param(
        req(sys_("Be brief."), u("q"), a("A."), u("next"), prompt_cache_key="thread-1"),
        anth(
            ut(text("q")),
            at(text("A.")),
            ut(text("next")),
            cache_control=EPH,
            system=[{"type": "text", "text": "Be brief.", "cache_control": EPH}],
        ),
        id="prompt-cache-key-gives-automatic-breakpoints",
    ),
    pytest.param(
        req(sys_("Be brief."), u("q", cache_control=EPH), prompt_cache_key="thread-1"),
        anth(ut(text("q") | {"cache_control": EPH}), system="Be brief."),
        id="prompt-cache-key-with-the-clients-own-breakpoints-adds-none",
    ),
]


@pytest.mark.parametrize(("chat", "expected"), MAPPING)
def test_mapping(chat: dict[str, Any], expected: dict[str, Any]) -> None:
    assert translate(chat).body == expected


TARGETED: list[Any] = [
    pytest.param(
        MessagesTarget(model=MODEL, default_max_tokens=1000),
        req(USER),
        anth(USER_T, max_tokens=1000),
        id="default-max-tokens",
    ),
    pytest.param(
        MessagesTarget(model=MODEL, max_tokens_limit=4000),
        req(USER, max_completion_tokens=64000),
        anth(USER_T, max_tokens=4000),
        id="max-tokens-clamped",
    ),
    pytest.param(
        MessagesTarget(model=MODEL, max_tokens_limit=10000),
        req(USER, reasoning_effort="high"),
        anth(USER_T, max_tokens=10000, thinking={"type": "enabled", "budget_tokens": 5000}),
        id="budget-halved-to-fit-limit",
    ),
    pytest.param(
        MessagesTarget(model=MODEL, max_tokens_limit=1500),
        req(USER, reasoning_effort="low"),
        anth(USER_T, max_tokens=1500, thinking={"type": "disabled"}),
        id="limit-leaves-no-room-for-thinking",
    ),
    pytest.param(
        MessagesTarget(model=MODEL, thinking_budget={"high": 4000, "low": 500}),
        req(USER, reasoning_effort="high"),
        anth(USER_T, thinking={"type": "enabled", "budget_tokens": 4000}),
        id="thinking-budget-override",
    ),
    pytest.param(
        MessagesTarget(model=MODEL, thinking_budget={"low": 500}),
        req(USER, reasoning_effort="low"),
        anth(USER_T, thinking={"type": "enabled", "budget_tokens": 1024}),
        id="thinking-budget-override-raised-to-minimum",
    ),
]


@pytest.mark.parametrize(("target", "chat", "expected"), TARGETED)
def test_mapping_with_target(
    target: MessagesTarget, chat: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert translate(chat, target).body == expected


def test_streaming_and_include_usage() -> None:
    chat = req(USER, stream=True, stream_options={"include_usage": True})
    out = translate(chat, stream=True)
    assert out.body == anth(USER_T, stream=True)
    assert out.include_usage is True
    assert translate(req(USER, stream=True), stream=True).include_usage is False
    off = translate(req(USER, stream=True, stream_options={"include_usage": False}), stream=True)
    assert off.include_usage is False
    # stream_options on a non-streaming request is ignored
    assert translate(req(USER, stream_options={"include_usage": True})).include_usage is False


def test_recorded_openai_requests() -> None:
    """The recorded OpenAI SDK requests translate (tool loop of pydantic-ai)."""
    second = orjson.loads(
        (FIXTURES / "chat/pydantic-gpt4omini-tool-then-answer.2.request.json").read_bytes()
    )
    out = translate(second["body"], stream=True)
    schema = second["body"]["tools"][0]["function"]["parameters"]
    assert out.body == anth(
        ut(text("What is the capital of the UK? Use the tool, then answer.")),
        at(use("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", {"country": "UK"})),
        ut(result("call_ZR5UUuTt3pf61kjwAJIYdVMj", "London")),
        tools=[anth_tool("get_capital", schema)],
        tool_choice={"type": "auto"},
        stream=True,
    )
    assert out.include_usage is True
    for name in (
        "chat/pydantic-gpt4omini-tool-then-answer.1.request.json",
        "chat/pydantic-http400-developer-role-unsupported.request.json",
        "chat/pydantic-openrouter-midstream-error.request.json",
        "chat/pydantic-zai-glm-reasoning-content.request.json",
    ):
        body = orjson.loads((FIXTURES / name).read_bytes())["body"]
        translated = translate(body, stream=bool(body.get("stream")))
        if name.endswith("zai-glm-reasoning-content.request.json"):
            # Z.AI's own `thinking` shape has no budget: the medium budget.
            assert translated.body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
            assert translated.body["max_tokens"] == 16384


# ----------------------------------------------------------------- validation table

ERRORS: list[Any] = [
    pytest.param({"model": "x"}, "messages", "required", id="messages-missing"),
    pytest.param(req(), "messages", "at least one", id="messages-empty"),
    pytest.param({"messages": "hi"}, "messages", "must be an array", id="messages-not-list"),
    pytest.param(req("hi"), "messages[0]", "must be an object", id="message-not-object"),
    pytest.param(req({"content": "hi"}), "messages[0].role", "required", id="role-missing"),
    pytest.param(
        req({"role": "bot", "content": "hi"}),
        "messages[0].role",
        "unknown role 'bot'",
        id="role-unknown",
    ),
    pytest.param(
        req({"role": "function", "name": "f", "content": "x"}),
        "messages[0].role",
        "deprecated function calling",
        id="role-function",
    ),
    pytest.param(req(sys_("a")), "messages", "no user or assistant message", id="only-system"),
    pytest.param(req(u("  ")), "messages", "no user or assistant message", id="only-whitespace"),
    # system / developer content
    pytest.param(
        req(sys_(5), USER), "messages[0].content", "array of text parts", id="system-content-int"
    ),
    pytest.param(
        req(dev([image_part("https://x/y.png")]), USER),
        "messages[0].content[0].type",
        "only text parts",
        id="developer-image-part",
    ),
    pytest.param(
        req(sys_([{"type": "text"}]), USER),
        "messages[0].content[0].text",
        "must be a string",
        id="system-part-without-text",
    ),
    # user content
    pytest.param(
        req(u(5)),
        "messages[0].content",
        "string or an array of content parts",
        id="user-content-int",
    ),
    pytest.param(req(u(None)), "messages[0].content", "got null", id="user-content-null"),
    pytest.param(
        req(u(["hi"])), "messages[0].content[0]", "must be an object", id="part-not-object"
    ),
    pytest.param(
        req(u([{"text": "x"}])), "messages[0].content[0].type", "required", id="part-type-missing"
    ),
    pytest.param(
        req(u([{"type": "video"}])),
        "messages[0].content[0].type",
        "unsupported content part type 'video'",
        id="part-type-unknown",
    ),
    pytest.param(
        req(u([{"type": "text", "text": 3}])),
        "messages[0].content[0].text",
        "must be a string",
        id="text-not-string",
    ),
    pytest.param(
        req(u([{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}])),
        "messages[0].content[0].type",
        "audio input",
        id="input-audio",
    ),
    pytest.param(
        req(u([{"type": "image_url", "image_url": {}}])),
        "messages[0].content[0].image_url.url",
        "required",
        id="image-url-missing",
    ),
    pytest.param(
        req(u([{"type": "image_url"}])),
        "messages[0].content[0].image_url",
        "required",
        id="image-url-object-missing",
    ),
    pytest.param(
        req(u([image_part("")])),
        "messages[0].content[0].image_url.url",
        "required",
        id="image-url-empty",
    ),
    pytest.param(
        req(u([image_part("ftp://x/y.png")])),
        "messages[0].content[0].image_url.url",
        "data: URL or an http(s) URL",
        id="image-url-scheme",
    ),
    pytest.param(
        req(u([image_part("data:image/png,rawbytes")])),
        "messages[0].content[0].image_url.url",
        "must be base64",
        id="image-data-url-not-base64",
    ),
    pytest.param(
        req(u([image_part("data:image/png;base64")])),
        "messages[0].content[0].image_url.url",
        "must be base64",
        id="image-data-url-no-comma",
    ),
    pytest.param(
        req(u([image_part("data:image/png;base64,@@@@")])),
        "messages[0].content[0].image_url.url",
        "valid base64",
        id="image-data-bad-base64",
    ),
    pytest.param(
        req(u([image_part("data:image/png;base64,")])),
        "messages[0].content[0].image_url.url",
        "valid base64",
        id="image-data-empty",
    ),
    pytest.param(
        req(u([image_part("data:image/bmp;base64,Qk0=")])),
        "messages[0].content[0].image_url.url",
        "unsupported image type 'image/bmp'",
        id="image-type-bmp",
    ),
    pytest.param(
        req(u([file_part(file_id="file-abc")])),
        "messages[0].content[0].file.file_id",
        "file_data instead",
        id="file-id",
    ),
    pytest.param(
        req(u([{"type": "file"}])), "messages[0].content[0].file", "required", id="file-missing"
    ),
    pytest.param(
        req(u([file_part(filename="a.pdf")])),
        "messages[0].content[0].file.file_data",
        "required",
        id="file-data-missing",
    ),
    pytest.param(
        req(u([file_part(file_data="data:application/zip;base64,UEsDBA==")])),
        "messages[0].content[0].file.file_data",
        "unsupported file type 'application/zip'",
        id="file-type-zip",
    ),
    pytest.param(
        req(u([file_part(file_data="UEsDBA==")])),
        "messages[0].content[0].file.file_data",
        "must be a data: URL",
        id="file-bare-base64-not-pdf",
    ),
    pytest.param(
        req(u([file_part(file_data="data:text/plain;base64,//79")])),
        "messages[0].content[0].file.file_data",
        "UTF-8",
        id="file-text-not-utf8",
    ),
    pytest.param(
        req(u([file_part(file_data=f"data:application/pdf;base64,{PDF}", filename=3)])),
        "messages[0].content[0].file.filename",
        "must be a string",
        id="file-filename-int",
    ),
    # assistant
    pytest.param(
        req(USER, a(5)),
        "messages[1].content",
        "array of text parts or null",
        id="assistant-content-int",
    ),
    pytest.param(
        req(USER, a([image_part("https://x/y.png")])),
        "messages[1].content[0].type",
        "only text and refusal parts",
        id="assistant-image-part",
    ),
    pytest.param(
        req(USER, a("x", refusal=1)),
        "messages[1].refusal",
        "must be a string",
        id="assistant-refusal-int",
    ),
    pytest.param(
        req(USER, a("x", reasoning_content=["a"])),
        "messages[1].reasoning_content",
        "must be a string",
        id="reasoning-content-not-string",
    ),
    pytest.param(
        req(USER, a("x", reasoning={"text": "a"})),
        "messages[1].reasoning",
        "must be a string",
        id="reasoning-not-string",
    ),
    pytest.param(
        req(USER, a(None, function_call={"name": "f", "arguments": "{}"})),
        "messages[1].function_call",
        "use tool_calls",
        id="assistant-function-call",
    ),
    pytest.param(
        req(USER, a(None, audio={"id": "audio_1"})),
        "messages[1].audio",
        "audio",
        id="assistant-audio",
    ),
    pytest.param(
        req(USER, a(None, tool_calls={})),
        "messages[1].tool_calls",
        "must be an array",
        id="tool-calls-not-list",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=["x"])),
        "messages[1].tool_calls[0]",
        "must be an object",
        id="tool-call-not-object",
    ),
    pytest.param(
        req(
            USER,
            a(
                None,
                tool_calls=[{"id": "c", "type": "custom", "custom": {"name": "f", "input": "x"}}],
            ),
        ),
        "messages[1].tool_calls[0].type",
        "only function tool calls",
        id="tool-call-custom",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[call("")])),
        "messages[1].tool_calls[0].id",
        "required",
        id="tool-call-id-empty",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[{"id": "c", "type": "function"}])),
        "messages[1].tool_calls[0].function",
        "required",
        id="tool-call-function-missing",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[call("c", "")])),
        "messages[1].tool_calls[0].function.name",
        "required",
        id="tool-call-name-empty",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[{"id": "c", "type": "function", "function": {"name": "f"}}])),
        "messages[1].tool_calls[0].function.arguments",
        "required",
        id="arguments-missing",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[call("c", arguments='{"a":')])),
        "messages[1].tool_calls[0].function.arguments",
        "not valid JSON",
        id="arguments-invalid-json",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[call("c", arguments="[1, 2]")])),
        "messages[1].tool_calls[0].function.arguments",
        "must be a JSON object, got array",
        id="arguments-array",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[call("c", arguments=5)])),
        "messages[1].tool_calls[0].function.arguments",
        "string holding a JSON object",
        id="arguments-int",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[call("c"), call("c")])),
        "messages[1].tool_calls[1].id",
        "duplicate tool call id",
        id="tool-call-id-duplicate",
    ),
    # tool messages
    pytest.param(
        req(USER, a(None, tool_calls=[call("c")]), {"role": "tool", "content": "x"}),
        "messages[2].tool_call_id",
        "required",
        id="tool-call-id-missing",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[call("c")]), tool("other")),
        "messages[2].tool_call_id",
        "does not answer a tool call",
        id="tool-call-id-unknown",
    ),
    pytest.param(
        req(USER, tool("c")),
        "messages[1].tool_call_id",
        "does not answer a tool call",
        id="tool-without-call",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[call("c")]), tool("c"), tool("c")),
        "messages[3].tool_call_id",
        "second time",
        id="tool-answered-twice",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[call("c")]), tool("c", 5)),
        "messages[2].content",
        "must be a string or an array",
        id="tool-content-int",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[call("c")]), tool("c", [{"type": "input_audio"}])),
        "messages[2].content[0].type",
        "audio input",
        id="tool-content-audio",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[call("c1"), call("c2")]), tool("c1"), a("done")),
        "messages[1].tool_calls[1].id",
        "no tool message answering it",
        id="tool-call-unanswered",
    ),
    pytest.param(
        req(USER, a(None, tool_calls=[call("c1")])),
        "messages[1].tool_calls[0].id",
        "no tool message answering it",
        id="final-tool-call-unanswered",
    ),
    # request parameters Claude cannot honour
    pytest.param(req(USER, n=2), "n", "Claude returns one choice; n must be 1", id="n-2"),
    pytest.param(req(USER, n="1"), "n", "n must be 1", id="n-string"),
    pytest.param(req(USER, logprobs=True), "logprobs", "log probabilities", id="logprobs"),
    pytest.param(req(USER, logprobs="yes"), "logprobs", "must be a boolean", id="logprobs-string"),
    pytest.param(req(USER, top_logprobs=3), "top_logprobs", "log probabilities", id="top-logprobs"),
    pytest.param(
        req(USER, audio={"voice": "alloy", "format": "wav"}),
        "audio",
        "audio output",
        id="audio-output",
    ),
    pytest.param(
        req(USER, modalities=["text", "audio"]),
        "modalities[1]",
        "only produce text",
        id="modalities-audio",
    ),
    pytest.param(
        req(USER, modalities="text"), "modalities", "array of strings", id="modalities-string"
    ),
    pytest.param(
        req(USER, presence_penalty=0.5),
        "presence_penalty",
        "no presence_penalty",
        id="presence-penalty",
    ),
    pytest.param(
        req(USER, frequency_penalty=3),
        "frequency_penalty",
        "between -2 and 2",
        id="frequency-penalty-range",
    ),
    pytest.param(
        req(USER, logit_bias={"50256": -100}), "logit_bias", "logit_bias", id="logit-bias"
    ),
    pytest.param(
        req(USER, logit_bias=[1]), "logit_bias", "must be an object", id="logit-bias-list"
    ),
    pytest.param(
        req(USER, web_search_options=[]),
        "web_search_options",
        "must be an object",
        id="web-search-options",
    ),
    pytest.param(req(USER, functions=[{"name": "f"}]), "functions", "use tools", id="functions"),
    pytest.param(req(USER, function_call="auto"), "function_call", "use tools", id="function-call"),
    # numeric parameters
    pytest.param(
        req(USER, temperature=2.5), "temperature", "between 0 and 2", id="temperature-range"
    ),
    pytest.param(
        req(USER, temperature=-0.1), "temperature", "between 0 and 2", id="temperature-negative"
    ),
    pytest.param(
        req(USER, temperature="hot"), "temperature", "must be a number", id="temperature-string"
    ),
    pytest.param(
        req(USER, temperature=True), "temperature", "must be a number", id="temperature-bool"
    ),
    pytest.param(req(USER, top_p=1.5), "top_p", "between 0 and 1", id="top-p-range"),
    pytest.param(req(USER, top_k=0), "top_k", "positive integer", id="top-k-zero"),
    pytest.param(req(USER, max_tokens=0), "max_tokens", "positive integer", id="max-tokens-zero"),
    pytest.param(
        req(USER, max_tokens="100"), "max_tokens", "positive integer", id="max-tokens-string"
    ),
    pytest.param(
        req(USER, max_tokens=True), "max_tokens", "positive integer", id="max-tokens-bool"
    ),
    pytest.param(
        req(USER, max_completion_tokens=1.5),
        "max_completion_tokens",
        "positive integer",
        id="max-completion-tokens-float",
    ),
    pytest.param(
        req(USER, max_completion_tokens=-5, max_tokens=10),
        "max_completion_tokens",
        "positive integer",
        id="max-completion-tokens-negative",
    ),
    pytest.param(req(USER, stop=["a", "b", "c", "d", "e"]), "stop", "at most 4", id="stop-five"),
    pytest.param(req(USER, stop=5), "stop", "string or an array", id="stop-int"),
    pytest.param(req(USER, stop=["a", 1]), "stop[1]", "must be a string", id="stop-item-int"),
    pytest.param(req(USER, stop=" \n"), "stop", "whitespace-only", id="stop-whitespace"),
    pytest.param(
        req(USER, stop=["ok", ""]), "stop[1]", "empty or whitespace-only", id="stop-empty-item"
    ),
    pytest.param(req(USER, stream="yes"), "stream", "must be a boolean", id="stream-string"),
    pytest.param(
        req(USER, stream_options=True),
        "stream_options",
        "must be an object",
        id="stream-options-bool",
    ),
    pytest.param(
        req(USER, stream_options={"include_usage": "yes"}),
        "stream_options.include_usage",
        "must be a boolean",
        id="include-usage-string",
    ),
    pytest.param(req(USER, user=5), "user", "must be a string", id="user-int"),
    # tools
    pytest.param(req(USER, tools={}), "tools", "must be an array", id="tools-not-list"),
    pytest.param(req(USER, tools=["x"]), "tools[0]", "must be an object", id="tool-not-object"),
    pytest.param(
        req(USER, tools=[{"type": "custom", "custom": {"name": "f"}}]),
        "tools[0].type",
        "free-form custom tools",
        id="tool-type-custom",
    ),
    pytest.param(
        req(USER, tools=[{"type": "function"}]),
        "tools[0].function",
        "required",
        id="tool-function-missing",
    ),
    pytest.param(
        req(USER, tools=[fn_tool("get.weather")]),
        "tools[0].function.name",
        "letters, digits",
        id="tool-name-invalid",
    ),
    pytest.param(
        req(USER, tools=[fn_tool(5)]),
        "tools[0].function.name",
        "letters, digits",
        id="tool-name-int",
    ),
    pytest.param(
        req(USER, tools=[fn_tool(), fn_tool()]),
        "tools[1].function.name",
        "duplicate tool name",
        id="tool-name-duplicate",
    ),
    pytest.param(
        req(USER, tools=[fn_tool(parameters="x")]),
        "tools[0].function.parameters",
        "JSON Schema object",
        id="tool-parameters-string",
    ),
    pytest.param(
        req(USER, tools=[fn_tool(parameters={"type": "array"})]),
        "tools[0].function.parameters.type",
        "must be of type 'object'",
        id="tool-parameters-array",
    ),
    pytest.param(
        req(USER, tools=[fn_tool(description=5)]),
        "tools[0].function.description",
        "must be a string",
        id="tool-description-int",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], tool_choice="any"),
        "tool_choice",
        "'none', 'auto', 'required'",
        id="tool-choice-unknown-string",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], tool_choice=1),
        "tool_choice",
        "string or an object",
        id="tool-choice-int",
    ),
    pytest.param(
        req(
            USER, tools=[fn_tool()], tool_choice={"type": "function", "function": {"name": "nope"}}
        ),
        "tool_choice.function.name",
        "no tool named 'nope'",
        id="tool-choice-unknown-function",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], tool_choice={"type": "function", "function": {}}),
        "tool_choice.function.name",
        "required",
        id="tool-choice-function-name-missing",
    ),
    pytest.param(
        req(USER, tool_choice="required"),
        "tool_choice",
        "requires tools",
        id="tool-choice-required-without-tools",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], tool_choice={"type": "custom", "custom": {"name": "f"}}),
        "tool_choice.type",
        "unsupported tool choice type",
        id="tool-choice-custom",
    ),
    pytest.param(
        req(
            USER,
            tools=[fn_tool()],
            tool_choice={
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "auto",
                    "tools": [{"type": "function", "function": {"name": "x"}}],
                },
            },
        ),
        "tool_choice.allowed_tools.tools[0].function.name",
        "no tool named 'x'",
        id="allowed-tools-unknown",
    ),
    pytest.param(
        req(
            USER,
            tools=[fn_tool()],
            tool_choice={"type": "allowed_tools", "allowed_tools": {"mode": "all", "tools": []}},
        ),
        "tool_choice.allowed_tools.mode",
        "'auto' or 'required'",
        id="allowed-tools-mode",
    ),
    pytest.param(
        req(USER, tools=[fn_tool()], parallel_tool_calls="no"),
        "parallel_tool_calls",
        "must be a boolean",
        id="parallel-tool-calls-string",
    ),
    # thinking / reasoning
    pytest.param(
        req(USER, reasoning_effort="extreme"),
        "reasoning_effort",
        "must be one of",
        id="reasoning-effort-unknown",
    ),
    pytest.param(
        req(USER, thinking={"type": "on"}),
        "thinking.type",
        "'enabled', 'adaptive' or 'disabled'",
        id="thinking-type",
    ),
    pytest.param(
        req(USER, thinking={"type": "enabled", "budget_tokens": 10}),
        "thinking.budget_tokens",
        ">= 1024",
        id="thinking-budget-small",
    ),
    pytest.param(req(USER, thinking="on"), "thinking", "must be an object", id="thinking-string"),
    pytest.param(
        req(USER, thinking={"type": "adaptive", "display": "full"}),
        "thinking.display",
        "'summarized' or 'omitted'",
        id="thinking-display",
    ),
    # response format
    pytest.param(
        req(USER, response_format={"type": "xml"}),
        "response_format.type",
        "'text', 'json_object' or 'json_schema'",
        id="response-format-type",
    ),
    pytest.param(
        req(USER, response_format="json"),
        "response_format",
        "must be an object",
        id="response-format-string",
    ),
    pytest.param(
        req(USER, response_format={"type": "json_schema"}),
        "response_format.json_schema",
        "required",
        id="json-schema-missing",
    ),
    pytest.param(
        req(USER, response_format={"type": "json_schema", "json_schema": {"name": "x"}}),
        "response_format.json_schema.schema",
        "required",
        id="json-schema-schema-missing",
    ),
    pytest.param(
        req(
            USER,
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": "{}"}},
        ),
        "response_format.json_schema.schema",
        "JSON Schema object",
        id="json-schema-schema-string",
    ),
    pytest.param(
        req(
            USER, response_format={"type": "json_schema", "json_schema": {"name": 1, "schema": {}}}
        ),
        "response_format.json_schema.name",
        "must be a string",
        id="json-schema-name-int",
    ),
    pytest.param(req(USER, reasoning="high"), "reasoning", "must be an object", id="reasoning-string"),
    pytest.param(
        req(USER, reasoning={"effort": "huge"}), "reasoning.effort", "must be one of",
        id="reasoning-effort-unknown",
    ),
    pytest.param(
        req(USER, reasoning={"max_tokens": -1}), "reasoning.max_tokens", "non-negative",
        id="reasoning-max-tokens-negative",
    ),
    pytest.param(
        req(USER, reasoning={"exclude": "yes"}), "reasoning.exclude", "must be a boolean",
        id="reasoning-exclude-string",
    ),
    pytest.param(
        req(USER, enable_thinking="yes"), "enable_thinking", "must be a boolean",
        id="enable-thinking-string",
    ),
    pytest.param(
        req(u("q", cache_control={"type": "persistent"})), "messages[0].cache_control.type",
        "ephemeral", id="cache-control-type",
    ),
    pytest.param(
        req(u([part("q") | {"cache_control": {"type": "ephemeral", "ttl": "2d"}}])),
        "messages[0].content[0].cache_control.ttl", "'5m' or '1h'", id="cache-control-ttl",
    ),
    pytest.param(
        req(USER, prompt_cache_key=3), "prompt_cache_key", "must be a string",
        id="prompt-cache-key-number",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("chat", "param", "fragment"), ERRORS)
def test_validation_errors(chat: dict[str, Any], param: str, fragment: str) -> None:
    with pytest.raises(ProxyError) as info:
        messages_request_from_chat(chat, KEYED, stream=False)
    error = info.value
    assert error.status == 400
    assert error.error_type == "invalid_request_error"
    assert error.param == param
    assert error.message.startswith(f"{param}: ")
    assert fragment in error.message
    body = orjson.loads(error.openai_body())
    assert body == {
        "error": {
            "message": error.message,
            "type": "invalid_request_error",
            "param": param,
            "code": None,
        }
    }


def test_body_not_an_object() -> None:
    with pytest.raises(ProxyError) as info:
        messages_request_from_chat([], TARGET, stream=False)  # type: ignore[arg-type]
    assert info.value.status == 400


# -------------------------------------------------------------- continuation suffix

SIG_A = "EqQBCkYIBxgCKkDsigA+/=="
SIG_B = "ErUBCkYIBxgCKkBsigB/+=="
REDACTED = (
    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj"
)
BLOCKS: list[continuation.Block] = [
    continuation.ThinkingBlock("First, the weather in Paris. ", SIG_A),
    continuation.RedactedBlock(REDACTED),
    continuation.ThinkingBlock("Then: ünïcödé 🧠\nthoughts.", SIG_B),
]
REASONING = "".join(b.text for b in BLOCKS if isinstance(b, continuation.ThinkingBlock))
SUFFIX = continuation.encode(BLOCKS, KEY)
RESTORED = [
    {"type": "thinking", "thinking": "First, the weather in Paris. ", "signature": SIG_A},
    {"type": "redacted_thinking", "data": REDACTED},
    {"type": "thinking", "thinking": "Then: ünïcödé 🧠\nthoughts.", "signature": SIG_B},
]
VISIBLE = "Let me check the weather."


def loop_request(assistant: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A tool loop in progress: the assistant turn that called the tool, and its out."""
    return req(
        sys_("You are helpful."),
        u("Weather in Paris?"),
        assistant,
        tool("toolu_01", "18C and sunny"),
        tools=[fn_tool()],
        **extra,
    )


def loop_expected(assistant_content: list[Any], **extra: Any) -> dict[str, Any]:
    return anth(
        ut(text("Weather in Paris?")),
        at(*assistant_content),
        ut(result("toolu_01", "18C and sunny")),
        system="You are helpful.",
        tools=[anth_tool()],
        **extra,
    )


THINKING_HIGH = {"max_tokens": 24576, "thinking": {"type": "enabled", "budget_tokens": 16384}}
TOOL_CALLS = [call("toolu_01")]

REPLAYS: list[Any] = [
    pytest.param(
        a(VISIBLE, reasoning_content=REASONING + SUFFIX, tool_calls=TOOL_CALLS), id="interleaved"
    ),
    pytest.param(
        a(VISIBLE, reasoning=REASONING + SUFFIX, tool_calls=TOOL_CALLS), id="reasoning-alias"
    ),
    pytest.param(
        a(VISIBLE, reasoning_content=REASONING + SUFFIX, reasoning="stale", tool_calls=TOOL_CALLS),
        id="reasoning-content-preferred",
    ),
    pytest.param(
        a(REASONING + SUFFIX + "\n\n" + VISIBLE, tool_calls=TOOL_CALLS), id="content-separator"
    ),
    pytest.param(a(REASONING + SUFFIX + VISIBLE, tool_calls=TOOL_CALLS), id="content-no-separator"),
    pytest.param(
        a([part(REASONING + SUFFIX), part(VISIBLE)], tool_calls=TOOL_CALLS), id="content-parts"
    ),
    pytest.param(
        a(
            [part(BLOCKS[0].text), part(BLOCKS[2].text + SUFFIX), part("\n\n" + VISIBLE)],  # type: ignore[union-attr]
            tool_calls=TOOL_CALLS,
        ),
        id="content-parts-reasoning-split",
    ),
    pytest.param(
        a(
            REASONING + SUFFIX + "\n\n" + VISIBLE,
            reasoning_content=REASONING + SUFFIX,
            tool_calls=TOOL_CALLS,
        ),
        id="both-places-restored-once",
    ),
]


@pytest.mark.parametrize("assistant", REPLAYS)
def test_continuation_restores_blocks(assistant: dict[str, Any]) -> None:
    out = translate(loop_request(assistant, reasoning_effort="high"), KEYED)
    assert out.body == loop_expected([*RESTORED, text(VISIBLE), use("toolu_01")], **THINKING_HIGH)
    assert out.restored_blocks == 3
    assert out.skipped_reasoning == 0
    assert out.thinking_disabled is False
    restored = out.body["messages"][1]["content"]
    assert [b.get("signature") for b in restored[:3]] == [SIG_A, None, SIG_B]
    for message in out.body["messages"]:
        for block in message["content"]:
            if block["type"] == "text":
                assert "hydra-continuation" not in block["text"]
                assert "weather in Paris. " not in block["text"]
                assert "thoughts." not in block["text"]


def test_continuation_without_thinking_requested_keeps_history() -> None:
    """Thinking off: restored blocks stay in a non-final assistant turn (Anthropic allows it)."""
    assistant = a(VISIBLE, reasoning_content=REASONING + SUFFIX, tool_calls=TOOL_CALLS)
    out = translate(loop_request(assistant), KEYED)
    assert out.body == loop_expected([*RESTORED, text(VISIBLE), use("toolu_01")])
    assert out.restored_blocks == 3


def tamper_mac(suffix: str) -> str:
    body = suffix[: -len(continuation.SUFFIX_END)]
    last = body[-1]
    return body[:-1] + ("A" if last != "A" else "B") + continuation.SUFFIX_END


def tamper_blocks(suffix: str) -> str:
    encoded = suffix[len(continuation.PREFIX) :].split(".")[0]
    forged = continuation.blocks_json(
        [continuation.ThinkingBlock(BLOCKS[0].text, "forged"), *BLOCKS[1:]]  # type: ignore[union-attr]
    )
    forged_b64 = base64.urlsafe_b64encode(forged).rstrip(b"=").decode()
    return suffix.replace(encoded, forged_b64)


BROKEN: list[Any] = [
    pytest.param(REASONING + tamper_mac(SUFFIX), id="tampered-mac"),
    pytest.param(REASONING + tamper_blocks(SUFFIX), id="tampered-signature"),
    pytest.param(REASONING + continuation.encode(BLOCKS, b"another key"), id="wrong-key"),
    pytest.param(REASONING.replace("Paris", "Rome!") + SUFFIX, id="edited-reasoning"),
    pytest.param(REASONING[5:] + SUFFIX, id="truncated-reasoning"),
    pytest.param(REASONING + SUFFIX[:-2], id="suffix-cut-short"),
    pytest.param(REASONING, id="plain-reasoning-no-suffix"),
]


@pytest.mark.parametrize("reasoning", BROKEN)
def test_unverified_reasoning_is_skipped_never_forged(reasoning: str) -> None:
    assistant = a(VISIBLE, reasoning_content=reasoning, tool_calls=TOOL_CALLS)
    out = translate(loop_request(assistant), KEYED)
    assert out.body == loop_expected([text(VISIBLE), use("toolu_01")])
    assert out.restored_blocks == 0
    assert out.skipped_reasoning == 1
    # With thinking requested, the tool loop cannot be continued with thinking: turned off.
    out = translate(loop_request(assistant, reasoning_effort="high"), KEYED)
    assert out.body == loop_expected(
        [text(VISIBLE), use("toolu_01")], thinking={"type": "disabled"}
    )
    assert out.thinking_disabled is True
    assert out.skipped_reasoning == 1


@pytest.mark.parametrize("reasoning", BROKEN[:-1])
def test_unverified_suffix_in_content_cuts_only_the_marker(reasoning: str) -> None:
    assistant = a(reasoning + "\n\n" + VISIBLE, tool_calls=TOOL_CALLS)
    out = translate(loop_request(assistant, reasoning_effort="high"), KEYED)
    messages = out.body["messages"]
    content = messages[1]["content"]
    assert all(b["type"] not in ("thinking", "redacted_thinking") for b in content)
    texts = [b["text"] for b in content if b["type"] == "text"]
    assert len(texts) == 1
    assert "hydra-continuation" not in texts[0]
    assert texts[0].endswith(VISIBLE)
    assert out.skipped_reasoning == 1
    assert out.thinking_disabled is True


def test_no_key_suffixes_are_not_trusted() -> None:
    assistant = a(REASONING + SUFFIX + "\n\n" + VISIBLE, tool_calls=TOOL_CALLS)
    out = translate(loop_request(assistant), TARGET)
    content = out.body["messages"][1]["content"]
    assert (
        content == [text(REASONING.rstrip()), text(VISIBLE), use("toolu_01")]
        or content
        == [
            text(REASONING.rstrip() + VISIBLE),
            use("toolu_01"),
        ]
        or all("hydra-continuation" not in b.get("text", "") for b in content)
    )
    assert out.restored_blocks == 0
    assert out.skipped_reasoning == 1
    interleaved = a(VISIBLE, reasoning_content=REASONING + SUFFIX, tool_calls=TOOL_CALLS)
    out = translate(loop_request(interleaved), TARGET)
    assert out.body == loop_expected([text(VISIBLE), use("toolu_01")])
    assert out.skipped_reasoning == 1


def test_broken_marker_in_content_exact_text() -> None:
    broken = REASONING + tamper_mac(SUFFIX)
    assistant = a(broken + "\n\n" + VISIBLE, tool_calls=TOOL_CALLS)
    out = translate(loop_request(assistant), KEYED)
    assert out.body == loop_expected([text(REASONING + "\n\n" + VISIBLE), use("toolu_01")])


def test_skipped_reasoning_is_traced_without_its_text(caplog: pytest.LogCaptureFixture) -> None:
    assistant = a(
        VISIBLE, reasoning_content="secret plan" + tamper_mac(SUFFIX), tool_calls=TOOL_CALLS
    )
    with caplog.at_level(logging.DEBUG, logger="hydra_proxy.continuation"):
        translate(loop_request(assistant, reasoning_effort="high"), KEYED)
    records = [r for r in caplog.records if r.name == "hydra_proxy.continuation"]
    assert records
    assert any("messages[2].reasoning_content" in r.getMessage() for r in records)
    assert any("thinking turned off" in r.getMessage() for r in records)
    assert all("secret plan" not in r.getMessage() for r in records)


def test_thinking_loop_without_any_reasoning_turns_thinking_off() -> None:
    """The client dropped reasoning entirely (e.g. older Zed): thinking off, nothing forged."""
    out = translate(
        loop_request(a(VISIBLE, tool_calls=TOOL_CALLS), reasoning_effort="medium"), KEYED
    )
    assert out.body == loop_expected(
        [text(VISIBLE), use("toolu_01")], thinking={"type": "disabled"}
    )
    assert out.thinking_disabled is True
    assert out.skipped_reasoning == 0


def test_thinking_stays_on_when_no_tool_loop_is_open() -> None:
    chat = req(
        u("hi"), a("Hello.", reasoning_content="plain"), u("Weather?"), reasoning_effort="low"
    )
    out = translate(chat, KEYED)
    assert out.body == anth(
        USER_T,
        at(text("Hello.")),
        ut(text("Weather?")),
        thinking={"type": "enabled", "budget_tokens": 2048},
    )
    assert out.thinking_disabled is False
    assert out.skipped_reasoning == 1


def test_later_turns_of_a_loop_need_no_thinking() -> None:
    """Only the assistant turn that starts the loop must start with thinking."""
    chat = req(
        u("Weather in Paris and Rome?"),
        a(None, reasoning_content=REASONING + SUFFIX, tool_calls=[call("toolu_01")]),
        tool("toolu_01", "18C"),
        a(None, tool_calls=[call("toolu_02", arguments='{"city":"Rome"}')]),
        tool("toolu_02", "25C"),
        tools=[fn_tool()],
        reasoning_effort="low",
    )
    out = translate(chat, KEYED)
    assert out.body == anth(
        ut(text("Weather in Paris and Rome?")),
        at(*RESTORED, use("toolu_01")),
        ut(result("toolu_01", "18C")),
        at(use("toolu_02", inp={"city": "Rome"})),
        ut(result("toolu_02", "25C")),
        tools=[anth_tool()],
        thinking={"type": "enabled", "budget_tokens": 2048},
    )


def test_final_assistant_thinking_removed_when_thinking_off() -> None:
    chat = req(u("hi"), a("Partial answer", reasoning_content=REASONING + SUFFIX))
    out = translate(chat, KEYED)
    assert out.body == anth(USER_T, at(text("Partial answer")))
    assert out.restored_blocks == 0
    # ... and kept when thinking is on (a continued final assistant turn).
    out = translate({**chat, "reasoning_effort": "low"}, KEYED)
    assert out.body == anth(
        USER_T,
        at(*RESTORED, text("Partial answer")),
        thinking={"type": "enabled", "budget_tokens": 2048},
    )
    assert out.restored_blocks == 3


def test_assistant_with_only_reasoning_is_dropped() -> None:
    """ "The final block in an assistant message cannot be thinking": nothing else -> no turn."""
    chat = req(u("hi"), a("", reasoning_content=REASONING + SUFFIX), u("again"))
    out = translate(chat, KEYED)
    assert out.body == anth(ut(text("hi"), text("again")))


def test_recorded_redacted_thinking_conversation() -> None:
    """pydantic-ai's recorded redacted-thinking conversation, replayed through a Chat client:
    the translated second request equals the recorded Anthropic one."""
    from hydra_proxy.chat.response.writer import chat_completion_from_message

    first_request = orjson.loads(
        (FIXTURES / "anthropic/pydantic-nonstream-redacted-thinking.1.request.json").read_bytes()
    )["body"]
    first = orjson.loads(
        (FIXTURES / "anthropic/pydantic-nonstream-redacted-thinking.1.response.json").read_bytes()
    )["body"]
    second = orjson.loads(
        (FIXTURES / "anthropic/pydantic-nonstream-redacted-thinking.2.request.json").read_bytes()
    )["body"]
    completion = chat_completion_from_message(
        first, completion_id="chatcmpl-1", model="claude", created=1, continuation_key=KEY
    )
    replayed = completion["choices"][0]["message"]
    target = MessagesTarget(model=second["model"], continuation_key=KEY)
    chat = req(
        u(first_request["messages"][0]["content"][0]["text"]),
        {k: v for k, v in replayed.items() if k in ("role", "content", "reasoning_content")},
        u("What was that?"),
        max_completion_tokens=4096,
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    out = translate(chat, target)
    assert out.body == second
    assert out.restored_blocks == 1


def test_zed_shaped_request() -> None:
    """What Zed sends (PROTOCOL 4): streaming with usage, max_completion_tokens, temperature
    1.0, prompt_cache_key, reasoning_effort, parallel_tool_calls, reasoning replayed as
    text (default mode), a screenshot in a tool message, a whitespace-only user message."""
    chat = {
        "model": "claude-sonnet-4-5",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": 64000,
        "temperature": 1.0,
        "prompt_cache_key": "4f0c2a",
        "reasoning_effort": "high",
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "messages": [
            sys_("You are a coding agent."),
            u([part("Take a screenshot")]),
            a(
                REASONING + SUFFIX + "\n\n" + VISIBLE,
                tool_calls=[call("toolu_01", "screenshot", "")],
            ),
            tool("toolu_01", [image_part(f"data:image/png;base64,{PNG}")]),
            u("  "),
        ],
        "tools": [fn_tool("screenshot", {"type": "object", "properties": {}})],
    }
    out = translate(chat, KEYED, stream=True)
    assert out.body == anth(
        ut(text("Take a screenshot")),
        at(*RESTORED, text(VISIBLE), use("toolu_01", "screenshot", {})),
        ut(result("toolu_01", [b64_image("image/png", PNG)])),
        system=[{"type": "text", "text": "You are a coding agent.", "cache_control": EPH}],
        cache_control=EPH,  # its prompt_cache_key: automatic breakpoints
        max_tokens=64000,
        thinking={"type": "enabled", "budget_tokens": 16384},
        tools=[anth_tool("screenshot", {"type": "object", "properties": {}})],
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        stream=True,
    )
    assert out.include_usage is True
    assert (out.restored_blocks, out.skipped_reasoning, out.thinking_disabled) == (3, 0, False)
