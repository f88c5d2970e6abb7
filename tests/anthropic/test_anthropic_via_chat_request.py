"""Anthropic Messages request -> OpenAI Chat request (hydra_proxy.chat.request.writer).

Table-driven: every case is (name, Anthropic request, expected Chat request). Every
successful translation is also checked for a valid Chat message sequence.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hydra_proxy.canonical.content import MISSING_TOOL_RESULT
from hydra_proxy.canonical.turns import LEADING_USER_PLACEHOLDER
from hydra_proxy.chat.request.writer import ChatTarget, chat_request_from_messages
from hydra_proxy.errors import ProxyError
from hydra_proxy.signature import sign_thinking

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude-code"
KEY = b"test-signing-key"
TARGET = ChatTarget(model="gpt-test")
REPLAY = ChatTarget(model="deepseek-test", reasoning=True, replay_reasoning=True, signing_key=KEY)
REASONING = ChatTarget(model="o-test", reasoning=True)
THOUGHT = "The user wants a listing. "
PROXY_SIG = sign_thinking(THOUGHT, KEY)
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
CC_USER_ID = (
    '{"device_id":"0053efc158b52efead2d744273993c2e4006a6c00c5c2d2d4afa0dc2bb9b6597",'
    '"account_uuid":"","session_id":"3a6dbdec-fc7e-43de-ade9-35fd122facb8"}'
)
PDF = "JVBERi0xLjQKJcOkw7zDtsOfCjIgMCBvYmoKPDwvTGVuZ3RoIDMgMCBSL0Zp"


# ------------------------------------------------------------------------- builders


def areq(messages: list[Any], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages, **extra}


def oreq(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-test", "max_tokens": 1024, "messages": messages, **extra}


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def asst(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def system(content: Any) -> dict[str, Any]:
    return {"role": "system", "content": content}


def text(t: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": t, **extra}


def tool_use(call_id: str, name: str = "Bash", inp: Any = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_use", "id": call_id, "name": name}
    block["input"] = {"command": "ls"} if inp is None else inp
    return block


def tool_result(call_id: str, content: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, **extra}


def thinking(sig: str, t: str = THOUGHT) -> dict[str, Any]:
    return {"type": "thinking", "thinking": t, "signature": sig}


def call(call_id: str, name: str = "Bash", args: str = '{"command":"ls"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def o_asst(content: str | None, *calls: dict[str, Any], **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        out["tool_calls"] = list(calls)
    out.update(extra)
    return out


def o_tool(call_id: str, content: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def o_image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def b64_image(data: str = PNG, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def case(
    name: str,
    anthropic: dict[str, Any],
    expected: dict[str, Any],
    target: ChatTarget = TARGET,
    stream: bool = False,
) -> Any:
    return pytest.param(anthropic, expected, target, stream, id=name)


BASH_TOOL = {
    "name": "Bash",
    "description": "Run a command",
    "input_schema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
        "additionalProperties": False,
    },
}
READ_TOOL = {
    "name": "Read",
    "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def fn(tool: dict[str, Any]) -> dict[str, Any]:
    function = {"name": tool["name"]}
    if "description" in tool:
        function["description"] = tool["description"]
    function["parameters"] = tool["input_schema"]
    return {"type": "function", "function": function}


# ------------------------------------------------------------------------- the tables

SYSTEM_CASES = [
    case(
        "system string",
        areq([user("hi")], system="Be brief."),
        oreq([system("Be brief."), user("hi")]),
    ),
    case(
        "system blocks joined, cache_control dropped",
        areq([user("hi")], system=[text("A"), text("B", cache_control={"type": "ephemeral"})]),
        oreq([system("A\n\nB"), user("hi")]),
    ),
    case(
        "mid-conversation system message merged into the leading one",
        areq([user("hi"), system("Env: linux"), asst("ok"), user("next")], system="Top"),
        oreq([system("Top\n\nEnv: linux"), user("hi"), o_asst("ok"), user("next")]),
    ),
    case(
        "system message with block content",
        areq([user("hi"), system([text("Env", cache_control={"type": "ephemeral"})])]),
        oreq([system("Env"), user("hi")]),
    ),
    case(
        "several system messages keep their order after the top-level system",
        areq([system("one"), user("hi"), asst("ok"), system("two"), user("go")], system="top"),
        oreq([system("top\n\none\n\ntwo"), user("hi"), o_asst("ok"), user("go")]),
    ),
    case(
        "system message between user turns: no system text becomes a user turn",
        areq([user("a"), system("s"), user("b")]),
        oreq([system("s"), user("a\n\nb")]),
    ),
    case(
        "system message between tool_use and tool_result keeps the tool pairing",
        areq([user("go"), asst([tool_use("t1")]), system("reminder"), user([tool_result("t1")])]),
        oreq([system("reminder"), user("go"), o_asst(None, call("t1")), o_tool("t1")]),
    ),
    case(
        "Claude Code billing header block removed",
        areq(
            [user("hi")],
            system=[
                text("x-anthropic-billing-header: cc_version=2.1.328.593; cc_entrypoint=cli;"),
                text("Real instructions"),
            ],
        ),
        oreq([system("Real instructions"), user("hi")]),
    ),
    case("whitespace-only system dropped", areq([user("hi")], system=" \n"), oreq([user("hi")])),
    case("empty system list", areq([user("hi")], system=[]), oreq([user("hi")])),
    case(
        "unknown system block with text kept, other dropped",
        areq([user("hi")], system=[{"type": "fancy", "text": "F"}, {"type": "weird"}]),
        oreq([system("F"), user("hi")]),
    ),
]

USER_CASES = [
    case("user string", areq([user("hello")]), oreq([user("hello")])),
    case(
        "text blocks joined, cache_control dropped",
        areq([user([text("a"), text("b", cache_control={"type": "ephemeral"})])]),
        oreq([user("a\n\nb")]),
    ),
    case(
        "whitespace-only text dropped",
        areq([user([text("  \n"), text("x")])]),
        oreq([user("x")]),
    ),
    case(
        "base64 image -> data URL image_url part",
        areq([user([text("what?"), b64_image()])]),
        oreq([user([text("what?"), o_image(f"data:image/png;base64,{PNG}")])]),
    ),
    case(
        "url image -> image_url part",
        areq([user([{"type": "image", "source": {"type": "url", "url": "https://x.test/a.jpg"}}])]),
        oreq([user([o_image("https://x.test/a.jpg")])]),
    ),
    case(
        "PDF document -> file part named after the title",
        areq(
            [
                user(
                    [
                        {
                            "type": "document",
                            "title": "report",
                            "source": {
                                "type": "base64",
                                "media_type": "application/pdf",
                                "data": PDF,
                            },
                            "citations": {"enabled": True},
                        },
                        text("summarise"),
                    ]
                )
            ]
        ),
        oreq(
            [
                user(
                    [
                        {
                            "type": "file",
                            "file": {
                                "filename": "report.pdf",
                                "file_data": f"data:application/pdf;base64,{PDF}",
                            },
                        },
                        text("summarise"),
                    ]
                )
            ]
        ),
    ),
    case(
        "PDF document without title",
        areq(
            [
                user(
                    [
                        {
                            "type": "document",
                            "source": {
                                "type": "base64",
                                "media_type": "application/pdf",
                                "data": PDF,
                            },
                        }
                    ]
                )
            ]
        ),
        oreq(
            [
                user(
                    [
                        {
                            "type": "file",
                            "file": {
                                "filename": "document.pdf",
                                "file_data": f"data:application/pdf;base64,{PDF}",
                            },
                        }
                    ]
                )
            ]
        ),
    ),
    case(
        "text document -> text",
        areq(
            [
                user(
                    [
                        {
                            "type": "document",
                            "title": "Notes",
                            "source": {"type": "text", "media_type": "text/plain", "data": "hello"},
                        },
                        text("and?"),
                    ]
                )
            ]
        ),
        oreq([user("Notes\n\nhello\n\nand?")]),
    ),
    case(
        "content document -> its text and images",
        areq(
            [
                user(
                    [
                        {
                            "type": "document",
                            "source": {"type": "content", "content": [text("p1"), b64_image()]},
                        }
                    ]
                )
            ]
        ),
        oreq([user([text("p1"), o_image(f"data:image/png;base64,{PNG}")])]),
    ),
    case(
        "unknown block type: text kept, textless dropped, never a 4xx",
        areq(
            [
                user(
                    [
                        {"type": "future_block", "text": "kept"},
                        {"type": "container_upload", "file_id": "f"},
                        text("x"),
                    ]
                )
            ]
        ),
        oreq([user("kept\n\nx")]),
    ),
    case(
        "search_result rendered as text",
        areq(
            [
                user(
                    [
                        {
                            "type": "search_result",
                            "source": "https://x.test",
                            "title": "T",
                            "content": [text("body")],
                        }
                    ]
                )
            ]
        ),
        oreq([user("T\nhttps://x.test\nbody")]),
    ),
    case(
        "empty user turn (only cache_control) dropped, assistants around it merged",
        areq(
            [
                user("a"),
                asst("b"),
                user([text(" ", cache_control={"type": "ephemeral"})]),
                asst("c"),
                user("d"),
            ]
        ),
        oreq([user("a"), o_asst("b\n\nc"), user("d")]),
    ),
    case(
        "empty content list dropped",
        areq([user("a"), user([]), user("")]),
        oreq([user("a")]),
    ),
    case(
        "consecutive user messages merged",
        areq([user("a"), user([text("b"), b64_image()])]),
        oreq([user([text("a"), text("b"), o_image(f"data:image/png;base64,{PNG}")])]),
    ),
    case(
        "thinking/tool_use blocks in a user turn dropped",
        areq([user([thinking("x"), tool_use("t9"), text("hi")])]),
        oreq([user("hi")]),
    ),
]

ASSISTANT_CASES = [
    case(
        "text + tool_use -> one assistant message, ids verbatim, compact JSON arguments",
        areq(
            [
                user("run"),
                asst(
                    [
                        text("Running."),
                        tool_use(
                            "toolu_01A",
                            "Bash",
                            {"command": "ls -la", "n": 1, "ü": "é", "o": {"a": [1, 2]}},
                        ),
                    ]
                ),
                user([tool_result("toolu_01A", "out")]),
            ]
        ),
        oreq(
            [
                user("run"),
                o_asst(
                    "Running.",
                    call("toolu_01A", "Bash", '{"command":"ls -la","n":1,"ü":"é","o":{"a":[1,2]}}'),
                ),
                o_tool("toolu_01A", "out"),
            ]
        ),
    ),
    case(
        "empty and missing input -> '{}'",
        areq(
            [
                user("go"),
                asst([tool_use("t1", "A", {}), {"type": "tool_use", "id": "t2", "name": "B"}]),
                user([tool_result("t1"), tool_result("t2")]),
            ]
        ),
        oreq(
            [
                user("go"),
                o_asst(None, call("t1", "A", "{}"), call("t2", "B", "{}")),
                o_tool("t1"),
                o_tool("t2"),
            ]
        ),
    ),
    case(
        "thinking and redacted_thinking dropped for a non-replay target (even proxy-signed)",
        areq(
            [
                user("q"),
                asst(
                    [thinking(PROXY_SIG), {"type": "redacted_thinking", "data": "EmwK"}, text("a")]
                ),
                user("q2"),
            ]
        ),
        oreq([user("q"), o_asst("a"), user("q2")]),
    ),
    case(
        "replay target: proxy-signed thinking -> reasoning_content",
        areq(
            [
                user("q"),
                asst([thinking(PROXY_SIG), text("Listing."), tool_use("t1")]),
                user([tool_result("t1")]),
            ]
        ),
        {
            "model": "deepseek-test",
            "max_tokens": 1024,
            "messages": [
                user("q"),
                o_asst("Listing.", call("t1"), reasoning_content=THOUGHT),
                o_tool("t1"),
            ],
        },
        REPLAY,
    ),
    case(
        "replay target: Anthropic-signed thinking dropped, reasoning_content empty",
        areq(
            [
                user("q"),
                asst([thinking("EqQBCkgIBxABGAIiQL+sig=="), tool_use("t1")]),
                user([tool_result("t1")]),
            ]
        ),
        {
            "model": "deepseek-test",
            "max_tokens": 1024,
            "messages": [user("q"), o_asst(None, call("t1"), reasoning_content=""), o_tool("t1")],
        },
        REPLAY,
    ),
    case(
        "replay target: tampered thinking text fails verification",
        areq(
            [
                user("q"),
                asst([thinking(PROXY_SIG, "Edited thought"), tool_use("t1")]),
                user([tool_result("t1")]),
            ]
        ),
        {
            "model": "deepseek-test",
            "max_tokens": 1024,
            "messages": [user("q"), o_asst(None, call("t1"), reasoning_content=""), o_tool("t1")],
        },
        REPLAY,
    ),
    case(
        "replay target: proxy signature made with another key fails verification",
        areq(
            [
                user("q"),
                asst([thinking(sign_thinking(THOUGHT, b"other-key")), tool_use("t1")]),
                user([tool_result("t1")]),
            ]
        ),
        {
            "model": "deepseek-test",
            "max_tokens": 1024,
            "messages": [user("q"), o_asst(None, call("t1"), reasoning_content=""), o_tool("t1")],
        },
        REPLAY,
    ),
    case(
        "replay target: empty signature dropped",
        areq([user("q"), asst([thinking(""), text("a")]), user("q2")]),
        {
            "model": "deepseek-test",
            "max_tokens": 1024,
            "messages": [user("q"), o_asst("a", reasoning_content=""), user("q2")],
        },
        REPLAY,
    ),
    case(
        "replay target: every assistant message carries reasoning_content",
        areq(
            [user("q"), asst("a1"), user("q2"), asst([tool_use("t1")]), user([tool_result("t1")])]
        ),
        {
            "model": "deepseek-test",
            "max_tokens": 1024,
            "messages": [
                user("q"),
                o_asst("a1", reasoning_content=""),
                user("q2"),
                o_asst(None, call("t1"), reasoning_content=""),
                o_tool("t1"),
            ],
        },
        REPLAY,
    ),
    case(
        "assistant turn with only thinking dropped",
        areq([user("q"), asst([thinking("sig")]), user("q2")]),
        oreq([user("q\n\nq2")]),
    ),
    case(
        "final assistant message kept",
        areq([user("q"), asst("The answer is")]),
        oreq([user("q"), o_asst("The answer is")]),
    ),
    case(
        "server tool blocks in history dropped, text kept",
        areq(
            [
                user("q"),
                asst(
                    [
                        {
                            "type": "server_tool_use",
                            "id": "srvtoolu_1",
                            "name": "web_search",
                            "input": {"query": "x"},
                        },
                        {
                            "type": "web_search_tool_result",
                            "tool_use_id": "srvtoolu_1",
                            "content": [],
                        },
                        text("Found it."),
                    ]
                ),
                user("thanks"),
            ]
        ),
        oreq([user("q"), o_asst("Found it."), user("thanks")]),
    ),
    case(
        "consecutive assistant messages merged",
        areq([user("q"), asst("a"), asst([tool_use("t1")]), user([tool_result("t1")])]),
        oreq([user("q"), o_asst("a", call("t1")), o_tool("t1")]),
    ),
]

IMAGE_URL = f"data:image/png;base64,{PNG}"
MOVED = "[The image/document output of this tool call is attached in the next user message.]"

TOOL_RESULT_CASES = [
    case(
        "tool_result text blocks joined with a newline",
        areq(
            [user("q"), asst([tool_use("t1")]), user([tool_result("t1", [text("a"), text("b")])])]
        ),
        oreq([user("q"), o_asst(None, call("t1")), o_tool("t1", "a\nb")]),
    ),
    case(
        "is_error kept visible",
        areq(
            [
                user("q"),
                asst([tool_use("t1")]),
                user([tool_result("t1", "Exit code 1", is_error=True)]),
            ]
        ),
        oreq([user("q"), o_asst(None, call("t1")), o_tool("t1", "Error: Exit code 1")]),
    ),
    case(
        "is_error with block content and no text",
        areq(
            [
                user("q"),
                asst([tool_use("t1"), tool_use("t2")]),
                user(
                    [
                        tool_result("t1", [text("denied")], is_error=True),
                        tool_result("t2", [], is_error=True),
                    ]
                ),
            ]
        ),
        oreq(
            [
                user("q"),
                o_asst(None, call("t1"), call("t2")),
                o_tool("t1", "Error: denied"),
                o_tool("t2", "Error"),
            ]
        ),
    ),
    case(
        "is_error false leaves content alone",
        areq(
            [user("q"), asst([tool_use("t1")]), user([tool_result("t1", "fine", is_error=False)])]
        ),
        oreq([user("q"), o_asst(None, call("t1")), o_tool("t1", "fine")]),
    ),
    case(
        "tool messages come before the user text of the same turn",
        areq(
            [
                user("q"),
                asst([tool_use("t1")]),
                user([text("look:"), tool_result("t1", "out"), text("more")]),
            ]
        ),
        oreq([user("q"), o_asst(None, call("t1")), o_tool("t1", "out"), user("look:\n\nmore")]),
    ),
    case(
        "parallel results ordered like the tool_calls",
        areq(
            [
                user("q"),
                asst([tool_use("t1"), tool_use("t2", "Read", {"path": "/a"})]),
                user([tool_result("t2", "file"), tool_result("t1", "dir")]),
            ]
        ),
        oreq(
            [
                user("q"),
                o_asst(None, call("t1"), call("t2", "Read", '{"path":"/a"}')),
                o_tool("t1", "dir"),
                o_tool("t2", "file"),
            ]
        ),
    ),
    case(
        "a call without a result gets a synthetic tool message",
        areq(
            [
                user("q"),
                asst([tool_use("t1"), tool_use("t2")]),
                user([tool_result("t1", "dir"), text("stop")]),
            ]
        ),
        oreq(
            [
                user("q"),
                o_asst(None, call("t1"), call("t2")),
                o_tool("t1", "dir"),
                o_tool("t2", MISSING_TOOL_RESULT),
                user("stop"),
            ]
        ),
    ),
    case(
        "trailing tool_use without a user turn gets a synthetic result",
        areq([user("q"), asst([text("calling"), tool_use("t1")])]),
        oreq([user("q"), o_asst("calling", call("t1")), o_tool("t1", MISSING_TOOL_RESULT)]),
    ),
    case(
        "tool_use followed by an assistant turn gets a synthetic result",
        areq([user("q"), asst([tool_use("t1")]), asst("later")]),
        oreq(
            [
                user("q"),
                o_asst(None, call("t1")),
                o_tool("t1", MISSING_TOOL_RESULT),
                o_asst("later"),
            ]
        ),
    ),
    case(
        "orphan tool_result becomes user text",
        areq(
            [
                user("q"),
                asst("no tools"),
                user([tool_result("t9", "stale", is_error=True), text("hi")]),
            ]
        ),
        oreq([user("q"), o_asst("no tools"), user("Result of tool call t9:\nError: stale\n\nhi")]),
    ),
    case(
        "duplicate tool_result: second one becomes user text",
        areq(
            [
                user("q"),
                asst([tool_use("t1")]),
                user([tool_result("t1", "a"), tool_result("t1", "b")]),
            ]
        ),
        oreq(
            [
                user("q"),
                o_asst(None, call("t1")),
                o_tool("t1", "a"),
                user("Result of tool call t1:\nb"),
            ]
        ),
    ),
    case(
        "tool_result without content -> empty string",
        areq(
            [
                user("q"),
                asst([tool_use("t1")]),
                user([{"type": "tool_result", "tool_use_id": "t1"}]),
            ]
        ),
        oreq([user("q"), o_asst(None, call("t1")), o_tool("t1", "")]),
    ),
    case(
        "image in a tool result moved into the following user message",
        areq(
            [
                user("screenshot please"),
                asst([tool_use("t1", "Screenshot", {})]),
                user(
                    [tool_result("t1", [text("captured"), b64_image()]), text("what do you see?")]
                ),
            ]
        ),
        oreq(
            [
                user("screenshot please"),
                o_asst(None, call("t1", "Screenshot", "{}")),
                o_tool("t1", f"captured\n\n{MOVED}"),
                user(
                    [text("Output of tool call t1:"), o_image(IMAGE_URL), text("what do you see?")]
                ),
            ]
        ),
    ),
    case(
        "image-only tool result",
        areq(
            [
                user("q"),
                asst([tool_use("t1", "Read", {})]),
                user([tool_result("t1", [b64_image()])]),
            ]
        ),
        oreq(
            [
                user("q"),
                o_asst(None, call("t1", "Read", "{}")),
                o_tool("t1", MOVED),
                user([text("Output of tool call t1:"), o_image(IMAGE_URL)]),
            ]
        ),
    ),
    case(
        "PDF in a tool result moved, text document kept as text",
        areq(
            [
                user("q"),
                asst([tool_use("t1", "Read", {})]),
                user(
                    [
                        tool_result(
                            "t1",
                            [
                                {
                                    "type": "document",
                                    "source": {
                                        "type": "text",
                                        "media_type": "text/plain",
                                        "data": "txt",
                                    },
                                },
                                {
                                    "type": "document",
                                    "source": {
                                        "type": "base64",
                                        "media_type": "application/pdf",
                                        "data": PDF,
                                    },
                                },
                            ],
                        )
                    ]
                ),
            ]
        ),
        oreq(
            [
                user("q"),
                o_asst(None, call("t1", "Read", "{}")),
                o_tool("t1", f"txt\n\n{MOVED}"),
                user(
                    [
                        text("Output of tool call t1:"),
                        {
                            "type": "file",
                            "file": {
                                "filename": "document.pdf",
                                "file_data": f"data:application/pdf;base64,{PDF}",
                            },
                        },
                    ]
                ),
            ]
        ),
    ),
    case(
        "tool_reference and unknown blocks in a tool result",
        areq(
            [
                user("q"),
                asst([tool_use("t1", "ToolSearch", {"query": "x"})]),
                user(
                    [
                        tool_result(
                            "t1",
                            [{"type": "tool_reference", "tool_name": "Grep"}, {"type": "opaque"}],
                        )
                    ]
                ),
            ]
        ),
        oreq(
            [
                user("q"),
                o_asst(None, call("t1", "ToolSearch", '{"query":"x"}')),
                o_tool("t1", "Tool Grep is available."),
            ]
        ),
    ),
    case(
        "conversation starting with an assistant turn gets a user turn first (LiteLLM #42432)",
        areq([asst([tool_use("t1")]), user([tool_result("t1")])]),
        oreq([user(LEADING_USER_PLACEHOLDER), o_asst(None, call("t1")), o_tool("t1")]),
    ),
    case(
        "first user turn empty, then assistant: placeholder user turn",
        areq([user([text(" ")]), asst([tool_use("t1")]), user([tool_result("t1")])], system="S"),
        oreq([system("S"), user(LEADING_USER_PLACEHOLDER), o_asst(None, call("t1")), o_tool("t1")]),
    ),
]

TOOL_CASES = [
    case(
        "tools translated, schema kept as given, cache_control dropped",
        areq([user("q")], tools=[{**BASH_TOOL, "cache_control": {"type": "ephemeral"}}, READ_TOOL]),
        oreq([user("q")], tools=[fn(BASH_TOOL), fn(READ_TOOL)]),
    ),
    case(
        "defer_loading tool still sent (callable), strict/input_examples dropped",
        areq(
            [user("q")],
            tools=[
                {
                    **READ_TOOL,
                    "defer_loading": True,
                    "strict": True,
                    "input_examples": [{"path": "/"}],
                },
                {**BASH_TOOL, "type": "custom"},
            ],
        ),
        oreq([user("q")], tools=[fn(READ_TOOL), fn(BASH_TOOL)]),
    ),
    case(
        "tool without description",
        areq([user("q")], tools=[{"name": "Noop", "input_schema": {"type": "object"}}]),
        oreq(
            [user("q")],
            tools=[
                {"type": "function", "function": {"name": "Noop", "parameters": {"type": "object"}}}
            ],
        ),
    ),
    case(
        "tool_choice auto",
        areq([user("q")], tools=[READ_TOOL], tool_choice={"type": "auto"}),
        oreq([user("q")], tools=[fn(READ_TOOL)], tool_choice="auto"),
    ),
    case(
        "tool_choice any -> required",
        areq([user("q")], tools=[READ_TOOL], tool_choice={"type": "any"}),
        oreq([user("q")], tools=[fn(READ_TOOL)], tool_choice="required"),
    ),
    case(
        "tool_choice tool -> named function",
        areq(
            [user("q")], tools=[READ_TOOL, BASH_TOOL], tool_choice={"type": "tool", "name": "Bash"}
        ),
        oreq(
            [user("q")],
            tools=[fn(READ_TOOL), fn(BASH_TOOL)],
            tool_choice={"type": "function", "function": {"name": "Bash"}},
        ),
    ),
    case(
        "tool_choice none",
        areq([user("q")], tools=[READ_TOOL], tool_choice={"type": "none"}),
        oreq([user("q")], tools=[fn(READ_TOOL)], tool_choice="none"),
    ),
    case(
        "disable_parallel_tool_use -> parallel_tool_calls false",
        areq(
            [user("q")],
            tools=[READ_TOOL],
            tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        ),
        oreq([user("q")], tools=[fn(READ_TOOL)], tool_choice="auto", parallel_tool_calls=False),
    ),
    case(
        "disable_parallel_tool_use false -> nothing",
        areq(
            [user("q")],
            tools=[READ_TOOL],
            tool_choice={"type": "any", "disable_parallel_tool_use": False},
        ),
        oreq([user("q")], tools=[fn(READ_TOOL)], tool_choice="required"),
    ),
    case(
        "tool_choice and parallel flag without tools -> omitted",
        areq([user("q")], tool_choice={"type": "any", "disable_parallel_tool_use": True}),
        oreq([user("q")]),
    ),
    case(
        "empty tools list omitted",
        areq([user("q")], tools=[], tool_choice={"type": "auto"}),
        oreq([user("q")]),
    ),
    case(
        "unknown tool_choice type ignored",
        areq([user("q")], tools=[READ_TOOL], tool_choice={"type": "future"}),
        oreq([user("q")], tools=[fn(READ_TOOL)]),
    ),
]

PARAM_CASES = [
    case(
        "max_completion_tokens target",
        areq([user("q")]),
        {"model": "gpt-test", "max_completion_tokens": 1024, "messages": [user("q")]},
        ChatTarget(model="gpt-test", max_tokens_field="max_completion_tokens"),
    ),
    case(
        "max_tokens clamped to the route limit (32000 > model limit)",
        areq([user("q")], max_tokens=32000),
        oreq([user("q")], max_tokens=8192),
        ChatTarget(model="gpt-test", max_tokens_limit=8192),
    ),
    case(
        "max_tokens under the limit unchanged",
        areq([user("q")], max_tokens=100),
        oreq([user("q")], max_tokens=100),
        ChatTarget(model="gpt-test", max_tokens_limit=8192),
    ),
    case(
        "stop_sequences -> stop",
        areq([user("q")], stop_sequences=["END", "###"]),
        oreq([user("q")], stop=["END", "###"]),
    ),
    case(
        "more than 4 stop sequences: the first 4 kept, empty strings dropped",
        areq([user("q")], stop_sequences=["a", "", "b", "c", "d", "e"]),
        oreq([user("q")], stop=["a", "b", "c", "d"]),
    ),
    case("empty stop_sequences omitted", areq([user("q")], stop_sequences=[]), oreq([user("q")])),
    case(
        "temperature/top_p passed, top_k dropped",
        areq([user("q")], temperature=0.2, top_p=0.9, top_k=40),
        oreq([user("q")], temperature=0.2, top_p=0.9),
    ),
    case(
        "target without sampling params (o-series/GPT-5): temperature/top_p dropped",
        areq([user("q")], temperature=0, top_p=0.5),
        {"model": "o-test", "max_completion_tokens": 1024, "messages": [user("q")]},
        ChatTarget(model="o-test", max_tokens_field="max_completion_tokens", sampling=False),
    ),
    case(
        "metadata.user_id (opaque id) -> user verbatim",
        areq([user("q")], metadata={"user_id": "user_3f9a-B7"}),
        oreq([user("q")], user="user_3f9a-B7"),
    ),
    case(
        "metadata.user_id (Claude Code JSON string) -> user as its SHA-256",
        areq([user("q")], metadata={"user_id": CC_USER_ID}),
        oreq([user("q")], user=hashlib.sha256(CC_USER_ID.encode()).hexdigest()),
    ),
    case(
        "metadata.user_id too long -> hashed",
        areq([user("q")], metadata={"user_id": "a" * 65}),
        oreq([user("q")], user=hashlib.sha256(b"a" * 65).hexdigest()),
    ),
    case(
        "metadata.user_id not a string ignored",
        areq([user("q")], metadata={"user_id": 7}),
        oreq([user("q")]),
    ),
    case("metadata without user_id", areq([user("q")], metadata={}), oreq([user("q")])),
    case(
        "stream -> stream + include_usage",
        areq([user("q")], stream=True),
        oreq([user("q")], stream=True, stream_options={"include_usage": True}),
        TARGET,
        True,
    ),
    case(
        "stream without include_usage",
        areq([user("q")]),
        oreq([user("q")], stream=True),
        ChatTarget(model="gpt-test", include_usage=False),
        True,
    ),
    case(
        "body stream flag ignored when not streaming",
        areq([user("q")], stream=True),
        oreq([user("q")]),
    ),
    case(
        "output_config.format -> response_format json_schema",
        areq(
            [user("q")],
            output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}},
        ),
        oreq(
            [user("q")],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": {"type": "object"}},
            },
        ),
    ),
    case(
        "legacy output_format -> response_format",
        areq([user("q")], output_format={"type": "json_schema", "schema": {"type": "object"}}),
        oreq(
            [user("q")],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": {"type": "object"}},
            },
        ),
    ),
    case(
        "unknown and Anthropic-only fields dropped, never a 4xx",
        areq(
            [user("q")],
            cache_control={"type": "ephemeral"},
            context_management={"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
            service_tier="auto",
            container="c1",
            mcp_servers=[],
            brand_new_field={"x": 1},
        ),
        oreq([user("q")]),
    ),
]


def effort_case(
    name: str, extra: dict[str, Any], effort: str | None, target: ChatTarget = REASONING
) -> Any:
    expected: dict[str, Any] = {"model": target.model, "max_tokens": 1024, "messages": [user("q")]}
    if effort is not None:
        expected["reasoning_effort"] = effort
    return case(name, areq([user("q")], **extra), expected, target)


EFFORT_CASES = [
    effort_case(
        "budget 1024 -> low", {"thinking": {"type": "enabled", "budget_tokens": 1024}}, "low"
    ),
    effort_case(
        "budget 2048 -> low", {"thinking": {"type": "enabled", "budget_tokens": 2048}}, "low"
    ),
    effort_case(
        "budget 2049 -> medium", {"thinking": {"type": "enabled", "budget_tokens": 2049}}, "medium"
    ),
    effort_case(
        "budget 16384 -> high",
        {"thinking": {"type": "enabled", "budget_tokens": 16384}},
        "high",
    ),
    effort_case(
        "budget 16385 -> xhigh", {"thinking": {"type": "enabled", "budget_tokens": 16385}}, "xhigh"
    ),
    effort_case(
        "budget 32001 -> max, which OpenAI names xhigh",
        {"thinking": {"type": "enabled", "budget_tokens": 32001}},
        "xhigh",
    ),
    effort_case(
        "adaptive + effort medium",
        {
            "thinking": {"type": "adaptive", "display": "omitted"},
            "output_config": {"effort": "medium"},
        },
        "medium",
    ),
    effort_case("effort low", {"output_config": {"effort": "low"}}, "low"),
    effort_case(
        "effort high",
        {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}},
        "high",
    ),
    effort_case(
        "effort xhigh as asked",
        {"thinking": {"type": "adaptive"}, "output_config": {"effort": "xhigh"}},
        "xhigh",
    ),
    effort_case(
        "effort max -> xhigh (OpenAI's name)", {"output_config": {"effort": "max"}}, "xhigh"
    ),
    effort_case(
        "effort wins over budget",
        {
            "thinking": {"type": "enabled", "budget_tokens": 32000},
            "output_config": {"effort": "low"},
        },
        "low",
    ),
    effort_case(
        "adaptive without effort -> upstream default", {"thinking": {"type": "adaptive"}}, None
    ),
    effort_case(
        "thinking disabled -> nothing",
        {"thinking": {"type": "disabled"}, "output_config": {"effort": "high"}},
        None,
    ),
    effort_case("unknown effort ignored", {"output_config": {"effort": "ludicrous"}}, None),
    effort_case(
        "non-reasoning target -> nothing",
        {
            "thinking": {"type": "enabled", "budget_tokens": 32000},
            "output_config": {"effort": "high"},
        },
        None,
        TARGET,
    ),
]

ALL_CASES = (
    SYSTEM_CASES
    + USER_CASES
    + ASSISTANT_CASES
    + TOOL_RESULT_CASES
    + TOOL_CASES
    + PARAM_CASES
    + EFFORT_CASES
)


# ----------------------------------------------------------------- sequence validity


def assert_valid_chat(request: dict[str, Any]) -> None:
    """What OpenAI-compatible upstreams (and strict chat templates) require of `messages`."""
    messages = request["messages"]
    assert messages, "no messages"
    roles = [m["role"] for m in messages]
    assert "system" not in roles[1:], f"non-leading system message: {roles}"
    rest = messages[1:] if roles[0] == "system" else messages
    assert rest, "only a system message"
    assert rest[0]["role"] == "user", f"first non-system message is {rest[0]['role']}"
    for prev, cur in itertools.pairwise(rest):
        if cur["role"] in ("user", "assistant"):
            assert prev["role"] != cur["role"], f"consecutive {cur['role']} messages"
    i = 0
    while i < len(rest):
        m = rest[i]
        assert m["role"] in ("user", "assistant", "tool"), m
        if m["role"] == "user":
            c = m["content"]
            assert (isinstance(c, str) and c.strip()) or (isinstance(c, list) and c), m
        if m["role"] == "assistant":
            assert m["content"] is None or (isinstance(m["content"], str) and m["content"].strip())
            ids = [tc["id"] for tc in m.get("tool_calls", [])]
            assert m["content"] is not None or ids, "empty assistant message"
            answered = []
            j = i + 1
            while j < len(rest) and rest[j]["role"] == "tool":
                assert isinstance(rest[j]["content"], str)
                answered.append(rest[j]["tool_call_id"])
                j += 1
            assert answered == ids, f"tool calls {ids} answered by {answered}"
            for tc in m.get("tool_calls", []):
                assert tc["type"] == "function"
                assert isinstance(orjson.loads(tc["function"]["arguments"]), dict)
            i = j
            continue
        assert m["role"] != "tool", "tool message not right after an assistant tool_calls message"
        i += 1
    # Blocks are never JSON-stringified into the prompt.
    for m in messages:
        if isinstance(m.get("content"), str):
            assert '"type":' not in m["content"] and "'type':" not in m["content"]
            assert ";base64," not in m["content"]


# ------------------------------------------------------------------------------ tests


@pytest.mark.parametrize(("anthropic", "expected", "target", "stream"), ALL_CASES)
def test_translation(
    anthropic: dict[str, Any], expected: dict[str, Any], target: ChatTarget, stream: bool
) -> None:
    original = copy.deepcopy(anthropic)
    got = chat_request_from_messages(anthropic, target, stream=stream)
    assert got == expected
    assert anthropic == original, "the input body was modified"
    assert_valid_chat(got)
    orjson.dumps(got)


# Web search is written for the one Chat upstream that runs it (test_web_search_request).
SERVER_TOOLS: list[dict[str, Any]] = [
    {"type": "web_fetch_20250910", "name": "web_fetch"},
    {"type": "code_execution_20250825", "name": "code_execution"},
    {"type": "bash_20250124", "name": "bash"},
    {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
    {
        "type": "computer_20250124",
        "name": "computer",
        "display_width_px": 1024,
        "display_height_px": 768,
    },
    {"type": "memory_20250818", "name": "memory"},
    {"type": "mcp_toolset", "mcp_server_name": "github"},
]


@pytest.mark.parametrize("tool", SERVER_TOOLS, ids=[t["type"] for t in SERVER_TOOLS])
def test_server_tools_refused(tool: dict[str, Any]) -> None:
    body = areq([user("q")], tools=[READ_TOOL, tool])
    with pytest.raises(ProxyError) as info:
        chat_request_from_messages(body, TARGET, stream=True)
    err = info.value
    assert err.status == 400
    assert err.error_type == "invalid_request_error"
    assert err.param == "tools.1"
    assert err.message.startswith("tools.1: ")
    assert "server tool" in err.message and "cannot run" in err.message
    assert tool["type"] in err.message
    if "name" in tool:
        assert tool["name"] in err.message
    body_json = orjson.loads(err.anthropic_body())
    assert body_json == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": err.message},
    }


def err_case(name: str, body: Any, path: str, *words: str) -> Any:
    return pytest.param(body, path, words, id=name)


ERROR_CASES = [
    err_case("body not an object", ["x"], "", "JSON object"),
    err_case("messages missing", {"model": "m", "max_tokens": 10}, "messages", "required"),
    err_case(
        "messages not a list",
        {"model": "m", "max_tokens": 10, "messages": "hi"},
        "messages",
        "list",
    ),
    err_case("messages empty", areq([]), "messages", "at least one"),
    err_case("message not an object", areq([user("q"), "hi"]), "messages.1", "object"),
    err_case(
        "role tool",
        areq([user("q"), {"role": "tool", "content": "x"}]),
        "messages.1.role",
        "'tool'",
    ),
    err_case("role missing", areq([{"content": "x"}]), "messages.0.role", "role"),
    err_case(
        "content wrong type", areq([user("q"), asst(5)]), "messages.1.content", "string or a list"
    ),
    err_case(
        "content dict",
        areq([user({"type": "text", "text": "x"})]),
        "messages.0.content",
        "string or a list",
    ),
    err_case("content missing", areq([{"role": "user"}]), "messages.0.content", "required"),
    err_case(
        "system message content wrong type",
        areq([user("q"), system(3)]),
        "messages.1.content",
        "string",
    ),
    err_case(
        "block not an object", areq([user([text("a"), "b"])]), "messages.0.content.1", "object"
    ),
    err_case(
        "block without type", areq([user([{"text": "a"}])]), "messages.0.content.0.type", "type"
    ),
    err_case(
        "text not a string",
        areq([user([{"type": "text", "text": 5}])]),
        "messages.0.content.0.text",
        "string",
    ),
    err_case(
        "tool_use without id",
        areq([user("q"), asst([{"type": "tool_use", "name": "Bash", "input": {}}])]),
        "messages.1.content.0.id",
        "id",
    ),
    err_case(
        "tool_use without name",
        areq([user("q"), asst([text("x"), {"type": "tool_use", "id": "t1", "input": {}}])]),
        "messages.1.content.1.name",
        "name",
    ),
    err_case(
        "tool_result without tool_use_id",
        areq([user("q"), asst([tool_use("t1")]), user([{"type": "tool_result", "content": "x"}])]),
        "messages.2.content.0.tool_use_id",
        "tool_use_id",
    ),
    err_case(
        "tool_result content wrong type",
        areq([user("q"), asst([tool_use("t1")]), user([tool_result("t1", {"a": 1})])]),
        "messages.2.content.0.content",
        "string or a list",
    ),
    err_case(
        "image without source",
        areq([user("a"), asst("b"), user("c"), user([text("d"), {"type": "image"}])]),
        "messages.3.content.1.source",
        "image source",
    ),
    err_case(
        "image with unknown source type",
        areq([user([{"type": "image", "source": {"type": "file", "file_id": "file_1"}}])]),
        "messages.0.content.0.source",
        "'file'",
    ),
    err_case(
        "base64 image without media_type",
        areq([user([{"type": "image", "source": {"type": "base64", "data": PNG}}])]),
        "messages.0.content.0.source.media_type",
        "media_type",
    ),
    err_case(
        "base64 image without data",
        areq([user([{"type": "image", "source": {"type": "base64", "media_type": "image/png"}}])]),
        "messages.0.content.0.source.data",
        "data",
    ),
    err_case(
        "url image without url",
        areq([user([{"type": "image", "source": {"type": "url"}}])]),
        "messages.0.content.0.source.url",
        "url",
    ),
    err_case(
        "bad image inside a tool_result",
        areq(
            [
                user("q"),
                asst([tool_use("t1")]),
                user([tool_result("t1", [text("x"), {"type": "image", "source": "nope"}])]),
            ]
        ),
        "messages.2.content.0.content.1.source",
        "image source",
    ),
    err_case(
        "document from a URL cannot be sent",
        areq(
            [user([{"type": "document", "source": {"type": "url", "url": "https://x.test/a.pdf"}}])]
        ),
        "messages.0.content.0.source",
        "'url'",
    ),
    err_case(
        "max_tokens missing", {"model": "m", "messages": [user("q")]}, "max_tokens", "required"
    ),
    err_case("max_tokens zero", areq([user("q")], max_tokens=0), "max_tokens", "integer"),
    err_case("max_tokens string", areq([user("q")], max_tokens="100"), "max_tokens", "integer"),
    err_case("max_tokens bool", areq([user("q")], max_tokens=True), "max_tokens", "integer"),
    err_case("system wrong type", areq([user("q")], system=5), "system", "string"),
    err_case(
        "system block without type",
        areq([user("q")], system=[{"text": "x"}]),
        "system.0.type",
        "type",
    ),
    err_case("tools not a list", areq([user("q")], tools={"name": "x"}), "tools", "list"),
    err_case("tool not an object", areq([user("q")], tools=["Bash"]), "tools.0", "object"),
    err_case(
        "tool without name",
        areq([user("q")], tools=[{"input_schema": {"type": "object"}}]),
        "tools.0.name",
        "name",
    ),
    err_case(
        "tool without input_schema",
        areq([user("q")], tools=[READ_TOOL, {"name": "X"}]),
        "tools.1.input_schema",
        "'X'",
    ),
    err_case(
        "tool_choice not an object",
        areq([user("q")], tools=[READ_TOOL], tool_choice="auto"),
        "tool_choice",
        "object",
    ),
    err_case(
        "tool_choice tool without name",
        areq([user("q")], tools=[READ_TOOL], tool_choice={"type": "tool"}),
        "tool_choice.name",
        "name",
    ),
    err_case(
        "tool_choice names an unknown tool",
        areq([user("q")], tools=[READ_TOOL], tool_choice={"type": "tool", "name": "Nope"}),
        "tool_choice.name",
        "'Nope'",
    ),
    err_case(
        "stop_sequences not a list",
        areq([user("q")], stop_sequences="END"),
        "stop_sequences",
        "list",
    ),
    err_case(
        "stop sequence not a string",
        areq([user("q")], stop_sequences=["a", 1]),
        "stop_sequences.1",
        "string",
    ),
    err_case(
        "temperature not a number", areq([user("q")], temperature="hot"), "temperature", "number"
    ),
    err_case("top_p not a number", areq([user("q")], top_p=[1]), "top_p", "number"),
    err_case(
        "mcp_servers cannot run on the target",
        areq([user("q")], mcp_servers=[{"type": "url", "url": "https://mcp.test", "name": "x"}]),
        "mcp_servers",
        "MCP",
    ),
    err_case("nothing left to send", areq([user(" "), user([])]), "messages", "non-empty"),
]


@pytest.mark.parametrize(("body", "path", "words"), ERROR_CASES)
def test_invalid_requests(body: Any, path: str, words: tuple[str, ...]) -> None:
    with pytest.raises(ProxyError) as info:
        chat_request_from_messages(body, TARGET, stream=False)
    err = info.value
    assert err.status == 400
    assert err.error_type == "invalid_request_error"
    if path:
        assert err.param == path
        assert err.message.startswith(f"{path}: "), err.message
    for word in words:
        assert word in err.message, err.message


# ------------------------------------------------------- real Claude Code requests


def load_fixture(name: str) -> dict[str, Any]:
    body: dict[str, Any] = orjson.loads((FIXTURES / name).read_bytes())["body"]
    return body


FIXTURE_NAMES = sorted(p.name for p in FIXTURES.glob("request-*.json"))
CC_TARGETS = [
    pytest.param(
        ChatTarget(
            model="gpt-5",
            max_tokens_field="max_completion_tokens",
            max_tokens_limit=32768,
            reasoning=True,
            sampling=False,
        ),
        id="gpt5",
    ),
    pytest.param(REPLAY, id="deepseek-replay"),
    pytest.param(TARGET, id="plain"),
]


def test_fixtures_present() -> None:
    assert FIXTURE_NAMES == [
        "request-after-tool-result.json",
        "request-lead-of-subagent.json",
        "request-plain.json",
        "request-replaying-signed-thinking.json",
        "request-replaying-unsigned-thinking.json",
        "request-subagent.json",
    ]


# The main-loop captures (one conversation at four points); the subagent captures get their
# own check below, since their prompts and tools differ.
MAIN_LOOP_FIXTURES = [n for n in FIXTURE_NAMES if "subagent" not in n]


@pytest.mark.parametrize("name", [n for n in FIXTURE_NAMES if "subagent" in n])
@pytest.mark.parametrize("target", CC_TARGETS)
def test_claude_code_subagent_requests(name: str, target: ChatTarget) -> None:
    body = load_fixture(name)
    got = chat_request_from_messages(body, target, stream=True)
    assert_valid_chat(got)
    assert [t["function"]["name"] for t in got["tools"]] == [t["name"] for t in body["tools"]]
    assert [m["role"] for m in got["messages"]].count("system") == 1


@pytest.mark.parametrize("name", MAIN_LOOP_FIXTURES)
@pytest.mark.parametrize("target", CC_TARGETS)
def test_claude_code_requests(name: str, target: ChatTarget) -> None:
    body = load_fixture(name)
    got = chat_request_from_messages(body, target, stream=True)
    assert_valid_chat(got)
    messages = got["messages"]

    # Exactly one leading system message, holding the top-level system text and the
    # mid-conversation system message, in that order; the billing header is gone.
    assert [m["role"] for m in messages].count("system") == 1
    assert messages[0]["role"] == "system"
    sys_text = messages[0]["content"]
    top = next(b["text"] for b in body["system"] if b["text"].startswith("You are a Claude agent"))
    mid_msg = next(m for m in body["messages"] if m["role"] == "system")
    mid = (
        mid_msg["content"] if isinstance(mid_msg["content"], str) else mid_msg["content"][0]["text"]
    )
    assert top in sys_text and mid in sys_text
    assert sys_text.index(top) < sys_text.index(mid)
    assert "x-anthropic-billing-header" not in sys_text
    assert all(mid not in str(m.get("content")) for m in messages[1:])

    # The first user turn: system reminders and the prompt, as one string.
    assert messages[1]["role"] == "user"
    assert "<system-reminder>" in messages[1]["content"]
    assert messages[1]["content"].endswith(
        "say hi" if name == "request-plain.json" else "run echo hello"
    )

    # Tools: all 12 (incl. the defer_loading one), schemas untouched.
    assert [t["function"]["name"] for t in got["tools"]] == [t["name"] for t in body["tools"]]
    for tool, src in zip(got["tools"], body["tools"], strict=True):
        assert tool["type"] == "function"
        assert tool["function"]["parameters"] == src["input_schema"]
        assert tool["function"]["description"] == src["description"]
        assert set(tool) == {"type", "function"}
        assert set(tool["function"]) == {"name", "description", "parameters"}
    assert "$schema" in got["tools"][0]["function"]["parameters"]

    assert got["model"] == target.model
    assert got[target.max_tokens_field] == min(128000, target.max_tokens_limit or 128000)
    # The ~150-character JSON user_id is hashed into what OpenAI/OpenRouter/Zhipu accept.
    assert len(body["metadata"]["user_id"]) > 128
    assert got["user"] == hashlib.sha256(body["metadata"]["user_id"].encode()).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", got["user"])
    assert got["stream"] is True and got["stream_options"] == {"include_usage": True}
    assert got.get("reasoning_effort") == ("medium" if target.reasoning else None)
    for field in (
        "context_management",
        "output_config",
        "thinking",
        "metadata",
        "system",
        "cache_control",
    ):
        assert field not in got

    # No thinking text leaks anywhere (its signature is not this proxy's).
    dumped = orjson.dumps(got).decode()
    assert "The user wants echo" not in dumped
    assert "SIGxyz" not in dumped

    if name != "request-plain.json":
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
        assistant, tool = messages[2], messages[3]
        assert assistant["content"] == "I will run it."
        assert assistant["tool_calls"] == [
            {
                "id": "toolu_01Cap",
                "type": "function",
                "function": {
                    "name": "Bash",
                    "arguments": '{"command":"echo hello-from-tool","description":"Print a greeting"}',
                },
            }
        ]
        assert tool == {"role": "tool", "tool_call_id": "toolu_01Cap", "content": "hello-from-tool"}
        if target.replay_reasoning:
            assert assistant["reasoning_content"] == ""
        else:
            assert "reasoning_content" not in assistant
    else:
        assert [m["role"] for m in messages] == ["system", "user"]


def test_claude_code_replay_of_proxy_signed_thinking() -> None:
    """The signed-thinking request, as it looks when the first reply came through the proxy."""
    body = load_fixture("request-replaying-signed-thinking.json")
    block = body["messages"][2]["content"][0]
    assert block["type"] == "thinking"
    block["signature"] = sign_thinking(block["thinking"], KEY)

    got = chat_request_from_messages(body, REPLAY, stream=True)
    assert_valid_chat(got)
    assistant = got["messages"][2]
    assert assistant["reasoning_content"] == "The user wants echo. "
    assert assistant["content"] == "I will run it."
    assert assistant["tool_calls"][0]["id"] == "toolu_01Cap"
    # ... and only there: the thinking text is not sent as text.
    others = [m for m in got["messages"] if m is not assistant]
    assert "The user wants echo" not in orjson.dumps(others).decode()
    assert "The user wants echo" not in str(assistant["content"])

    for target in (TARGET, ChatTarget(model="x", replay_reasoning=False, signing_key=KEY)):
        plain = chat_request_from_messages(body, target, stream=True)
        assert "reasoning_content" not in plain["messages"][2]
        assert "The user wants echo" not in orjson.dumps(plain).decode()

    # A replay target with a different key does not trust the signature.
    other = ChatTarget(model="x", replay_reasoning=True, signing_key=b"another key")
    assert (
        chat_request_from_messages(body, other, stream=True)["messages"][2]["reasoning_content"]
        == ""
    )


# ------------------------------------------------------------ generated conversations

_texts = st.sampled_from(["", " ", "hi", "look at this", "<system-reminder>x</system-reminder>"])
_ids = st.sampled_from(["t1", "t2", "t3", "call_9"])


@st.composite
def _user_block(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "image", "tool_result", "unknown"]))
    if kind == "text":
        return text(draw(_texts), cache_control={"type": "ephemeral"})
    if kind == "image":
        return b64_image()
    if kind == "unknown":
        return {"type": "mystery", "payload": 1}
    content = draw(
        st.one_of(_texts, st.lists(st.one_of(_texts.map(text), st.just(b64_image())), max_size=3))
    )
    return tool_result(draw(_ids), content, is_error=draw(st.booleans()))


@st.composite
def _assistant_block(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "tool_use", "thinking", "redacted"]))
    if kind == "text":
        return text(draw(_texts))
    if kind == "tool_use":
        return tool_use(draw(_ids), "Bash", draw(st.sampled_from([{}, {"command": "ls"}])))
    if kind == "thinking":
        return thinking(draw(st.sampled_from([PROXY_SIG, "", "anthropic-sig"])))
    return {"type": "redacted_thinking", "data": "x"}


@st.composite
def _conversation(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 7))):
        role = draw(st.sampled_from(["user", "assistant", "system"]))
        if role == "system":
            messages.append(system(draw(_texts)))
        elif role == "user":
            messages.append(user(draw(st.one_of(_texts, st.lists(_user_block(), max_size=4)))))
        else:
            blocks = draw(st.lists(_assistant_block(), max_size=4))
            # Anthropic requires unique tool_use ids inside a message.
            seen: set[str] = set()
            unique = []
            for b in blocks:
                if b["type"] == "tool_use":
                    if b["id"] in seen:
                        continue
                    seen.add(b["id"])
                unique.append(b)
            messages.append(asst(unique))
    messages.append(user("final question"))
    return messages


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(messages=_conversation(), target=st.sampled_from([TARGET, REPLAY]))
def test_generated_conversations_always_valid(
    messages: list[dict[str, Any]], target: ChatTarget
) -> None:
    got = chat_request_from_messages(areq(messages, system="S"), target, stream=False)
    assert_valid_chat(got)
    assert got["messages"][0] == {"role": "system", "content": got["messages"][0]["content"]}
    # Thinking text reaches the upstream only as reasoning_content of a replay target.
    without_reasoning = copy.deepcopy(got)
    for m in without_reasoning["messages"]:
        reasoning = m.pop("reasoning_content", None)
        if target.replay_reasoning and m["role"] == "assistant":
            assert reasoning is not None and reasoning.replace(THOUGHT, "") == ""
        else:
            assert reasoning is None
    assert "The user wants" not in orjson.dumps(without_reasoning).decode()
