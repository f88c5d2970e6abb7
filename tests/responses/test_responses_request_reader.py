"""OpenAI Responses request -> Anthropic Messages request (hydra_proxy.responses.request.reader).

Real requests first: Codex CLI's first turn and every recorded Responses request go through
the reader and must give a request the anthropic SDK types accept and that follows
Anthropic's sequence/thinking rules (`assert_valid_anthropic`, shared with the Chat reader's
tests). Then table-driven mapping and validation cases, and the reasoning replay.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
from test_chat_via_anthropic_request import assert_valid_anthropic

from hydra_proxy.canonical.params import JSON_OBJECT_INSTRUCTION
from hydra_proxy.canonical.target import MessagesTarget
from hydra_proxy.canonical.turns import LEADING_USER_PLACEHOLDER
from hydra_proxy.errors import ProxyError
from hydra_proxy.responses.context import ResponsesContext
from hydra_proxy.responses.reasoning import CARRIER_PREFIX, encode_carrier
from hydra_proxy.responses.request.reader import Translation, messages_request_from_responses
from hydra_proxy.responses.response.writer import response_from_message
from hydra_proxy.responses.tools import CUSTOM_INPUT_SCHEMA, ToolOrigin
from support.responses_fixtures import codex_first_turn, request_recordings

KEY = b"responses-test-key-0123456789abcdef"
MODEL = "claude-test"
TARGET = MessagesTarget(model=MODEL, continuation_key=KEY)
SIGNATURE = "EqQBCkYIBxgCKkD9anthropic-signature-as-received"
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Use the `apply_patch` tool to edit files.",
    "format": {
        "type": "grammar",
        "syntax": "lark",
        "definition": 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF',
    },
}


def read(body: dict[str, Any], target: MessagesTarget = TARGET) -> Translation:
    translation = messages_request_from_responses(body, target)
    assert_valid_anthropic(translation.body)
    return translation


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def call(call_id: str, name: str = "exec_command", arguments: str = '{"cmd":"ls"}') -> Any:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def output(call_id: str, text: Any = "a.txt\nb.txt") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def carrier_item(blocks: list[dict[str, Any]], key: bytes = KEY) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "encrypted_content": encode_carrier(blocks, key),
    }


THINKING = {"type": "thinking", "thinking": "I should list the files.", "signature": SIGNATURE}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}


# ----------------------------------------------------------------- Codex's first turn


def test_codex_first_turn() -> None:
    body = codex_first_turn()
    original = copy.deepcopy(body)
    translation = read(body)
    out = translation.body
    assert body == original, "the input is never modified"

    developer = [
        part["text"]
        for item in body["input"]
        if item["role"] == "developer"
        for part in item["content"]
    ]
    assert out["system"] == "\n\n".join(developer)
    users = [item["content"][0]["text"] for item in body["input"] if item["role"] == "user"]
    assert out["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": text} for text in users]}
    ]
    assert users[-1] == "list the files here"

    names = [tool["name"] for tool in out["tools"]]
    assert names == [
        "exec_command",
        "write_stdin",
        "request_user_input",
        "view_image",
        "multi_agent_v1__close_agent",
        "multi_agent_v1__resume_agent",
        "multi_agent_v1__send_input",
        "multi_agent_v1__spawn_agent",
        "multi_agent_v1__wait_agent",
        "get_goal",
        "create_goal",
        "update_goal",
    ]
    assert all(len(name) <= 64 for name in names)
    assert translation.dropped_tools == ["web_search"]
    exec_command = body["tools"][0]
    assert out["tools"][0] == {
        "name": "exec_command",
        "description": exec_command["description"],
        "input_schema": exec_command["parameters"],
    }
    namespace = body["tools"][4]
    spawn = next(t for t in namespace["tools"] if t["name"] == "spawn_agent")
    flat = next(t for t in out["tools"] if t["name"] == "multi_agent_v1__spawn_agent")
    assert flat["input_schema"] == spawn["parameters"]
    assert flat["description"] == namespace["description"] + "\n\n" + spawn["description"]
    assert all("strict" not in tool for tool in out["tools"])

    assert out["tool_choice"] == {"type": "auto"}
    assert out["stream"] is True and translation.stream
    assert out["max_tokens"] == TARGET.default_max_tokens
    assert "thinking" not in out  # reasoning.summary without an effort: the model default
    assert "metadata" not in out
    assert out["cache_control"] == {"type": "ephemeral"}  # Codex sends a prompt_cache_key

    context = translation.context
    assert context.model == "gpt-5.1-codex"
    assert context.include_encrypted and context.summary
    assert context.prompt_cache_key == body["prompt_cache_key"]
    assert context.tools is body["tools"]
    assert context.tool_names.origin("multi_agent_v1__wait_agent") == ToolOrigin(
        "wait_agent", "multi_agent_v1"
    )
    assert context.tool_names.origin("exec_command") == ToolOrigin("exec_command")


def test_codex_custom_apply_patch_tool() -> None:
    body = codex_first_turn()
    body["tools"] = [*body["tools"], APPLY_PATCH]
    translation = read(body)
    tool = translation.body["tools"][-1]
    assert tool["name"] == "apply_patch"
    assert tool["input_schema"] == CUSTOM_INPUT_SCHEMA
    assert tool["description"].startswith(APPLY_PATCH["description"])
    assert APPLY_PATCH["format"]["definition"] in tool["description"]  # type: ignore[index]
    assert translation.context.tool_names.origin("apply_patch") == ToolOrigin(
        "apply_patch", custom=True
    )


def codex_second_turn(reasoning: dict[str, Any] | None, effort: str | None = "medium") -> Any:
    """Codex's first turn, answered by a call to exec_command, with its output replayed."""
    body = codex_first_turn()
    if effort is not None:
        body["reasoning"] = {"effort": effort, "summary": "auto"}
    items = [] if reasoning is None else [reasoning]
    items += [call("call_a1"), output("call_a1")]
    body["input"] = [*body["input"], *items]
    return body


def test_codex_tool_loop_restores_claude_thinking() -> None:
    # The first reply as the response writer gives it to Codex, replayed as Codex does.
    body = codex_first_turn()
    context = messages_request_from_responses(body, TARGET).context
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [
            THINKING,
            REDACTED,
            {"type": "tool_use", "id": "call_a1", "name": "exec_command", "input": {"cmd": "ls"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    reply = response_from_message(message, context, response_id="resp_1", created_at=1, key=KEY)
    body["reasoning"] = {"effort": "medium", "summary": "auto"}
    body["input"] = [*body["input"], *reply["output"], output("call_a1")]
    translation = read(body)
    out = translation.body
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert out["messages"][1] == {
        "role": "assistant",
        "content": [
            THINKING,
            REDACTED,
            {"type": "tool_use", "id": "call_a1", "name": "exec_command", "input": {"cmd": "ls"}},
        ],
    }
    assert out["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "call_a1", "content": "a.txt\nb.txt"}],
    }
    assert translation.restored_blocks == 2
    assert translation.skipped_reasoning == 0 and not translation.thinking_disabled


def tampered(value: str) -> str:
    at = value.index("I should")
    return value[:at] + "You should" + value[at + len("I should") :]


@pytest.mark.parametrize(
    "reasoning",
    [
        pytest.param(
            {
                **carrier_item([THINKING]),
                "encrypted_content": tampered(carrier_item([THINKING])["encrypted_content"]),
            },
            id="tampered-text",
        ),
        pytest.param(
            carrier_item([THINKING], key=b"another-key-0123456789abcdefghij"), id="other-key"
        ),
        pytest.param(
            {
                **carrier_item([THINKING]),
                "encrypted_content": carrier_item([THINKING])["encrypted_content"][:-4] + "AAA]]",
            },
            id="tampered-mac",
        ),
        pytest.param(
            {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAAABo-6wE"},
            id="openai-encrypted",
        ),
        pytest.param({"type": "reasoning", "id": "rs_3", "summary": []}, id="no-content"),
    ],
)
def test_reasoning_that_is_not_ours_is_skipped_never_forged(
    reasoning: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="hydra_proxy.continuation"):
        translation = read(codex_second_turn(reasoning))
    out = translation.body
    blocks = [b for m in out["messages"] for b in m["content"]]
    assert not [b for b in blocks if b["type"] in ("thinking", "redacted_thinking")]
    assert translation.skipped_reasoning == 1
    assert translation.thinking_disabled
    assert out["thinking"] == {"type": "disabled"}
    assert "reasoning item skipped" in caplog.text
    assert "I should" not in caplog.text  # lengths and reasons only, never the text


def test_no_key_trusts_no_carrier() -> None:
    translation = read(codex_second_turn(carrier_item([THINKING])), MessagesTarget(model=MODEL))
    assert translation.skipped_reasoning == 1 and translation.thinking_disabled


def test_carrier_prefix_is_versioned() -> None:
    assert carrier_item([THINKING])["encrypted_content"].startswith(CARRIER_PREFIX)
    assert CARRIER_PREFIX == "hydra-reasoning:v1:"


def test_proxy_signed_provider_reasoning_is_restored_as_signed() -> None:
    # DeepSeek-style reasoning the Chat decoder signed (hydra1.): restored verbatim, for the
    # Chat writer to replay as reasoning_content.
    from hydra_proxy.signature import sign_thinking

    block = {
        "type": "thinking",
        "thinking": "Need ls.",
        "signature": sign_thinking("Need ls.", KEY),
    }
    translation = read(codex_second_turn(carrier_item([block])))
    assert translation.body["messages"][1]["content"][0] == block


# ------------------------------------------------------------------- recorded requests


RECORDINGS = request_recordings()


@pytest.mark.parametrize("name", [n for n in RECORDINGS if "http400" not in n])
def test_recorded_requests_read(name: str) -> None:
    body = RECORDINGS[name]
    translation = read(body)
    out = translation.body
    assert out["stream"] is bool(body.get("stream"))
    tools = [t for t in body.get("tools") or [] if t["type"] == "function"]
    assert [t["name"] for t in out.get("tools", [])] == [t["name"] for t in tools]
    hosted = [t["type"] for t in body.get("tools") or [] if t["type"] != "function"]
    assert translation.dropped_tools == hosted
    if isinstance(body["input"], str):
        assert out["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": body["input"]}]}
        ]
    calls = [i for i in body["input"] if isinstance(i, dict) and i.get("type") == "function_call"]
    uses = [b for m in out["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert [(u["id"], u["name"]) for u in uses] == [(c["call_id"], c["name"]) for c in calls]
    if body.get("instructions"):
        assert out["system"] == body["instructions"]
    if body.get("max_output_tokens"):
        assert out["max_tokens"] == body["max_output_tokens"]


def test_recorded_openai_reasoning_replay_is_skipped() -> None:
    body = RECORDINGS["pydantic-gpt5-reasoning-function-call-replay.2.request.json"]
    translation = read(body)
    assert translation.skipped_reasoning == 1
    assert "thinking" not in translation.body  # thinking was not asked for
    with_effort = read({**body, "reasoning": {"effort": "low"}})
    assert with_effort.thinking_disabled
    assert with_effort.body["thinking"] == {"type": "disabled"}


def test_recorded_invalid_temperature_is_refused_like_openai() -> None:
    # OpenAI answered this recorded request with a 400 naming `temperature`.
    with pytest.raises(ProxyError) as caught:
        messages_request_from_responses(
            RECORDINGS["pydantic-http400-invalid-temperature.request.json"], TARGET
        )
    assert caught.value.status == 400 and caught.value.param == "temperature"


def test_parallel_outputs_form_one_user_turn() -> None:
    body = RECORDINGS["pydantic-gpt4o-parallel-function-calls.2.request.json"]
    out = read(body).body
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]
    assert [b["type"] for b in out["messages"][2]["content"]] == ["tool_result", "tool_result"]
    assert [b["tool_use_id"] for b in out["messages"][2]["content"]] == [
        b["id"] for b in out["messages"][1]["content"]
    ]


# --------------------------------------------------------------------------- mapping


def base(**extra: Any) -> dict[str, Any]:
    return {"model": "gpt-5", "input": [user("hi")], **extra}


MAPPING: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "string input",
        {"model": "m", "input": "hello"},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]},
    ),
    (
        "easy message",
        {"model": "m", "input": [{"role": "user", "content": "hey"}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "hey"}]}]},
    ),
    (
        "instructions then developer",
        base(
            instructions="Be brief.",
            input=[{"role": "developer", "content": "Use tools."}, user("hi")],
        ),
        {"system": "Be brief.\n\nUse tools."},
    ),
    ("max_output_tokens", base(max_output_tokens=100), {"max_tokens": 100}),
    ("temperature clamped", base(temperature=1.5), {"temperature": 1.0}),
    (
        "temperature and top_p: default temperature dropped",
        base(temperature=1, top_p=0.5),
        {"top_p": 0.5},
    ),
    (
        "effort low",
        base(reasoning={"effort": "low"}),
        {"thinking": {"type": "enabled", "budget_tokens": 2048}},
    ),
    ("effort minimal", base(reasoning={"effort": "minimal"}), {"thinking": {"type": "disabled"}}),
    (
        "effort high raises max_tokens",
        base(reasoning={"effort": "high"}, max_output_tokens=1000),
        {"thinking": {"type": "enabled", "budget_tokens": 16384}, "max_tokens": 17384},
    ),
    (
        "thinking drops temperature",
        base(reasoning={"effort": "low"}, temperature=0.2, top_p=0.5),
        {"top_p": 0.95},
    ),
    (
        "json_schema",
        base(
            text={
                "format": {
                    "type": "json_schema",
                    "name": "x",
                    "strict": True,
                    "schema": {"type": "object"},
                }
            }
        ),
        {"output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}},
    ),
    (
        "json_object",
        base(text={"format": {"type": "json_object"}}),
        {"system": JSON_OBJECT_INSTRUCTION},
    ),
    ("user", base(user="u-1"), {"metadata": {"user_id": "u-1"}}),
    ("safety_identifier", base(safety_identifier="s-1"), {"metadata": {"user_id": "s-1"}}),
    (
        "tool_choice required",
        base(tools=[{"type": "function", "name": "f"}], tool_choice="required"),
        {"tool_choice": {"type": "any"}},
    ),
    (
        "tool_choice function",
        base(
            tools=[{"type": "function", "name": "f"}], tool_choice={"type": "function", "name": "f"}
        ),
        {"tool_choice": {"type": "tool", "name": "f"}},
    ),
    (
        "tool_choice namespaced",
        base(
            tools=[
                {
                    "type": "namespace",
                    "name": "ns",
                    "description": "d",
                    "tools": [{"type": "function", "name": "f"}],
                }
            ],
            tool_choice={"type": "function", "name": "f", "namespace": "ns"},
        ),
        {"tool_choice": {"type": "tool", "name": "ns__f"}},
    ),
    (
        "tool_choice none",
        base(tools=[{"type": "function", "name": "f"}], tool_choice="none"),
        {"tool_choice": {"type": "none"}},
    ),
    (
        "parallel false",
        base(tools=[{"type": "function", "name": "f"}], parallel_tool_calls=False),
        {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
    ),
    (
        "allowed_tools",
        base(
            tools=[
                {"type": "function", "name": "f"},
                {"type": "function", "name": "g"},
                {"type": "web_search"},
            ],
            tool_choice={
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": "g"}, {"type": "web_search"}],
            },
        ),
        {
            "tools": [{"name": "g", "input_schema": {"type": "object", "properties": {}}}],
            "tool_choice": {"type": "any"},
        },
    ),
    (
        "parameters without type",
        base(
            tools=[
                {
                    "type": "function",
                    "name": "f",
                    "description": None,
                    "parameters": {"properties": {"a": {"type": "string"}}},
                }
            ]
        ),
        {
            "tools": [
                {
                    "name": "f",
                    "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}},
                }
            ]
        },
    ),
    (
        "leading assistant",
        {"model": "m", "input": [{"role": "assistant", "content": "Hi!"}, user("go")]},
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": LEADING_USER_PLACEHOLDER}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Hi!"}]},
                {"role": "user", "content": [{"type": "text", "text": "go"}]},
            ]
        },
    ),
    (
        "custom tool call and output",
        {
            "model": "m",
            "tools": [APPLY_PATCH],
            "input": [
                user("edit"),
                {
                    "type": "custom_tool_call",
                    "call_id": "call_p",
                    "name": "apply_patch",
                    "input": "*** Begin Patch",
                },
                {"type": "custom_tool_call_output", "call_id": "call_p", "output": "Done"},
            ],
        },
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "edit"}]},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "call_p",
                            "name": "apply_patch",
                            "input": {"input": "*** Begin Patch"},
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "call_p", "content": "Done"}
                    ],
                },
            ]
        },
    ),
    (
        "namespaced call in history",
        {
            "model": "m",
            "tools": [
                {
                    "type": "namespace",
                    "name": "ns",
                    "description": "d",
                    "tools": [{"type": "function", "name": "f"}],
                }
            ],
            "input": [
                user("x"),
                {**call("call_n", "f", "{}"), "namespace": "ns"},
                output("call_n", "ok"),
            ],
        },
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "x"}]},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "call_n", "name": "ns__f", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "call_n", "content": "ok"}],
                },
            ]
        },
    ),
    (
        "interleaved call/output pairs",
        {
            "model": "m",
            "input": [user("x"), call("c1"), output("c1", "1"), call("c2"), output("c2", "2")],
        },
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "x"}]},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "c1",
                            "name": "exec_command",
                            "input": {"cmd": "ls"},
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "1"}],
                },
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "c2",
                            "name": "exec_command",
                            "input": {"cmd": "ls"},
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "c2", "content": "2"}],
                },
            ]
        },
    ),
    (
        "output parts and user text after it",
        {
            "model": "m",
            "input": [
                user("x"),
                call("c1"),
                {"role": "user", "content": "also this"},
                output(
                    "c1",
                    [
                        {"type": "input_text", "text": "out"},
                        {"type": "input_image", "image_url": "https://example.com/a.png"},
                    ],
                ),
            ],
        },
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "x"}]},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "c1",
                            "name": "exec_command",
                            "input": {"cmd": "ls"},
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "c1",
                            "content": [
                                {"type": "text", "text": "out"},
                                {
                                    "type": "image",
                                    "source": {"type": "url", "url": "https://example.com/a.png"},
                                },
                            ],
                        },
                        {"type": "text", "text": "also this"},
                    ],
                },
            ]
        },
    ),
    (
        "file url",
        {
            "model": "m",
            "input": [
                {
                    "role": "user",
                    "content": [{"type": "input_file", "file_url": "https://example.com/a.pdf"}],
                }
            ],
        },
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "document",
                            "source": {"type": "url", "url": "https://example.com/a.pdf"},
                        }
                    ],
                }
            ]
        },
    ),
    (
        "hosted tool items skipped",
        {
            "model": "m",
            "input": [
                user("x"),
                {"type": "web_search_call", "id": "ws_1", "status": "completed"},
                {"role": "assistant", "content": [{"type": "output_text", "text": "Found it."}]},
                user("thanks"),
            ],
        },
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "x"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Found it."}]},
                {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
            ]
        },
    ),
    (
        "accepted and dropped",
        base(
            include=["reasoning.encrypted_content", "message.output_text.logprobs"],
            store=False,
            truncation="auto",
            service_tier="flex",
            previous_response_id=None,
            metadata={"k": "v"},
            prompt_cache_key="pk",
            client_metadata={"x": "y"},
            text={"verbosity": "low"},
            top_logprobs=0,
            unknown=1,
        ),
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
    ),
]


@pytest.mark.parametrize(("name", "body", "expected"), MAPPING, ids=[c[0] for c in MAPPING])
def test_mapping(name: str, body: dict[str, Any], expected: dict[str, Any]) -> None:
    out = read(body).body
    for key, value in expected.items():
        assert out[key] == value, key
    if name == "accepted and dropped":
        assert set(out) == {"model", "max_tokens", "messages", "stream", "cache_control"}


def test_context_echo() -> None:
    body = base(
        instructions="Be brief.",
        metadata={"k": "v"},
        tool_choice="auto",
        temperature=0.5,
        reasoning={"effort": "low", "summary": "detailed"},
        include=["reasoning.encrypted_content"],
    )
    context = read(body).context
    assert context == ResponsesContext(
        model="gpt-5",
        tool_names=context.tool_names,
        include_encrypted=True,
        summary=True,
        instructions="Be brief.",
        tools=[],
        tool_choice="auto",
        parallel_tool_calls=True,
        max_output_tokens=None,
        temperature=0.5,
        top_p=None,
        reasoning={"effort": "low", "summary": "detailed"},
        text={"format": {"type": "text"}},
        metadata={"k": "v"},
    )


def test_allowed_tools_namespace_entry() -> None:
    body = codex_first_turn()
    body["tool_choice"] = {
        "type": "allowed_tools",
        "mode": "auto",
        "tools": [{"type": "namespace", "name": "multi_agent_v1"}, {"type": "web_search"}],
    }
    names = [t["name"] for t in read(body).body["tools"]]
    assert names == [
        "multi_agent_v1__close_agent",
        "multi_agent_v1__resume_agent",
        "multi_agent_v1__send_input",
        "multi_agent_v1__spawn_agent",
        "multi_agent_v1__wait_agent",
    ]
    body["tool_choice"]["tools"] = [{"type": "namespace", "name": "nope"}]
    with pytest.raises(ProxyError) as caught:
        messages_request_from_responses(body, TARGET)
    assert caught.value.param == "tool_choice.tools[0].name"


def test_long_namespaced_names_are_shortened_and_restored() -> None:
    long_ns, long_name = "n" * 40, "f" * 40
    body = base(
        tools=[
            {
                "type": "namespace",
                "name": long_ns,
                "description": "d",
                "tools": [{"type": "function", "name": long_name}],
            },
            {"type": "function", "name": "a__b"},
            {
                "type": "namespace",
                "name": "a",
                "description": "d",
                "tools": [{"type": "function", "name": "b"}],
            },
        ]
    )
    translation = read(body)
    names = [t["name"] for t in translation.body["tools"]]
    assert all(len(n) <= 64 for n in names)
    assert len(set(names)) == 3
    assert names[1] == "a__b"  # the plain tool keeps its name, the flattened one gives way
    origins = [translation.context.tool_names.origin(n) for n in names]
    assert origins == [ToolOrigin(long_name, long_ns), ToolOrigin("a__b"), ToolOrigin("b", "a")]


# ------------------------------------------------------------------------ validation


def _with_input(*items: Any) -> dict[str, Any]:
    return {"model": "m", "input": list(items)}


VALIDATION: list[tuple[str, Any, str]] = [
    ("store true", base(store=True), "store"),
    ("previous_response_id", base(previous_response_id="resp_1"), "previous_response_id"),
    ("conversation", base(conversation="conv_1"), "conversation"),
    ("background", base(background=True), "background"),
    ("prompt", base(prompt={"id": "pmpt_1"}), "prompt"),
    (
        "item_reference",
        _with_input(user("x"), {"type": "item_reference", "id": "msg_1"}),
        "input[1].type",
    ),
    ("no input", {"model": "m"}, "input"),
    ("input number", {"model": "m", "input": 3}, "input"),
    ("empty input", {"model": "m", "input": []}, "input"),
    ("stream not bool", base(stream="yes"), "stream"),
    ("include not list", base(include="reasoning.encrypted_content"), "include"),
    ("include item", base(include=[1]), "include[0]"),
    ("instructions", base(instructions=["x"]), "instructions"),
    ("max_output_tokens", base(max_output_tokens=0), "max_output_tokens"),
    ("temperature", base(temperature=3), "temperature"),
    ("top_p", base(top_p=-0.1), "top_p"),
    ("top_logprobs", base(top_logprobs=3), "top_logprobs"),
    ("effort", base(reasoning={"effort": "huge"}), "reasoning.effort"),
    ("summary", base(reasoning={"summary": "long"}), "reasoning.summary"),
    ("text format", base(text={"format": {"type": "xml"}}), "text.format.type"),
    (
        "json schema",
        base(text={"format": {"type": "json_schema", "name": "x"}}),
        "text.format.schema",
    ),
    ("metadata value", base(metadata={"k": 1}), "metadata.k"),
    ("role", _with_input({"role": "tool", "content": "x"}), "input[0].role"),
    ("item type", _with_input({"content": "x"}), "input[0].type"),
    (
        "part type",
        _with_input({"role": "user", "content": [{"type": "input_audio"}]}),
        "input[0].content[0].type",
    ),
    (
        "developer image",
        _with_input(
            {
                "role": "developer",
                "content": [{"type": "input_image", "image_url": "https://e.com/a.png"}],
            }
        ),
        "input[0].content[0].type",
    ),
    (
        "image file_id",
        _with_input(
            {
                "role": "user",
                "content": [{"type": "input_image", "file_id": "file_1", "detail": "auto"}],
            }
        ),
        "input[0].content[0].file_id",
    ),
    (
        "image url scheme",
        _with_input(
            {"role": "user", "content": [{"type": "input_image", "image_url": "ftp://e.com/a.png"}]}
        ),
        "input[0].content[0].image_url",
    ),
    (
        "file_id",
        _with_input({"role": "user", "content": [{"type": "input_file", "file_id": "file_1"}]}),
        "input[0].content[0].file_id",
    ),
    (
        "call without call_id",
        _with_input(user("x"), {"type": "function_call", "name": "f", "arguments": "{}"}),
        "input[1].call_id",
    ),
    (
        "call without name",
        _with_input(user("x"), {"type": "function_call", "call_id": "c", "arguments": "{}"}),
        "input[1].name",
    ),
    ("bad arguments", _with_input(user("x"), call("c", "f", "{not json")), "input[1].arguments"),
    ("arguments not object", _with_input(user("x"), call("c", "f", "[1]")), "input[1].arguments"),
    (
        "custom input",
        _with_input(
            user("x"), {"type": "custom_tool_call", "call_id": "c", "name": "p", "input": {"a": 1}}
        ),
        "input[1].input",
    ),
    ("orphan output", _with_input(user("x"), output("c9")), "input[1].call_id"),
    (
        "answered twice",
        _with_input(user("x"), call("c"), output("c"), output("c")),
        "input[3].call_id",
    ),
    ("unanswered call", _with_input(user("x"), call("c")), "input[1].call_id"),
    (
        "unanswered before next turn",
        _with_input(
            user("x"),
            call("c1"),
            call("c2"),
            output("c1"),
            {"role": "assistant", "content": "done"},
        ),
        "input[2].call_id",
    ),
    ("duplicate call id", _with_input(user("x"), call("c"), call("c")), "input[2].call_id"),
    ("output type", _with_input(user("x"), call("c"), output("c", 3)), "input[2].output"),
    (
        "reasoning content type",
        _with_input(
            user("x"), {"type": "reasoning", "id": "rs", "summary": [], "encrypted_content": 5}
        ),
        "input[1].encrypted_content",
    ),
    ("tools not list", base(tools={}), "tools"),
    ("tool name", base(tools=[{"type": "function", "name": "a b"}]), "tools[0].name"),
    (
        "duplicate tool",
        base(tools=[{"type": "function", "name": "f"}, {"type": "function", "name": "f"}]),
        "tools[1].name",
    ),
    (
        "tool parameters type",
        base(tools=[{"type": "function", "name": "f", "parameters": {"type": "array"}}]),
        "tools[0].parameters.type",
    ),
    (
        "namespace tools",
        base(tools=[{"type": "namespace", "name": "ns", "description": "d"}]),
        "tools[0].tools",
    ),
    (
        "namespace inner type",
        base(
            tools=[
                {
                    "type": "namespace",
                    "name": "ns",
                    "description": "d",
                    "tools": [{"type": "web_search"}],
                }
            ]
        ),
        "tools[0].tools[0].type",
    ),
    (
        "custom format",
        base(
            tools=[
                {
                    "type": "custom",
                    "name": "p",
                    "format": {"type": "grammar", "syntax": "ebnf", "definition": "x"},
                }
            ]
        ),
        "tools[0].format.syntax",
    ),
    (
        "tool_choice unknown tool",
        base(
            tools=[{"type": "function", "name": "f"}], tool_choice={"type": "function", "name": "g"}
        ),
        "tool_choice.name",
    ),
    (
        "tool_choice hosted",
        base(tools=[{"type": "web_search"}], tool_choice={"type": "web_search_preview"}),
        "tool_choice.type",
    ),
    ("tool_choice string", base(tool_choice="any"), "tool_choice"),
    ("tool_choice required without tools", base(tool_choice="required"), "tool_choice"),
    (
        "allowed mode",
        base(
            tools=[{"type": "function", "name": "f"}],
            tool_choice={"type": "allowed_tools", "mode": "sometimes", "tools": []},
        ),
        "tool_choice.mode",
    ),
    ("parallel not bool", base(parallel_tool_calls="no"), "parallel_tool_calls"),
    ("only blank input", {"model": "m", "input": "   "}, "input"),
]


@pytest.mark.parametrize(("name", "body", "param"), VALIDATION, ids=[c[0] for c in VALIDATION])
def test_validation(name: str, body: Any, param: str) -> None:
    with pytest.raises(ProxyError) as caught:
        messages_request_from_responses(body, TARGET)
    error = caught.value
    assert error.status == 400
    assert error.error_type == "invalid_request_error"
    assert error.param == param
    assert error.message.startswith(f"{param}: ")
    payload = error.openai_body()
    assert b'"type":"invalid_request_error"' in payload
    assert f'"param":"{param}"'.encode() in payload


def test_not_an_object() -> None:
    with pytest.raises(ProxyError) as caught:
        messages_request_from_responses([], TARGET)
    assert caught.value.status == 400


def test_custom_tool_loop_round_trip() -> None:
    # apply_patch: the model's call reaches Codex as a custom_tool_call with the raw input,
    # Codex replays it with its output, and the upstream sees its own call again.
    body = codex_first_turn()
    body["tools"] = [*body["tools"], APPLY_PATCH]
    context = messages_request_from_responses(body, TARGET).context
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    use = {"type": "tool_use", "id": "toolu_01P", "name": "apply_patch", "input": {"input": patch}}
    reply = response_from_message(
        {"content": [use], "stop_reason": "tool_use", "usage": {}},
        context,
        response_id="resp_2",
        created_at=1,
        key=KEY,
    )
    (item,) = reply["output"]
    assert (item["type"], item["call_id"], item["input"]) == (
        "custom_tool_call",
        "toolu_01P",
        patch,
    )
    body["input"] = [
        *body["input"],
        {k: v for k, v in item.items() if k != "id"},  # Codex does not send item ids back
        {"type": "custom_tool_call_output", "call_id": "toolu_01P", "output": "Success."},
    ]
    out = read(body).body
    assert out["messages"][-2] == {"role": "assistant", "content": [use]}
    assert out["messages"][-1] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01P", "content": "Success."}],
    }


def test_prompt_cache_key_turns_on_anthropic_caching() -> None:
    assert read(base(prompt_cache_key="s1")).body["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in read(base()).body
    assert "cache_control" not in read(base(prompt_cache_key="")).body


def test_codex_on_a_chat_upstream_replays_provider_reasoning() -> None:
    # Codex on DeepSeek: the reasoning the Chat decoder signed comes back in the carrier and
    # reaches the upstream as reasoning_content; the carrier itself never does.
    import orjson

    from hydra_proxy.chat.request.writer import ChatTarget, chat_request_from_messages
    from hydra_proxy.signature import sign_thinking

    block = {
        "type": "thinking",
        "thinking": "Need ls.",
        "signature": sign_thinking("Need ls.", KEY),
    }
    canonical = read(codex_second_turn(carrier_item([block]))).body
    assert canonical["thinking"]["type"] == "enabled"
    target = ChatTarget(model="deepseek-reasoner", replay_reasoning=True, signing_key=KEY)
    chat = chat_request_from_messages(canonical, target, stream=True)
    assistant = next(m for m in chat["messages"] if m["role"] == "assistant")
    assert assistant["reasoning_content"] == "Need ls."
    assert assistant["tool_calls"][0]["id"] == "call_a1"
    tool = next(m for m in chat["messages"] if m["role"] == "tool")
    assert (tool["tool_call_id"], tool["content"]) == ("call_a1", "a.txt\nb.txt")
    wire = orjson.dumps(chat).decode()
    assert CARRIER_PREFIX not in wire and "hydra1." not in wire
    # The same turn to a provider that does not replay reasoning: nothing of it is sent.
    plain = chat_request_from_messages(
        canonical, ChatTarget(model="m", signing_key=KEY), stream=True
    )
    assert "Need ls." not in orjson.dumps(plain).decode()
