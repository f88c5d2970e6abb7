"""Canonical Anthropic Messages request -> Gemini generateContent (gemini.request.writer)."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_gemini_schema import schema_problems

from hydra_proxy.canonical.content import MISSING_TOOL_RESULT
from hydra_proxy.canonical.turns import LEADING_USER_PLACEHOLDER
from hydra_proxy.errors import ProxyError
from hydra_proxy.gemini.request.writer import (
    GeminiTarget,
    gemini_headers,
    gemini_path,
    gemini_request_from_messages,
    gemini_target,
)
from hydra_proxy.gemini.response.reader import message_from_gemini_response
from hydra_proxy.gemini.thought_signature import (
    SKIP_VALIDATOR,
    same_signature,
    thought_signature_block,
)
from hydra_proxy.signature import sign_thinking
from support.gemini_fixtures import collapsed_response, load_json

KEY = b"k" * 32
CLAUDE_CODE = Path(__file__).parent.parent / "fixtures" / "claude-code"
RECORDING = "pydantic-gemini3pro-stream-function-call-thought-signature"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

GEMINI_25 = gemini_target("gemini-2.5-flash", signing_key=KEY)
GEMINI_3 = gemini_target("gemini-3-pro-preview", signing_key=KEY)


def claude_code(name: str) -> dict[str, Any]:
    body: dict[str, Any] = orjson.loads((CLAUDE_CODE / f"{name}.json").read_bytes())["body"]
    return body


def write(body: dict[str, Any], target: GeminiTarget = GEMINI_25) -> dict[str, Any]:
    return gemini_request_from_messages(body, target)


def request(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-x", "max_tokens": 1000, "messages": messages, **extra}


def bad(body: dict[str, Any], target: GeminiTarget = GEMINI_25) -> ProxyError:
    with pytest.raises(ProxyError) as info:
        write(body, target)
    assert info.value.status == 400
    assert info.value.error_type == "invalid_request_error"
    return info.value


BASH_TOOL = {
    "name": "Bash",
    "description": "Run a command",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}


def tool_turn(*blocks: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": list(blocks)},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
        },
    ]


CALL = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}

# ------------------------------------------------------------ thought signatures, recorded


def test_thought_signature_from_turn_1_reaches_gemini_on_turn_2() -> None:
    """The pydantic-ai gemini-3-pro recording: the .1 reply read by the proxy, carried by the
    client as its thinking block, and replayed: the writer's .2 request carries the same
    signature bytes as the recorded .2 request (and the exact text Gemini sent)."""
    reply = message_from_gemini_response(
        collapsed_response(f"{RECORDING}.1.sse"),
        message_id="msg_turn1",
        model="gemini-3-pro-preview",
        signing_key=KEY,
    )
    assert [b["type"] for b in reply["content"]] == ["thinking", "tool_use"]
    assert reply["stop_reason"] == "tool_use"
    call = reply["content"][1]
    recorded_1 = load_json(f"{RECORDING}.1.request.json")["body"]
    recorded_2 = load_json(f"{RECORDING}.2.request.json")["body"]
    question = recorded_1["contents"][0]["parts"][0]["text"]
    # What the client sends back, as Claude Code does: the assistant content verbatim.
    body = request(
        [
            {"role": "user", "content": question},
            {"role": "assistant", "content": copy.deepcopy(reply["content"])},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call["id"], "content": "Mexico"}
                ],
            },
        ],
        tools=[
            {
                "name": "get_country",
                "description": "",
                "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
            }
        ],
    )
    out = write(body, GEMINI_3)

    sent = collapsed_response(f"{RECORDING}.1.sse")["candidates"][0]["content"]["parts"][0][
        "thoughtSignature"
    ]
    recorded_model = recorded_2["contents"][1]
    model = out["contents"][1]
    assert model["role"] == recorded_model["role"] == "model"
    assert len(model["parts"]) == len(recorded_model["parts"]) == 1
    assert model["parts"][0]["thoughtSignature"] == sent  # exactly as Gemini sent it
    assert same_signature(
        model["parts"][0]["thoughtSignature"], recorded_model["parts"][0]["thoughtSignature"]
    )
    recorded_call = recorded_model["parts"][0]["functionCall"]
    assert model["parts"][0]["functionCall"] == {
        "name": recorded_call["name"],
        "args": recorded_call["args"],
    }
    # The rest of the conversation has the recorded shape (ids are not sent; the result
    # goes under Gemini's documented "output" key rather than pydantic's "return_value").
    assert out["contents"][0] == recorded_2["contents"][0]
    response = out["contents"][2]
    assert response["role"] == "user"
    assert response["parts"] == [
        {"functionResponse": {"name": "get_country", "response": {"output": "Mexico"}}}
    ]
    assert [d["name"] for d in out["tools"][0]["functionDeclarations"]] == ["get_country"]
    assert "parameters" not in out["tools"][0]["functionDeclarations"][0]


def test_gemini_25_recording_request_shape() -> None:
    recorded = load_json("pydantic-gemini25pro-stream-thought-parts.request.json")["body"]
    body = request(
        [{"role": "user", "content": recorded["contents"][0]["parts"][0]["text"]}],
        system=recorded["systemInstruction"]["parts"][0]["text"],
        thinking={"type": "enabled", "budget_tokens": 2048},
    )
    out = write(body, gemini_target("gemini-2.5-pro", signing_key=KEY))
    assert out["contents"] == recorded["contents"]
    assert out["systemInstruction"]["parts"] == recorded["systemInstruction"]["parts"]
    assert out["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 2048,
        "includeThoughts": True,
    }


# ------------------------------------------------------------- Claude Code's own requests


def test_claude_code_first_request() -> None:
    body = claude_code("request-plain")
    before = orjson.dumps(body)
    out = write(body, gemini_target("gemini-2.5-pro", signing_key=KEY, max_output_tokens=65536))
    assert orjson.dumps(body) == before  # input untouched

    system = out["systemInstruction"]["parts"]
    assert len(system) == 1
    text = system[0]["text"]
    assert "x-anthropic-billing-header" not in text
    assert text.startswith("You are a Claude agent")
    assert "# Environment" in text  # the mid-conversation system message
    assert [c["role"] for c in out["contents"]] == ["user"]
    assert out["contents"][0]["parts"][-1] == {"text": body["messages"][0]["content"][-1]["text"]}

    declarations = out["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == [t["name"] for t in body["tools"]]
    for declaration in declarations:
        if "parameters" in declaration:
            assert schema_problems(declaration["parameters"]) == []
    placeholder = next(d for d in declarations if d["name"] == "DeferredToolPlaceholder")
    assert "parameters" not in placeholder

    config = out["generationConfig"]
    assert config["maxOutputTokens"] == 65536  # 128000 clamped to the route's limit
    # adaptive thinking, effort medium, display "omitted" (no summaries) on a budget model
    assert body["thinking"] == {"type": "adaptive", "display": "omitted"}
    assert config["thinkingConfig"] == {"thinkingBudget": 8192}
    raw = orjson.dumps(out).decode()
    for dropped in ("cache_control", "context_management", "metadata", "user_id", "defer_loading"):
        assert f'"{dropped}":' not in raw


def test_claude_code_tool_loop_request() -> None:
    out = write(claude_code("request-after-tool-result"), GEMINI_25)
    assert [c["role"] for c in out["contents"]] == ["user", "model", "user"]
    assert out["contents"][1]["parts"] == [
        {"text": "I will run it."},
        {
            "functionCall": {
                "name": "Bash",
                "args": {"command": "echo hello-from-tool", "description": "Print a greeting"},
            }
        },
    ]
    assert out["contents"][2]["parts"] == [
        {"functionResponse": {"name": "Bash", "response": {"output": "hello-from-tool"}}}
    ]


def test_claude_code_tool_loop_on_gemini_3_gets_the_documented_skip_signature() -> None:
    """History without a Gemini signature (made by another model) must not 400 on Gemini 3."""
    out = write(claude_code("request-after-tool-result"), GEMINI_3)
    call = out["contents"][1]["parts"][1]
    assert call["thoughtSignature"] == SKIP_VALIDATOR
    assert "thoughtSignature" not in out["contents"][1]["parts"][0]
    assert out["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "high",
        "includeThoughts": True,
    }


def test_anthropic_signed_thinking_is_never_sent_as_text() -> None:
    body = claude_code("request-replaying-signed-thinking")
    out = write(body, GEMINI_25)
    raw = orjson.dumps(out).decode()
    assert "The user wants echo." not in raw
    assert "SIGxyz" not in raw
    assert out["contents"][1]["parts"][0] == {"text": "I will run it."}
    # thinking display "omitted": no summaries asked for, effort medium still applies
    assert body["thinking"]["display"] == "omitted"
    assert out["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 8192}


# ------------------------------------------------------------------ carrier placement


def carrier(signature: str, text: str = "", key: bytes = KEY) -> dict[str, Any]:
    block = thought_signature_block(signature, key, text)
    assert block is not None
    return block


def model_parts(body: dict[str, Any], target: GeminiTarget = GEMINI_25) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = write(body, target)["contents"][1]["parts"]
    return parts


def test_carrier_goes_on_the_next_part() -> None:
    parts = model_parts(
        request(
            tool_turn(carrier("QUJD", "thought summary"), {"type": "text", "text": "ok"}, CALL),
            tools=[BASH_TOOL],
        )
    )
    assert parts == [
        {"text": "ok", "thoughtSignature": "QUJD"},
        {"functionCall": {"name": "Bash", "args": {"command": "ls"}}},
    ]


def test_trailing_carrier_becomes_an_empty_text_part() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello"}, carrier("RUZH")]},
        {"role": "user", "content": "again"},
    ]
    assert model_parts(request(messages)) == [
        {"text": "Hello"},
        {"text": "", "thoughtSignature": "RUZH"},
    ]


def test_two_carriers_in_a_row_keep_their_own_parts() -> None:
    parts = model_parts(
        request(tool_turn(carrier("QUFB"), carrier("QkJC"), CALL), tools=[BASH_TOOL])
    )
    assert parts == [
        {"text": "", "thoughtSignature": "QUFB"},
        {"functionCall": {"name": "Bash", "args": {"command": "ls"}}, "thoughtSignature": "QkJC"},
    ]


def test_parallel_calls_only_the_first_is_signed() -> None:
    second = {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "pwd"}}
    messages = tool_turn(carrier("QUJD"), CALL, second)
    messages[2]["content"].append({"type": "tool_result", "tool_use_id": "toolu_2", "content": "/"})
    out = write(request(messages, tools=[BASH_TOOL]), GEMINI_3)
    parts = out["contents"][1]["parts"]
    assert parts[0]["thoughtSignature"] == "QUJD"
    assert "thoughtSignature" not in parts[1]
    assert [p["functionResponse"]["response"] for p in out["contents"][2]["parts"]] == [
        {"output": "ok"},
        {"output": "/"},
    ]


def test_forged_or_foreign_carriers_give_no_signature() -> None:
    foreign = carrier("QUJD", key=b"x" * 32)
    text_signed = {"type": "thinking", "thinking": "QUJD", "signature": sign_thinking("QUJD", KEY)}
    for block in (foreign, text_signed):
        assert model_parts(request(tool_turn(block, CALL), tools=[BASH_TOOL])) == [
            {"functionCall": {"name": "Bash", "args": {"command": "ls"}}}
        ]
        assert (
            model_parts(request(tool_turn(block, CALL), tools=[BASH_TOOL]), GEMINI_3)[0][
                "thoughtSignature"
            ]
            == SKIP_VALIDATOR
        )


def test_redacted_thinking_dropped() -> None:
    parts = model_parts(
        request(tool_turn({"type": "redacted_thinking", "data": "opaque"}, CALL), tools=[BASH_TOOL])
    )
    assert "opaque" not in orjson.dumps(parts).decode()


# ------------------------------------------------------------------------ user content


def test_images_and_documents() -> None:
    content = [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg?x=1"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/render"}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"},
        },
        {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
        {
            "type": "document",
            "title": "Notes",
            "source": {"type": "text", "media_type": "text/plain", "data": "plain words"},
        },
    ]
    parts = write(request([{"role": "user", "content": content}]))["contents"][0]["parts"]
    assert parts == [
        {"text": "look"},
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"fileData": {"fileUri": "https://example.com/cat.jpg?x=1", "mimeType": "image/jpeg"}},
        {"fileData": {"fileUri": "https://example.com/render"}},
        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0x"}},
        {"fileData": {"mimeType": "application/pdf", "fileUri": "https://example.com/a.pdf"}},
        {"text": "Notes\n\nplain words"},
    ]


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image", "source": {"type": "file", "file_id": "file_1"}},
        {"type": "document", "source": {"type": "file", "file_id": "file_1"}},
        {"type": "image", "source": {"type": "base64", "data": PNG}},
    ],
)
def test_unsendable_sources_are_400(block: dict[str, Any]) -> None:
    error = bad(request([{"role": "user", "content": [block]}]))
    assert error.param is not None and error.param.startswith("messages.0.content.0.source")


def test_tool_result_images_stay_in_the_same_turn() -> None:
    """An image returned by a tool reaches Gemini as image data, not text."""
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [
            {"type": "text", "text": "screenshot taken"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ],
    }
    messages = tool_turn(CALL)
    messages[2]["content"] = [result, {"type": "text", "text": "what do you see?"}]
    parts = write(request(messages, tools=[BASH_TOOL]))["contents"][2]["parts"]
    assert parts[0]["functionResponse"]["name"] == "Bash"
    assert parts[0]["functionResponse"]["response"]["output"].startswith("screenshot taken")
    assert parts[1] == {"text": "Output of tool call Bash (toolu_1):"}
    assert parts[2] == {"inlineData": {"mimeType": "image/png", "data": PNG}}
    assert parts[3] == {"text": "what do you see?"}
    assert PNG not in parts[0]["functionResponse"]["response"]["output"]


def test_tool_error_stays_visible() -> None:
    messages = tool_turn(CALL)
    messages[2]["content"][0] = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "is_error": True,
        "content": [{"type": "text", "text": "exit 1"}],
    }
    parts = write(request(messages, tools=[BASH_TOOL]))["contents"][2]["parts"]
    assert parts == [{"functionResponse": {"name": "Bash", "response": {"error": "exit 1"}}}]


def test_missing_and_orphan_results() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [CALL]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_ghost", "content": "late"},
                {"type": "text", "text": "never mind"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {}}],
        },
    ]
    contents = write(request(messages, tools=[BASH_TOOL]))["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "Bash", "response": {"error": MISSING_TOOL_RESULT}}},
        {"text": "Result of tool call toolu_ghost:\nlate"},
        {"text": "never mind"},
    ]
    assert contents[3]["parts"] == [{"functionCall": {"name": "Bash", "args": {}}}]
    assert contents[4]["parts"] == [
        {"functionResponse": {"name": "Bash", "response": {"error": MISSING_TOOL_RESULT}}}
    ]


def test_sequence_merging_and_leading_placeholder() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": "Earlier answer"},
        {"role": "user", "content": "one"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "two"}, {"type": "text", "text": "  "}],
        },
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "unsigned", "signature": ""}],
        },
        {"role": "user", "content": "three"},
    ]
    contents = write(request(messages))["contents"]
    assert contents == [
        {"role": "user", "parts": [{"text": LEADING_USER_PLACEHOLDER}]},
        {"role": "model", "parts": [{"text": "Earlier answer"}]},
        {"role": "user", "parts": [{"text": "one"}, {"text": "two"}, {"text": "three"}]},
    ]


def test_unknown_blocks_are_tolerated() -> None:
    content = [
        {"type": "future_block", "text": "kept text"},
        {"type": "future_block", "data": 1},
        {
            "type": "search_result",
            "title": "T",
            "source": "https://s",
            "content": [{"type": "text", "text": "body"}],
        },
    ]
    parts = write(request([{"role": "user", "content": content}]))["contents"][0]["parts"]
    assert parts == [{"text": "kept text"}, {"text": "T\nhttps://s\nbody"}]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m", "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
        (request([]), "messages"),
        (request([{"role": "tool", "content": "x"}]), "messages.0.role"),
        (request([{"role": "user", "content": "  "}]), "messages"),
        (request([{"role": "user", "content": [{"text": "x"}]}]), "messages.0.content.0.type"),
        (
            request(
                [{"role": "assistant", "content": [{"type": "tool_use", "name": "x", "input": {}}]}]
            ),
            "messages.0.content.0.id",
        ),
        (request([{"role": "user", "content": "x"}], temperature="hot"), "temperature"),
        (request([{"role": "user", "content": "x"}], top_k=0), "top_k"),
        (request([{"role": "user", "content": "x"}], stop_sequences="END"), "stop_sequences"),
    ],
)
def test_bad_requests_name_the_field(body: dict[str, Any], param: str) -> None:
    assert bad(body).param == param


# ------------------------------------------------------------------------------- tools


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, {"mode": "AUTO"}),
        ({"type": "any"}, {"mode": "ANY"}),
        ({"type": "none"}, {"mode": "NONE"}),
        ({"type": "tool", "name": "Bash"}, {"mode": "ANY", "allowedFunctionNames": ["Bash"]}),
        ({"type": "auto", "disable_parallel_tool_use": True}, {"mode": "AUTO"}),
    ],
)
def test_tool_choice(choice: dict[str, Any], expected: dict[str, Any]) -> None:
    out = write(request([{"role": "user", "content": "x"}], tools=[BASH_TOOL], tool_choice=choice))
    assert out["toolConfig"] == {"functionCallingConfig": expected}
    assert out["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "Bash",
                    "description": "Run a command",
                    "parameters": {
                        "type": "OBJECT",
                        "properties": {"command": {"type": "STRING"}},
                        "required": ["command"],
                    },
                }
            ]
        }
    ]


def test_tool_choice_without_tools_and_unknown_tool() -> None:
    out = write(request([{"role": "user", "content": "x"}], tool_choice={"type": "any"}))
    assert "toolConfig" not in out and "tools" not in out
    error = bad(
        request(
            [{"role": "user", "content": "x"}],
            tools=[BASH_TOOL],
            tool_choice={"type": "tool", "name": "Nope"},
        )
    )
    assert error.param == "tool_choice.name"


@pytest.mark.parametrize(
    "tool",
    [
        {"type": "code_execution_20250825", "name": "code_execution"},
        {"type": "bash_20250124", "name": "bash"},
    ],
)
def test_server_tools_are_refused(tool: dict[str, Any]) -> None:
    error = bad(request([{"role": "user", "content": "x"}], tools=[BASH_TOOL, tool]))
    assert error.param == "tools.1"
    assert "server tool" in error.message and tool["name"] in error.message


def test_mcp_servers_are_refused() -> None:
    error = bad(
        request(
            [{"role": "user", "content": "x"}],
            mcp_servers=[{"type": "url", "url": "https://m", "name": "m"}],
        )
    )
    assert error.param == "mcp_servers"


# ------------------------------------------------------------------------- parameters


def test_sampling_and_stops() -> None:
    out = write(
        request(
            [{"role": "user", "content": "x"}],
            max_tokens=500,
            temperature=0.2,
            top_p=0.9,
            top_k=40,
            stop_sequences=["a", "", "b", "c", "d", "e", "f"],
        )
    )
    assert out["generationConfig"] == {
        "maxOutputTokens": 500,
        "stopSequences": ["a", "b", "c", "d", "e"],
        "temperature": 0.2,
        "topP": 0.9,
        "topK": 40,
    }


BUDGET = GeminiTarget(
    model="gemini-2.5-pro", thinking="budget", max_thinking_budget=32768, min_thinking_budget=128
)
LEVEL_PRO = GeminiTarget(
    model="gemini-3-pro-preview", thinking="level", thinking_levels=("low", "high")
)
LEVEL_FLASH = GeminiTarget(
    model="gemini-3-flash-preview",
    thinking="level",
    thinking_levels=("minimal", "low", "medium", "high"),
)
NO_THINKING = GeminiTarget(model="gemini-2.0-flash", thinking="none")


@pytest.mark.parametrize(
    ("target", "extra", "expected"),
    [
        (BUDGET, {}, None),
        (
            BUDGET,
            {"thinking": {"type": "enabled", "budget_tokens": 5000}},
            {"thinkingBudget": 5000, "includeThoughts": True},
        ),
        (
            BUDGET,
            {"thinking": {"type": "enabled", "budget_tokens": 100000}},
            {"thinkingBudget": 32768, "includeThoughts": True},
        ),
        (
            BUDGET,
            {"thinking": {"type": "adaptive"}},
            {"thinkingBudget": -1, "includeThoughts": True},
        ),
        (
            BUDGET,
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}},
            {"thinkingBudget": 1024, "includeThoughts": True},
        ),
        (BUDGET, {"thinking": {"type": "disabled"}}, {"thinkingBudget": 128}),
        (BUDGET, {"output_config": {"effort": "high"}}, {"thinkingBudget": 24576}),
        (LEVEL_PRO, {"thinking": {"type": "adaptive"}}, {"includeThoughts": True}),
        (
            LEVEL_PRO,
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}},
            {"thinkingLevel": "high", "includeThoughts": True},
        ),
        (
            LEVEL_PRO,
            {"thinking": {"type": "enabled", "budget_tokens": 2000}},
            {"thinkingLevel": "low", "includeThoughts": True},
        ),
        (
            LEVEL_PRO,
            {"thinking": {"type": "enabled", "budget_tokens": 30000}},
            {"thinkingLevel": "high", "includeThoughts": True},
        ),
        (LEVEL_PRO, {"thinking": {"type": "disabled"}}, {"thinkingLevel": "low"}),
        (LEVEL_PRO, {"output_config": {"effort": "max"}}, {"thinkingLevel": "high"}),
        (LEVEL_FLASH, {"thinking": {"type": "disabled"}}, {"thinkingLevel": "minimal"}),
        (
            LEVEL_FLASH,
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}},
            {"thinkingLevel": "medium", "includeThoughts": True},
        ),
        (NO_THINKING, {"thinking": {"type": "enabled", "budget_tokens": 5000}}, None),
    ],
)
def test_thinking_config(
    target: GeminiTarget, extra: dict[str, Any], expected: dict[str, Any] | None
) -> None:
    config = write(request([{"role": "user", "content": "x"}], **extra), target)["generationConfig"]
    assert config.get("thinkingConfig") == expected


def test_target_defaults_by_model() -> None:
    assert gemini_target("gemini-3-pro-preview").thinking == "level"
    assert gemini_target("gemini-3-pro-preview").require_call_signatures
    assert gemini_target("gemini-3-flash-preview").thinking_levels == (
        "minimal",
        "low",
        "medium",
        "high",
    )
    assert gemini_target("gemini-2.5-pro").min_thinking_budget == 128
    assert gemini_target("gemini-2.5-flash").thinking == "budget"
    assert not gemini_target("gemini-2.5-flash").require_call_signatures
    assert gemini_target("gemini-3-pro-preview", thinking="budget").thinking == "budget"


def test_response_format() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "format": "uri"}},
        "required": ["answer"],
        "additionalProperties": False,
        "$schema": "x",
    }
    for extra in (
        {"output_config": {"format": {"type": "json_schema", "schema": schema}}},
        {"output_format": {"type": "json_schema", "schema": schema}},
    ):
        config = write(request([{"role": "user", "content": "x"}], **extra))["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseSchema"] == {
            "type": "OBJECT",
            "properties": {"answer": {"type": "STRING"}},
            "required": ["answer"],
        }


# ------------------------------------------------------------------------ path, headers


def test_path_and_headers() -> None:
    assert gemini_path("gemini-2.5-pro", stream=False) == "models/gemini-2.5-pro:generateContent"
    assert (
        gemini_path("models/gemini-3-pro-preview", stream=True)
        == "models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    )
    assert (
        gemini_path("tunedModels/my-model-1", stream=False)
        == "tunedModels/my-model-1:generateContent"
    )
    for name in ("../secrets", "gemini?key=x", "", "a b"):
        with pytest.raises(ValueError):
            gemini_path(name, stream=False)
    assert gemini_headers("AIza-test") == [
        ("content-type", "application/json"),
        ("x-goog-api-key", "AIza-test"),
    ]


def test_recorded_uris_match_the_path() -> None:
    for name, stream in (
        (f"{RECORDING}.1.request.json", True),
        ("pydantic-gemini25pro-stream-thought-parts.request.json", True),
    ):
        uri: str = load_json(name)["uri"]
        model = uri.split("/models/")[1].split(":")[0]
        assert uri.endswith("/" + gemini_path(model, stream=stream))


@pytest.mark.parametrize("name", sorted(p.stem for p in CLAUDE_CODE.glob("*.json")))
def test_every_claude_code_request_translates(name: str) -> None:
    for target in (GEMINI_25, GEMINI_3):
        out = write(claude_code(name), target)
        orjson.dumps(out)
        for declaration in out["tools"][0]["functionDeclarations"]:
            assert schema_problems(declaration.get("parameters", {"type": "OBJECT"})) == []
        roles = [c["role"] for c in out["contents"]]
        assert roles[0] == "user"
        assert all(a != b for a, b in itertools.pairwise(roles))  # alternating
        calls = sum("functionCall" in p for c in out["contents"] for p in c["parts"])
        responses = sum("functionResponse" in p for c in out["contents"] for p in c["parts"])
        assert calls == responses


def test_pdf_in_a_tool_result_is_sent_as_data() -> None:
    messages = tool_turn(CALL)
    messages[2]["content"][0]["content"] = [
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"},
        },
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "page text"},
        },
    ]
    parts = write(request(messages, tools=[BASH_TOOL]))["contents"][2]["parts"]
    assert parts[0]["functionResponse"]["response"]["output"].startswith("page text")
    assert parts[2] == {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0x"}}


def test_schema_bomb_is_a_400_naming_the_tool() -> None:
    defs: dict[str, Any] = {"L0": {"type": "string"}}
    for i in range(1, 12):
        defs[f"L{i}"] = {
            "type": "object",
            "properties": {f"p{k}": {"$ref": f"#/$defs/L{i - 1}"} for k in range(10)},
        }
    tool = {
        "name": "Bomb",
        "input_schema": {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/L11"}},
            "$defs": defs,
        },
    }
    error = bad(request([{"role": "user", "content": "x"}], tools=[tool]))
    assert error.param == "tools.0.input_schema" and "Bomb" in error.message
