"""The mock upstream's Gemini dialect (``generateContent`` / ``streamGenerateContent``):
scripted turns on the wire and through the google-genai SDK, errors in Google's shape, and
every Gemini recording in tests/fixtures/gemini/ replayed."""

from __future__ import annotations

import base64
import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.mock.script import canned_reply

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GEMINI = FIXTURES / "gemini"
KEY = "AIza-test-gemini-SECRET-321"
MODEL = "gemini-3-pro-preview"
STREAM_PATH = f"/v1beta/models/{MODEL}:streamGenerateContent"
COMPLETE_PATH = f"/v1beta/models/{MODEL}:generateContent"
BODY = {"contents": [{"role": "user", "parts": [{"text": "weather?"}]}]}

ARGS = {"city": "Zürich", "days": [1, 2], "detail": {"unit": "c", "hourly": True, "x": None}}
SCRIPTED: dict[str, Any] = {
    "reasoning": "Two cities — Zürich & 東京; one call.",
    "text": "Checking.",
    "tool_calls": [
        {"name": "get_weather", "arguments": ARGS},
        {"name": "get_time", "arguments": {"tz": "Asia/Tokyo"}},
    ],
    "signature": "CiMBjz1rX25KieIB4d4AwFn8/WbsHTRNHBXso88PtemwfsSfRAp6AY89",
    "usage": {"prompt_tokens": 120, "completion_tokens": 45, "cached_tokens": 100},
    "chunk_size": 4,
}
STREAMS = sorted(p.name for p in GEMINI.iterdir() if p.suffix in (".sse", ".jsonl"))
COMPLETES = sorted(
    p.name for p in GEMINI.glob("vercel-google-*.json") if "candidates" in p.read_text()
)


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer(fixtures=FIXTURES) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def post(
    mock: MockServer,
    path: str,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
    try:
        conn.request(
            "POST",
            path,
            body=orjson.dumps(BODY if body is None else body),
            headers={"content-type": "application/json", "x-goog-api-key": KEY, **(headers or {})},
        )
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def sse_chunks(body: bytes) -> list[dict[str, Any]]:
    """The JSON payloads of an SSE body, checking Google's CRLF event framing."""
    assert body.endswith(b"\r\n\r\n")
    events = [e for e in body.split(b"\r\n\r\n") if e]
    assert all(e.startswith(b"data: ") and b"\n" not in e for e in events)
    return [orjson.loads(e[6:]) for e in events]


def stream(mock: MockServer, turn: dict[str, Any]) -> list[dict[str, Any]]:
    status, headers, body = post(
        mock, STREAM_PATH + "?alt=sse", headers={"x-mock-turn": json.dumps(turn)}
    )
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    return sse_chunks(body)


def parts_of(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]


def set_path(target: dict[str, Any], path: str, value: Any) -> None:
    """Assign ``value`` at a ``$.a.b[0]`` jsonPath, creating objects and lists."""
    keys: list[str | int] = [
        int(m[1]) if m[1] else m[2] for m in re.finditer(r"\[(\d+)\]|\.([^.\[]+)", path)
    ]
    node: Any = target
    for key, following in zip(keys, [*keys[1:], None], strict=True):
        if following is None:
            if isinstance(node, list):
                node.extend([None] * (int(key) + 1 - len(node)))
            node[key] = value
            return
        empty: Any = [] if isinstance(following, int) else {}
        if isinstance(node, list):
            assert isinstance(key, int)
            node.extend([None] * (key + 1 - len(node)))
            if node[key] is None:
                node[key] = empty
        else:
            node.setdefault(key, empty)
        node = node[key]


def assembled_calls(parts: list[dict[str, Any]]) -> list[tuple[str, Any, str | None]]:
    """``(name, args, thoughtSignature)`` of every call, whole or streamed in pieces."""
    calls: list[tuple[str, Any, str | None]] = []
    current: dict[str, Any] | None = None
    strings: dict[str, str] = {}
    for part in parts:
        fc = part.get("functionCall")
        if fc is None:
            continue
        if "args" in fc:
            calls.append((fc["name"], fc["args"], part.get("thoughtSignature")))
        elif "name" in fc:
            assert fc["willContinue"] is True and current is None
            current = {"name": fc["name"], "args": {}, "sig": part.get("thoughtSignature")}
            strings = {}
        elif fc.get("partialArgs"):
            assert current is not None and fc["willContinue"] is True
            for arg in fc["partialArgs"]:
                path = arg["jsonPath"]
                if "stringValue" in arg:
                    strings[path] = strings.get(path, "") + arg["stringValue"]
                    value: Any = strings[path]
                else:
                    value = next(
                        arg[k] for k in ("numberValue", "boolValue", "nullValue") if k in arg
                    )
                set_path(current["args"], path, value)
        elif fc == {}:
            assert current is not None
            calls.append((current["name"], current["args"], current["sig"]))
            current = None
    assert current is None, "a call was not closed by an empty functionCall"
    return calls


# -- scripted turns on the wire ------------------------------------------------------------


def check_usage(usage: dict[str, Any]) -> None:
    assert usage["promptTokenCount"] == 120
    assert usage["cachedContentTokenCount"] == 100
    thoughts = usage["thoughtsTokenCount"]
    assert thoughts > 0 and usage["candidatesTokenCount"] == 45 - thoughts
    assert usage["totalTokenCount"] == 165


def test_scripted_stream(mock: MockServer) -> None:
    chunks = stream(mock, SCRIPTED)
    assert {c["modelVersion"] for c in chunks} == {MODEL}
    assert len({c["responseId"] for c in chunks}) == 1
    parts = parts_of(chunks)
    thoughts = [p["text"] for p in parts if p.get("thought") is True]
    texts = [p["text"] for p in parts if "text" in p and not p.get("thought")]
    assert "".join(thoughts) == SCRIPTED["reasoning"] and max(map(len, thoughts)) == 4
    assert "".join(texts) == SCRIPTED["text"]
    assert assembled_calls(parts) == [
        ("get_weather", ARGS, SCRIPTED["signature"]),  # the first call carries it
        ("get_time", {"tz": "Asia/Tokyo"}, None),
    ]
    assert sum("thoughtSignature" in p for p in parts) == 1
    assert all(c["candidates"][0]["content"]["role"] == "model" for c in chunks)
    assert [c["candidates"][0].get("finishReason") for c in chunks][-2:] == [None, "STOP"]
    assert ["usageMetadata" in c for c in chunks].count(True) == 1
    check_usage(chunks[-1]["usageMetadata"])


def test_scripted_stream_with_partial_args(mock: MockServer) -> None:
    chunks = stream(mock, {**SCRIPTED, "partial_args": True})
    parts = parts_of(chunks)
    assert assembled_calls(parts) == [
        ("get_weather", ARGS, SCRIPTED["signature"]),
        ("get_time", {"tz": "Asia/Tokyo"}, None),
    ]
    first = next(p for p in parts if "functionCall" in p)
    assert first == {
        "functionCall": {"name": "get_weather", "willContinue": True},
        "thoughtSignature": SCRIPTED["signature"],
    }
    pieces = [
        a["stringValue"]
        for p in parts
        for a in p.get("functionCall", {}).get("partialArgs", [])
        if a["jsonPath"] == "$.city"
    ]
    assert pieces == ["Züri", "ch", ""]  # strings in pieces, each closed by an empty one
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_scripted_complete(mock: MockServer) -> None:
    status, _, body = post(mock, COMPLETE_PATH, headers={"x-mock-turn": json.dumps(SCRIPTED)})
    assert status == 200
    doc = orjson.loads(body)
    candidate = doc["candidates"][0]
    assert candidate["finishReason"] == "STOP" and candidate["content"]["role"] == "model"
    assert candidate["content"]["parts"] == [
        {"text": SCRIPTED["reasoning"], "thought": True},
        {"text": SCRIPTED["text"]},
        {
            "functionCall": {"name": "get_weather", "args": ARGS},
            "thoughtSignature": SCRIPTED["signature"],
        },
        {"functionCall": {"name": "get_time", "args": {"tz": "Asia/Tokyo"}}},
    ]
    assert doc["modelVersion"] == MODEL
    check_usage(doc["usageMetadata"])


def test_text_turn_signature_on_the_text_part(mock: MockServer) -> None:
    parts = parts_of(stream(mock, {"reasoning": "hm", "text": "answer", "chunk_size": 3}))
    signed = [p for p in parts if "thoughtSignature" in p]
    assert len(signed) == 1 and signed[0]["text"] == "ans" and not signed[0].get("thought")
    base64.b64decode(signed[0]["thoughtSignature"], validate=True)  # standard base64
    plain = parts_of(stream(mock, {"text": "no reasoning"}))
    assert not any("thoughtSignature" in p for p in plain)


def test_stream_without_alt_sse_is_a_json_array(mock: MockServer) -> None:
    header = {"x-mock-turn": json.dumps(SCRIPTED)}
    status, headers, body = post(mock, STREAM_PATH, headers=header)
    assert status == 200 and headers["content-type"] == "application/json"
    array = orjson.loads(body)
    sse = stream(mock, SCRIPTED)
    for chunk in [*array, *sse]:
        assert chunk.pop("responseId").startswith("mock")  # one id per request
    assert array == sse


@pytest.mark.parametrize(
    ("finish", "expected"),
    [("length", "MAX_TOKENS"), ("content_filter", "SAFETY"), ("MALFORMED_FUNCTION_CALL", None)],
)
def test_finish_reasons(mock: MockServer, finish: str, expected: str | None) -> None:
    chunks = stream(mock, {"text": "x", "finish_reason": finish})
    assert chunks[-1]["candidates"][0]["finishReason"] == (expected or finish)


def test_canned_reply(mock: MockServer) -> None:
    status, _, body = post(mock, "/v1/models/gemini-2.5-flash:generateContent")
    assert status == 200
    doc = orjson.loads(body)
    assert doc["candidates"][0]["content"]["parts"] == [{"text": canned_reply(16, 8).text}]
    assert doc["modelVersion"] == "gemini-2.5-flash"
    _, _, body = post(mock, "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
    texts = [p.get("text", "") for p in parts_of(sse_chunks(body))]
    assert "".join(texts) == canned_reply(16, 8).text


def test_the_key_is_redacted(mock: MockServer) -> None:
    post(mock, COMPLETE_PATH + "?key=AIza-in-the-query&x=1")
    recorded = mock.requests()[-1]
    assert recorded["headers"]["x-goog-api-key"] == "<redacted>"
    assert recorded["query"] == "key=<redacted>&x=1"
    assert recorded["body"] == BODY
    assert "AIza" not in json.dumps(mock.requests())


# -- errors --------------------------------------------------------------------------------


def test_http_error_with_retry_info(mock: MockServer) -> None:
    turn = {"error": {"status": 429, "message": "quota exceeded", "retry_after": "34.4"}}
    status, _, body = post(
        mock, STREAM_PATH + "?alt=sse", headers={"x-mock-turn": json.dumps(turn)}
    )
    assert status == 429
    recorded = orjson.loads((GEMINI / "vercel-google-429-retry-info.json").read_bytes())
    error = orjson.loads(body)["error"]
    assert (error["code"], error["status"]) == (429, recorded["error"]["status"])
    retry = [d for d in error["details"] if d["@type"].endswith("google.rpc.RetryInfo")]
    assert retry == [d for d in recorded["error"]["details"] if "retryDelay" in d]


def test_stream_error_ends_the_stream(mock: MockServer) -> None:
    chunks = stream(mock, {"text": "part", "stream_error": {"type": "overloaded_error"}})
    assert chunks[-1] == {"error": {"code": 503, "message": "Overloaded", "status": "UNAVAILABLE"}}
    assert "".join(p.get("text", "") for p in parts_of(chunks[:-1])) == "part"
    assert "finishReason" not in json.dumps(chunks)


def test_unknown_method_is_a_google_404(mock: MockServer) -> None:
    status, _, body = post(mock, f"/v1beta/models/{MODEL}:countTokenz")
    assert status == 404
    assert orjson.loads(body)["error"]["status"] == "NOT_FOUND"


# -- replayed recordings -------------------------------------------------------------------


def recorded_chunks(name: str) -> list[dict[str, Any]]:
    raw = (GEMINI / name).read_text(encoding="utf-8")
    if name.endswith(".sse"):
        return [orjson.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]
    return [orjson.loads(line) for line in raw.splitlines() if line.strip()]


@pytest.mark.parametrize("name", STREAMS)
def test_replayed_stream(mock: MockServer, name: str) -> None:
    status, _, body = post(mock, STREAM_PATH + "?alt=sse", headers={"x-mock-replay": name})
    assert status == 200
    if name.endswith(".sse"):
        assert body == (GEMINI / name).read_bytes()  # byte for byte
    payloads = [
        orjson.loads(line[5:]) for line in body.decode().splitlines() if line.startswith("data:")
    ]
    assert payloads == recorded_chunks(name)


# -- the google-genai SDK ------------------------------------------------------------------


@pytest.fixture(scope="module")
def genai_client(mock: MockServer) -> Any:
    genai = pytest.importorskip(
        "google.genai", reason="the optional test dependency google-genai is not installed"
    )
    types = genai.types
    options = types.HttpOptions(base_url=mock.url, retry_options=types.HttpRetryOptions(attempts=1))
    return genai.Client(api_key=KEY, http_options=options)


def sdk_calls(parts: list[Any]) -> list[tuple[str, Any, bytes | None]]:
    return [
        (p.function_call.name, p.function_call.args, p.thought_signature)
        for p in parts
        if p.function_call is not None and p.function_call.args is not None
    ]


def test_sdk_reads_scripted_turns(mock: MockServer, genai_client: Any) -> None:
    mock.script([SCRIPTED, SCRIPTED])
    signature = base64.b64decode(SCRIPTED["signature"])
    complete = genai_client.models.generate_content(model=MODEL, contents="weather?")
    parts = complete.candidates[0].content.parts
    assert [(p.text, bool(p.thought)) for p in parts[:2]] == [
        (SCRIPTED["reasoning"], True),
        (SCRIPTED["text"], False),
    ]
    assert sdk_calls(parts) == [
        ("get_weather", ARGS, signature),
        ("get_time", {"tz": "Asia/Tokyo"}, None),
    ]
    assert complete.candidates[0].finish_reason.name == "STOP"
    usage = complete.usage_metadata
    assert (usage.prompt_token_count, usage.cached_content_token_count) == (120, 100)
    assert usage.total_token_count == 165

    chunks = list(genai_client.models.generate_content_stream(model=MODEL, contents="weather?"))
    streamed = [p for c in chunks for p in c.candidates[0].content.parts]
    thought = "".join(p.text for p in streamed if p.thought)
    text = "".join(p.text or "" for p in streamed if not p.thought)
    assert (thought, text) == (SCRIPTED["reasoning"], SCRIPTED["text"])
    assert sdk_calls(streamed) == sdk_calls(parts)
    assert chunks[-1].usage_metadata.thoughts_token_count == usage.thoughts_token_count
    path = mock.requests()[-1]["path"]
    assert path.endswith(f"/models/{MODEL}:streamGenerateContent")
    assert mock.requests()[-1]["query"] == "alt=sse"


def test_sdk_reads_partial_args(mock: MockServer, genai_client: Any) -> None:
    mock.script([{**SCRIPTED, "partial_args": True}])
    chunks = list(genai_client.models.generate_content_stream(model=MODEL, contents="x"))
    parts = [p for c in chunks for p in c.candidates[0].content.parts]
    partial = [a for p in parts if p.function_call for a in p.function_call.partial_args or []]
    assert {a.json_path for a in partial} >= {"$.city", "$.days[1]", "$.detail.hourly"}
    assert [a.bool_value for a in partial if a.json_path == "$.detail.hourly"] == [True]
    assert [a.number_value for a in partial if a.json_path.startswith("$.days")] == [1, 2]


def test_sdk_raises_google_errors(mock: MockServer, genai_client: Any) -> None:
    from google.genai import errors

    mock.script([{"error": {"status": 429, "message": "quota", "retry_after": "3"}}])
    with pytest.raises(errors.ClientError) as info:
        genai_client.models.generate_content(model=MODEL, contents="x")
    assert (info.value.code, info.value.status) == (429, "RESOURCE_EXHAUSTED")
    with pytest.raises(errors.ClientError) as replayed:
        genai_client.models.generate_content(
            model=MODEL,
            contents="x",
            config={"http_options": {"headers": {"x-mock-replay": "vercel-google-429-retry-info"}}},
        )
    assert replayed.value.code == 429
    assert replayed.value.details["error"]["details"][1]["retryDelay"] == "34.4s"


@pytest.mark.parametrize("name", STREAMS)
def test_sdk_reads_replayed_streams(mock: MockServer, genai_client: Any, name: str) -> None:
    recorded = recorded_chunks(name)
    chunks = list(
        genai_client.models.generate_content_stream(
            model=MODEL,
            contents="x",
            config={"http_options": {"headers": {"x-mock-replay": name}}},
        )
    )
    assert len(chunks) == len(recorded)
    for chunk, raw in zip(chunks, recorded, strict=True):
        assert chunk.response_id == raw.get("responseId")
        raw_parts = raw["candidates"][0]["content"].get("parts", [])
        parts = chunk.candidates[0].content.parts or []
        assert [p.text for p in parts] == [p.get("text") for p in raw_parts]
        assert [bool(p.thought) for p in parts] == [bool(p.get("thought")) for p in raw_parts]
        assert [p.thought_signature for p in parts] == [
            base64.b64decode(p["thoughtSignature"], altchars=b"-_")
            if "thoughtSignature" in p
            else None
            for p in raw_parts
        ]
        names = [p.function_call.name if p.function_call else None for p in parts]
        assert names == [p.get("functionCall", {}).get("name") for p in raw_parts]
        reason = raw["candidates"][0].get("finishReason")
        finish = chunk.candidates[0].finish_reason
        assert (finish.name if finish else None) == reason


@pytest.mark.parametrize("name", COMPLETES)
def test_sdk_reads_replayed_responses(mock: MockServer, genai_client: Any, name: str) -> None:
    raw = orjson.loads((GEMINI / name).read_bytes())
    response = genai_client.models.generate_content(
        model=MODEL, contents="x", config={"http_options": {"headers": {"x-mock-replay": name}}}
    )
    raw_parts = raw["candidates"][0]["content"]["parts"]
    parts = response.candidates[0].content.parts
    assert [p.text for p in parts] == [p.get("text") for p in raw_parts]
    assert sdk_calls(parts) == [
        (
            p["functionCall"]["name"],
            p["functionCall"]["args"],
            base64.b64decode(p["thoughtSignature"]) if "thoughtSignature" in p else None,
        )
        for p in raw_parts
        if "functionCall" in p
    ]
    assert response.usage_metadata.total_token_count == raw["usageMetadata"]["totalTokenCount"]


def test_partial_args_must_be_a_boolean(mock: MockServer) -> None:
    status, data = mock._request("POST", "/_mock/script", [{"partial_args": "yes"}])
    assert status == 400 and "turns[0].partial_args" in data["error"]["message"]


def test_error_rate_answers_503_unavailable(mock: MockServer) -> None:
    status, _, body = post(mock, COMPLETE_PATH, headers={"x-mock-error-rate": "1"})
    assert status == 503
    assert orjson.loads(body)["error"]["status"] == "UNAVAILABLE"
