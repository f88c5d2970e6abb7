"""Judging what a client received: a well-formed reply or a well-formed error in its own
protocol, never a reply that looks complete when it was cut.

The stream grammars are the independent checkers (anthropic_grammar, chat_chunks,
responses_grammar); HTTP errors are checked against each protocol's error body.
"""

from __future__ import annotations

import http.client
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from support import anthropic_grammar, responses_grammar
from support.chat_chunks import check_chunks

Client = Literal["anthropic", "chat", "responses"]
PATHS: dict[Client, str] = {
    "anthropic": "/v1/messages",
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
}


@dataclass
class Received:
    """One HTTP exchange as the client saw it; `broken`: the transfer itself was cut
    (the body's framing ended early), which a client cannot mistake for a whole reply."""

    status: int
    headers: dict[str, str]
    body: bytes
    broken: bool = False


@dataclass
class Outcome:
    status: int
    streamed: bool
    complete: bool
    error_type: str | None = None
    message: str = ""
    text: str = ""
    raw: dict[str, Any] = field(default_factory=dict)


def call(
    port: int,
    path: str,
    body: bytes,
    headers: dict[str, str] | None = None,
    *,
    timeout: float = 30.0,
) -> Received:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body, {"content-type": "application/json", **(headers or {})})
        response = conn.getresponse()
        head = {k.lower(): v for k, v in response.getheaders()}
        try:
            data = response.read()
            broken = False
        except http.client.IncompleteRead as exc:
            data, broken = exc.partial, True
        return Received(response.status, head, data, broken)
    finally:
        conn.close()


def request_body(client: Client, model: str, *, stream: bool, text: str = "hi") -> bytes:
    if client == "responses":
        return orjson.dumps({"model": model, "input": text, "stream": stream})
    return orjson.dumps(
        {
            "model": model,
            "max_tokens": 64,
            "stream": stream,
            "messages": [{"role": "user", "content": text}],
        }
    )


def error_shape(client: Client, body: bytes) -> tuple[str, str]:
    """(type, message) of an HTTP error body in `client`'s protocol (asserts the shape)."""
    payload = orjson.loads(body)
    if client == "anthropic":
        assert payload["type"] == "error", payload
        error = payload["error"]
        assert set(error) == {"type", "message"}, error
    else:
        error = payload["error"]
        assert {"message", "type", "param", "code"} <= set(error), error
    assert isinstance(error["type"], str) and error["type"], error
    assert isinstance(error["message"], str) and error["message"], error
    return error["type"], error["message"]


def judge(client: Client, got: Received, *, secrets: tuple[str, ...] = ()) -> Outcome:
    """The outcome of one exchange, asserting it is well formed in `client`'s protocol."""
    for secret in secrets:
        assert secret.encode() not in got.body, "an upstream key reached the client"
    assert b"<html" not in got.body.lower(), f"raw HTML reached the client: {got.body[:200]!r}"
    content_type = got.headers.get("content-type", "")
    if got.status != 200:
        assert content_type.startswith("application/json"), (got.status, content_type)
        assert not got.broken, "an error body cut short"
        kind, message = error_shape(client, got.body)
        return Outcome(got.status, False, False, kind, message)
    if got.broken:
        # A cut transfer (a passthrough stream ends without its terminator): never complete.
        return Outcome(200, content_type.startswith("text/event-stream"), False, "broken")
    if content_type.startswith("text/event-stream"):
        return _stream(client, got.body)
    assert content_type.startswith("application/json"), content_type
    reply = orjson.loads(got.body)
    if client == "anthropic":
        assert reply["type"] == "message" and reply["role"] == "assistant", reply
        text = "".join(b["text"] for b in reply["content"] if b["type"] == "text")
        assert reply["stop_reason"] is not None
    elif client == "chat":
        assert reply["object"] == "chat.completion", reply
        (choice,) = reply["choices"]
        assert choice["finish_reason"] is not None
        text = choice["message"].get("content") or ""
    else:
        assert reply["object"] == "response" and reply["status"] == "completed", reply
        text = "".join(
            part["text"]
            for item in reply["output"]
            if item["type"] == "message"
            for part in item["content"]
            if part["type"] == "output_text"
        )
    return Outcome(200, False, True, text=text, raw=reply)


def _stream(client: Client, body: bytes) -> Outcome:
    if client == "anthropic":
        rebuilt = anthropic_grammar.check(body)
        assert rebuilt.complete or rebuilt.error is not None, "a stream with neither end"
        text = "".join(b.get("text", "") for b in rebuilt.content if b["type"] == "text")
        if rebuilt.error is not None:
            return Outcome(200, True, False, rebuilt.error["type"], rebuilt.error["message"], text)
        return Outcome(200, True, True, text=text)
    if client == "chat":
        chunks = check_chunks(body)
        error = chunks["error"]
        if error is not None:
            assert error["type"] and error["message"], error
            return Outcome(200, True, False, error["type"], error["message"], chunks["text"])
        assert chunks["done"] and chunks["finish"] is not None, "a stream with neither end"
        return Outcome(200, True, True, text=chunks["text"])
    response = responses_grammar.check(body)
    text = "".join(
        part["text"]
        for item in response["output"]
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    )
    if response["status"] == "failed":
        error = response["error"]
        assert error["code"] and error["message"], error
        return Outcome(200, True, False, error["code"], error["message"], text)
    assert response["status"] == "completed", response["status"]
    return Outcome(200, True, True, text=text)
