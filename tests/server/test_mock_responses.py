"""The mock upstream's OpenAI Responses dialect (``POST /v1/responses``), read by the
openai SDK: scripted turns streamed and not, and every recorded Responses stream and
response object in tests/fixtures/responses/ replayed."""

from __future__ import annotations

import http.client
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.mock.script import canned_reply

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RESPONSES = FIXTURES / "responses"
KEY = "sk-test-responses-SECRET-789"

SCRIPTED: dict[str, Any] = {
    "reasoning": "Two cities — Zürich & 東京; I call the tool twice.",
    "signature": "Z0FBQUFBQm9-encrypted-for-tests==",
    "redacted_thinking": ["gAAAAB-redacted-blob-1"],
    "text": "Checking both cities.",
    "tool_calls": [
        {"id": "call_a1", "name": "get_weather", "arguments": {"city": "Zürich", "unit": "c"}},
        {"id": "call_b2", "name": "get_time", "arguments": '{"tz": "Asia/Tokyo", "n": [1, 2]}'},
    ],
    "usage": {"prompt_tokens": 120, "completion_tokens": 45, "cached_tokens": 100},
    "chunk_size": 3,
}
ARGUMENTS = ['{"city":"Zürich","unit":"c"}', '{"tz": "Asia/Tokyo", "n": [1, 2]}']
STREAMS = sorted(p.name for p in RESPONSES.iterdir() if p.suffix in (".sse", ".jsonl"))


def _response_recordings() -> list[str]:
    names = []
    for path in sorted(RESPONSES.glob("*.json")):
        if path.name.endswith(".request.json"):
            continue
        doc = orjson.loads(path.read_bytes())
        body = doc.get("body", doc) if isinstance(doc, dict) else doc
        if isinstance(body, dict) and body.get("object") == "response":
            names.append(path.name)
    return names


RESPONSE_OBJECTS = _response_recordings()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer(fixtures=FIXTURES) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


@pytest.fixture
def client(mock: MockServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=mock.url + "/v1", api_key=KEY, max_retries=0)


def post(mock: MockServer, body: dict[str, Any], headers: dict[str, str] | None = None) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
    try:
        conn.request(
            "POST",
            "/v1/responses",
            body=orjson.dumps(body),
            headers={"content-type": "application/json", **(headers or {})},
        )
        resp = conn.getresponse()
        assert resp.status == 200
        assert resp.getheader("content-type", "").startswith("text/event-stream")
        return resp.read()
    finally:
        conn.close()


def events_of(body: bytes) -> list[dict[str, Any]]:
    """The stream's events; checks each ``event:`` line names its data's ``type``."""
    out = []
    for block in body.decode().split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        data = json.loads(lines["data"])
        assert lines["event"] == data["type"]
        out.append(data)
    return out


def recorded_events(name: str) -> list[dict[str, Any]]:
    raw = (RESPONSES / name).read_text(encoding="utf-8")
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in raw.splitlines() if line.strip()]
    return [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]


def check_item(built: Any, recorded: dict[str, Any]) -> None:
    """An output item the SDK rebuilt against the recorded finished item."""
    assert built.type == recorded["type"]
    assert built.id == recorded["id"]
    if recorded["type"] == "message":
        assert [c.text for c in built.content] == [c["text"] for c in recorded["content"]]
    elif recorded["type"] == "function_call":
        assert (built.call_id, built.name, built.arguments) == (
            recorded["call_id"],
            recorded["name"],
            recorded["arguments"],
        )
    elif recorded["type"] == "reasoning":
        assert built.encrypted_content == recorded.get("encrypted_content")
        assert [s.text for s in built.summary] == [s["text"] for s in recorded["summary"]]


# -- scripted turns ------------------------------------------------------------------------


def check_scripted(response: Any) -> None:
    assert response.status == "completed"
    assert [o.type for o in response.output] == [
        "reasoning",
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    reasoning, redacted, message, call1, call2 = response.output
    assert [s.text for s in reasoning.summary] == [SCRIPTED["reasoning"]]
    assert reasoning.encrypted_content == SCRIPTED["signature"]
    assert redacted.summary == [] and redacted.encrypted_content == "gAAAAB-redacted-blob-1"
    assert response.output_text == SCRIPTED["text"]
    assert message.role == "assistant" and message.status == "completed"
    assert [(c.call_id, c.name, c.arguments) for c in (call1, call2)] == [
        ("call_a1", "get_weather", ARGUMENTS[0]),
        ("call_b2", "get_time", ARGUMENTS[1]),
    ]
    assert len({o.id for o in response.output}) == 5
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (120, 45, 165)
    assert usage.input_tokens_details.cached_tokens == 100
    # about 4 characters a token, as the mock estimates
    assert usage.output_tokens_details.reasoning_tokens == math.ceil(len(SCRIPTED["reasoning"]) / 4)


def test_scripted_turn_streamed(mock: MockServer, client: openai.OpenAI) -> None:
    mock.script([SCRIPTED])
    with client.responses.stream(model="gpt-5.1-codex", input="weather?") as stream:
        events = list(stream)
        final = stream.get_final_response()
    check_scripted(final)
    assert final.model == "gpt-5.1-codex" and final.id.startswith("resp_")
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    summary = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    args = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert text == SCRIPTED["text"] and summary == SCRIPTED["reasoning"]
    assert "".join(args) == "".join(ARGUMENTS) and max(len(a) for a in args) == 3


def test_scripted_turn_not_streamed(mock: MockServer, client: openai.OpenAI) -> None:
    mock.script([SCRIPTED])
    response = client.responses.create(model="gpt-5", input="weather?")
    check_scripted(response)
    assert mock.requests()[-1]["headers"]["authorization"] == "<redacted>"


def test_stream_grammar(mock: MockServer) -> None:
    """sequence_number counts every event; each item is opened and closed at its
    output_index; deltas name the item they belong to."""
    turn = json.dumps(SCRIPTED)
    events = events_of(
        post(mock, {"model": "m", "input": "x", "stream": True}, {"x-mock-turn": turn})
    )
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    assert (
        events[0]["response"]["status"] == "in_progress" and events[0]["response"]["output"] == []
    )
    assert events[-1]["type"] == "response.completed"
    open_items: dict[int, str] = {}
    done: list[int] = []
    for e in events[2:-1]:
        if e["type"] == "response.output_item.added":
            assert e["output_index"] == len(done) and not open_items
            open_items[e["output_index"]] = e["item"]["id"]
        elif e["type"] == "response.output_item.done":
            assert open_items.pop(e["output_index"]) == e["item"]["id"]
            done.append(e["output_index"])
        else:
            assert open_items == {e["output_index"]: e["item_id"]}, e
            if e["type"].startswith(("response.output_text", "response.content_part")):
                assert e["content_index"] == 0
            if e["type"].startswith("response.reasoning_summary"):
                assert e["summary_index"] == 0
    assert done == [0, 1, 2, 3, 4]
    assert events[-1]["response"]["output"] == [
        e["item"] for e in events if e["type"] == "response.output_item.done"
    ]


def test_canned_reply(mock: MockServer, client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input="hi")
    assert response.output_text == canned_reply(16, 8).text
    with client.responses.stream(model="gpt-4o", input="hi") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
    assert len(deltas) == 16 and "".join(deltas) == response.output_text


def test_incomplete_on_token_limit(mock: MockServer, client: openai.OpenAI) -> None:
    mock.script([{"text": "cut short", "finish_reason": "length"}] * 2)
    with client.responses.stream(model="m", input="x") as stream:
        last = list(stream)[-1]  # get_final_response() wants response.completed
    assert last.type == "response.incomplete"
    final = last.response
    assert final.status == "incomplete" and final.output_text == "cut short"
    assert final.incomplete_details is not None
    assert final.incomplete_details.reason == "max_output_tokens"
    complete = client.responses.create(model="m", input="x")
    assert complete.status == "incomplete"


def test_stream_error_is_response_failed(mock: MockServer, client: openai.OpenAI) -> None:
    mock.script(
        [{"text": "partial", "stream_error": {"type": "overloaded_error", "message": "busy"}}]
    )
    events = list(client.responses.create(model="m", input="x", stream=True))
    assert events[-1].type == "response.failed"
    failed = events[-1].response
    assert failed.status == "failed"
    assert failed.error is not None
    assert (failed.error.code, failed.error.message) == ("server_error", "busy")
    assert "response.completed" not in [e.type for e in events]


def test_http_error_turn(mock: MockServer, client: openai.OpenAI) -> None:
    error = {"status": 429, "type": "rate_limit_error", "message": "slow", "retry_after": "3"}
    mock.script([{"error": error}])
    with pytest.raises(openai.RateLimitError) as info:
        client.responses.create(model="m", input="x", stream=True)
    assert info.value.response.headers["retry-after"] == "3"
    assert info.value.body == {
        "message": "slow",
        "type": "rate_limit_error",
        "param": None,
        "code": None,
    }


def test_error_rate_answers_503(mock: MockServer, client: openai.OpenAI) -> None:
    with pytest.raises(openai.InternalServerError) as info:
        client.responses.create(model="m", input="x", extra_headers={"x-mock-error-rate": "1"})
    assert info.value.status_code == 503


# -- replayed recordings -------------------------------------------------------------------


@pytest.mark.parametrize("name", STREAMS)
def test_replayed_stream_rebuilt_by_the_sdk(
    mock: MockServer, client: openai.OpenAI, name: str
) -> None:
    """The SDK reads every recorded stream replayed by the mock: the events it yields are
    the recorded ones, and each response it rebuilds from the deltas is the recorded
    ``response.completed`` one (a multi-step recording holds several responses)."""
    recorded = recorded_events(name)
    header = {"x-mock-replay": f"responses/{name}"}
    events = list(client.responses.create(model="m", input="x", stream=True, extra_headers=header))
    assert [e.type for e in events] == [e["type"] for e in recorded]
    completed = [e["response"] for e in recorded if e["type"] == "response.completed"]
    assert len(completed) == sum(e["type"] == "response.created" for e in recorded) >= 1
    if len(completed) == 1:
        with client.responses.stream(model="m", input="x", extra_headers=header) as stream:
            final = stream.get_final_response()
        assert final.id == completed[0]["id"]
        assert len(final.output) == len(completed[0]["output"])
        for built, item in zip(final.output, completed[0]["output"], strict=True):
            check_item(built, item)
        assert final.usage is not None
        assert final.usage.output_tokens == completed[0]["usage"]["output_tokens"]
    # the text deltas of each response add up to its finished message text
    start = 0
    for response in completed:
        end = next(i for i, e in enumerate(events) if i >= start and e.type == "response.completed")
        text = "".join(e.delta for e in events[start:end] if e.type == "response.output_text.delta")
        messages = [o for o in response["output"] if o["type"] == "message"]
        assert text == "".join(c["text"] for m in messages for c in m["content"])
        start = end + 1


@pytest.mark.parametrize("name", RESPONSE_OBJECTS)
def test_replayed_response_object_read_by_the_sdk(
    mock: MockServer, client: openai.OpenAI, name: str
) -> None:
    doc = orjson.loads((RESPONSES / name).read_bytes())
    body = doc.get("body", doc)
    response = client.responses.create(
        model="m", input="x", extra_headers={"x-mock-replay": f"responses/{name}"}
    )
    assert response.id == body["id"] and response.status == body["status"]
    assert len(response.output) == len(body["output"])
    for built, item in zip(response.output, body["output"], strict=True):
        check_item(built, item)


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("dd-http401-invalid-api-key.response.json", openai.AuthenticationError),
        ("pydantic-http400-invalid-temperature.response.json", openai.BadRequestError),
    ],
)
def test_replayed_http_error(
    mock: MockServer, client: openai.OpenAI, name: str, error: type[openai.APIStatusError]
) -> None:
    recorded = orjson.loads((RESPONSES / name).read_bytes())
    with pytest.raises(error) as info:
        client.responses.create(
            model="m", input="x", stream=True, extra_headers={"x-mock-replay": name}
        )
    assert info.value.status_code == recorded["status"]
    assert info.value.body == recorded["body"]["error"]


def test_cut_stream_ends_after_the_content(mock: MockServer) -> None:
    turn = json.dumps({"text": "unfinished", "cut": True})
    events = events_of(
        post(mock, {"model": "m", "input": "x", "stream": True}, {"x-mock-turn": turn})
    )
    assert events[-1]["type"] == "response.output_item.done"
    assert not any(e["type"].startswith(("response.completed", "response.failed")) for e in events)


def test_get_is_refused_in_openai_shape(mock: MockServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
    try:
        conn.request("GET", "/v1/responses")
        resp = conn.getresponse()
        assert resp.status == 405 and resp.getheader("allow") == "POST"
        assert orjson.loads(resp.read())["error"]["type"] == "invalid_request_error"
    finally:
        conn.close()
