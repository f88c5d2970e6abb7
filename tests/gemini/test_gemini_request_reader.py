"""The Gemini request reader on Gemini CLI's real requests (../shared fixtures, copied in
tests/fixtures/gemini-cli/) and on every decision its modules document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy import continuation
from hydra_proxy.canonical.target import MessagesTarget
from hydra_proxy.errors import ProxyError
from hydra_proxy.gemini.carrier import restored_blocks, thought_signature
from hydra_proxy.gemini.request.reader import messages_request_from_gemini

CLI = Path(__file__).parent.parent / "fixtures" / "gemini-cli"
KEY = b"reader-key"
TARGET = MessagesTarget(model="claude-x", continuation_key=KEY)


def read(
    body: dict[str, Any], *, stream: bool = True, target: MessagesTarget = TARGET
) -> dict[str, Any]:
    return messages_request_from_gemini(body, target, stream=stream).body


def refused(body: dict[str, Any]) -> str:
    with pytest.raises(ProxyError) as caught:
        read(body)
    assert caught.value.status == 400
    return caught.value.message


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def test_gemini_cli_first_turn() -> None:
    captured = json.loads((CLI / "request-stream-yolo-first-turn.json").read_text())["body"]
    out = read(captured)
    assert out["system"] == captured["systemInstruction"]["parts"][0]["text"]
    declared = [d["name"] for t in captured["tools"] for d in t["functionDeclarations"]]
    assert [t["name"] for t in out["tools"]] == declared and "run_shell_command" in declared
    shell = next(t for t in out["tools"] if t["name"] == "run_shell_command")
    assert (
        shell["input_schema"]["type"] == "object"
        and "command" in shell["input_schema"]["properties"]
    )
    # thinkingLevel HIGH -> the high effort's budget; sampling as thinking allows
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert out["top_p"] == 0.95 and "temperature" not in out and "top_k" not in out
    assert out["max_tokens"] > 16384 and out["stream"] is True
    texts = [b["text"] for b in out["messages"][0]["content"]]
    assert texts == [p["text"] for p in captured["contents"][0]["parts"]]


def test_gemini_cli_router_asks_for_json() -> None:
    captured = json.loads((CLI / "request-router-classifier.json").read_text())["body"]
    out = read(captured, stream=False)
    schema = out["output_config"]["format"]["schema"]
    assert out["output_config"]["format"]["type"] == "json_schema"
    assert (
        schema["type"] == "object" and schema["properties"]["complexity_score"]["type"] == "integer"
    )
    assert [m["role"] for m in out["messages"]] == ["user"] and len(
        out["messages"][0]["content"]
    ) == 2


def test_a_tool_loop_by_id_and_by_name() -> None:
    out = read(
        {
            "contents": [
                user({"text": "list and read"}),
                model(
                    {"text": "Doing it."},
                    {"functionCall": {"id": "c-1", "name": "ls", "args": {"dir": "."}}},
                    {"functionCall": {"name": "cat", "args": {"file": "a"}}},
                ),
                user(
                    {"functionResponse": {"name": "cat", "response": {"error": "denied"}}},
                    {
                        "functionResponse": {
                            "id": "c-1",
                            "name": "ls",
                            "response": {"output": "a b"},
                        }
                    },
                    {"text": "and?"},
                ),
            ]
        }
    )
    assistant, answers = out["messages"][1], out["messages"][2]
    calls = [b for b in assistant["content"] if b["type"] == "tool_use"]
    assert calls[0]["id"] == "c-1" and calls[1]["id"].startswith("call_")
    assert answers["content"][0] == {
        "type": "tool_result",
        "tool_use_id": calls[1]["id"],
        "content": "denied",
        "is_error": True,
    }
    assert answers["content"][1] == {"type": "tool_result", "tool_use_id": "c-1", "content": "a b"}
    assert answers["content"][2] == {"type": "text", "text": "and?"}


def test_a_structured_response_is_its_json() -> None:
    out = read(
        {
            "contents": [
                user({"text": "x"}),
                model({"functionCall": {"name": "f"}}),
                user({"functionResponse": {"name": "f", "response": {"rows": [1, 2]}}}),
            ]
        }
    )
    assert out["messages"][2]["content"][0]["content"] == '{"rows":[1,2]}'


@pytest.mark.parametrize(
    ("contents", "field"),
    [
        (
            [
                user({"text": "x"}),
                model({"functionCall": {"name": "f"}}),
                user({"text": "no answer"}),
                model({"text": "y"}),
            ],
            "contents[1].parts[0].functionCall.name",
        ),
        (
            [
                user({"text": "x"}),
                model({"functionCall": {"name": "f"}}),
                user({"functionResponse": {"name": "g", "response": {}}}),
            ],
            "contents[2].parts[0].functionResponse.name",
        ),
        ([user({"functionCall": {"name": "f"}})], "contents[0].parts[0].functionCall"),
        ([model({"functionResponse": {"name": "f"}})], "contents[0].parts[0].functionResponse"),
        (
            [user({"fileData": {"fileUri": "gs://bucket/a.pdf", "mimeType": "application/pdf"}})],
            "contents[0].parts[0].fileData.fileUri",
        ),
        (
            [user({"inlineData": {"mimeType": "video/mp4", "data": "AAAA"}})],
            "contents[0].parts[0].inlineData",
        ),
        ([user({"videoMetadata": {}})], "contents[0].parts[0]"),
    ],
)
def test_bad_contents_name_the_field(contents: list[Any], field: str) -> None:
    assert refused({"contents": contents}).startswith(field)


def test_media_parts() -> None:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    out = read(
        {
            "contents": [
                user(
                    {"inlineData": {"mimeType": "image/png", "data": png}},
                    {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0xLjQK"}},
                    {
                        "fileData": {
                            "fileUri": "https://example.com/cat.jpg",
                            "mimeType": "image/jpeg",
                        }
                    },
                    {
                        "fileData": {
                            "fileUri": "https://example.com/a.pdf",
                            "mimeType": "application/pdf",
                        }
                    },
                )
            ]
        }
    )
    blocks = out["messages"][0]["content"]
    assert blocks[0]["source"] == {"type": "base64", "media_type": "image/png", "data": png}
    assert (
        blocks[1]["type"] == "document" and blocks[1]["source"]["media_type"] == "application/pdf"
    )
    assert blocks[2]["source"] == {"type": "url", "url": "https://example.com/cat.jpg"}
    assert blocks[3] == {
        "type": "document",
        "source": {"type": "url", "url": "https://example.com/a.pdf"},
    }


def test_thought_signature_carrier_restores_the_thinking() -> None:
    blocks = [
        continuation.ThinkingBlock("Let me check.", "EqQBanthropicsig"),
        continuation.RedactedBlock("opaque"),
    ]
    carrier = thought_signature(blocks, KEY)
    assert restored_blocks(carrier, KEY) == [
        {"type": "thinking", "thinking": "Let me check.", "signature": "EqQBanthropicsig"},
        {"type": "redacted_thinking", "data": "opaque"},
    ]
    urlsafe = carrier.replace("+", "-").replace("/", "_").rstrip("=")
    assert restored_blocks(urlsafe, KEY) == restored_blocks(carrier, KEY)
    assert restored_blocks(carrier, b"another key") is None
    history = {
        "contents": [
            user({"text": "go"}),
            model(
                {"text": "Let me check.", "thought": True},
                {
                    "functionCall": {"id": "c1", "name": "f", "args": {}},
                    "thoughtSignature": carrier,
                },
            ),
            user({"functionResponse": {"id": "c1", "name": "f", "response": {"output": "ok"}}}),
        ],
        "generationConfig": {"thinkingConfig": {"thinkingBudget": 4096}},
    }
    translation = messages_request_from_gemini(history, TARGET, stream=True)
    content = translation.body["messages"][1]["content"]
    assert [b["type"] for b in content] == ["thinking", "redacted_thinking", "tool_use"]
    assert translation.body["thinking"]["type"] == "enabled" and translation.restored_blocks == 2


def test_foreign_signatures_restore_nothing() -> None:
    history = {
        "contents": [
            user({"text": "go"}),
            model(
                {
                    "functionCall": {"name": "f"},
                    "thoughtSignature": "skip_thought_signature_validator",
                }
            ),
            user({"functionResponse": {"name": "f", "response": {"output": "ok"}}}),
        ],
        "generationConfig": {"thinkingConfig": {"thinkingBudget": 4096}},
    }
    translation = messages_request_from_gemini(history, TARGET, stream=True)
    assert translation.skipped_signatures == 1
    assert [b["type"] for b in translation.body["messages"][1]["content"]] == ["tool_use"]
    # the tool loop's thinking cannot be restored: thinking is off for this request
    assert translation.body["thinking"] == {"type": "disabled"} and translation.thinking_disabled


@pytest.mark.parametrize(
    ("config", "thinking"),
    [
        ({"thinkingBudget": 0}, {"type": "disabled"}),
        ({"thinkingBudget": 500}, {"type": "enabled", "budget_tokens": 1024}),
        ({"thinkingBudget": -1}, {"type": "enabled", "budget_tokens": 8192}),
        ({"thinkingLevel": "LOW"}, {"type": "enabled", "budget_tokens": 2048}),
        ({"thinkingLevel": "MINIMAL"}, {"type": "disabled"}),
        (
            {"thinking_budget": 3000, "include_thoughts": False},
            {"type": "enabled", "budget_tokens": 3000},
        ),
    ],
)
def test_thinking_config(config: dict[str, Any], thinking: dict[str, Any]) -> None:
    body = {"contents": [user({"text": "x"})], "generationConfig": {"thinkingConfig": config}}
    assert read(body)["thinking"] == thinking
    include = messages_request_from_gemini(body, TARGET, stream=True).include_thoughts
    assert include is (config.get("include_thoughts") is not False)


def test_generation_config_and_tool_config() -> None:
    out = read(
        {
            "contents": [user({"text": "x"})],
            "tools": [{"functionDeclarations": [
                {"name": "a", "parameters": {"type": "OBJECT", "properties": {"n": {"type": "INTEGER", "nullable": True}}, "propertyOrdering": ["n"]}},
                {"name": "b"},
            ]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["a"]}},
            "generationConfig": {"temperature": 0.3, "topK": 40, "maxOutputTokens": 100, "stopSequences": ["STOP", ""], "candidateCount": 1},
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        }
    )  # fmt: skip
    assert out["tools"][0]["input_schema"] == {
        "type": "object",
        "properties": {"n": {"type": ["integer", "null"]}},
    }
    assert out["tools"][1]["input_schema"] == {"type": "object", "properties": {}}
    assert out["tool_choice"] == {"type": "tool", "name": "a"}
    assert (out["temperature"], out["top_k"], out["max_tokens"], out["stop_sequences"]) == (
        0.3,
        40,
        100,
        ["STOP"],
    )
    none = read(
        {
            "contents": [user({"text": "x"})],
            "tools": [{"functionDeclarations": [{"name": "a"}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "NONE"}},
        }
    )
    assert none["tool_choice"] == {"type": "none"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"generationConfig": {"candidateCount": 2}}, "generationConfig.candidateCount"),
        (
            {"generationConfig": {"responseMimeType": "text/x.enum"}},
            "generationConfig.responseMimeType",
        ),
        ({"generationConfig": {"temperature": 3}}, "generationConfig.temperature"),
        ({"cachedContent": "cachedContents/abc"}, "cachedContent"),
        ({"tools": [{"googleSearch": {}}]}, "tools[0].googleSearch"),
        ({"tools": [{"code_execution": {}}]}, "tools[0].codeExecution"),
        (
            {"tools": [{"functionDeclarations": [{"name": "a"}, {"name": "a"}]}]},
            "tools[0].functionDeclarations[1].name",
        ),
        ({"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}, "tool_choice"),
    ],
)
def test_refusals_name_the_field(body: dict[str, Any], field: str) -> None:
    assert refused({"contents": [user({"text": "x"})], **body}).startswith(field)


def test_json_object_without_a_schema() -> None:
    out = read(
        {
            "contents": [user({"text": "x"})],
            "generationConfig": {"responseMimeType": "application/json"},
        }
    )
    assert "JSON object" in out["system"]
