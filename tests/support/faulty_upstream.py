"""A misbehaving upstream for fault-injection tests, on the suite's raw-socket server
(tests/support/raw_upstream.py).

Not the product's mock (hydra_proxy.mock): this one must be able to break HTTP and SSE at
the byte level. Its responses have a Content-Length, are chunked, or end with the
connection; it answers the
paths of every upstream kind, and is scripted per request by the model name it is asked
for: ``<prefix>-<scenario>[.<nonce>]`` (the proxy's routes send each prefix to a provider
of one kind pointed here; the scenario picks the behaviour, see SCENARIOS). The well-behaved
parts are real recorded streams and replies from tests/fixtures.

It counts its connections: open ones, and busy ones (a request read and its response not
finished, or a stall the proxy has not hung up on). Between requests a connection is idle
(kept alive for the proxy's pool); `close_idle` closes those, so what stays open after a
case is what the proxy leaked.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import socket
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from support.raw_upstream import Conn, RawServer, Request

FIXTURES = Path(__file__).parents[1] / "fixtures"

BIG_EVENT_BYTES = 5 * 1024 * 1024
# The upstream's own key as the proxy sends it: must never reach a client.
UPSTREAM_KEY = "sk-upstream-SECRET-key"


def _jsonl_as_sse(path: Path, *, named: bool) -> bytes:
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    if named:
        return b"".join(
            b"event: " + orjson.loads(line)["type"].encode() + b"\ndata: " + line + b"\n\n"
            for line in lines
        )
    return b"".join(b"data: " + line + b"\r\n\r\n" for line in lines)


def _recorded_body(path: Path) -> Any:
    data = orjson.loads(path.read_bytes())
    if isinstance(data, list):  # an SDK recording: the first error exchange's body
        return next(e["response"]["body"] for e in data if e["response"]["status_code"] >= 400)
    return data["body"] if "body" in data and "status" in data else data


@dataclass(frozen=True)
class Kind:
    """One upstream protocol: its recorded stream and reply, and where content starts."""

    name: str
    stream: bytes
    reply: bytes
    delta_marker: bytes  # the first event containing this is a content delta
    separator: bytes
    big_event: Callable[[], bytes]


CHAT_STREAM = (FIXTURES / "chat" / "oaipy-gpt4o-text-usage.sse").read_bytes()


def _chat_reply() -> bytes:
    """A Chat completion carrying the recorded stream's text (the recordings hold streams)."""
    text = "".join(
        c["choices"][0]["delta"].get("content") or ""
        for c in _data_payloads(CHAT_STREAM)
        if c.get("choices")
    )
    return orjson.dumps(
        {
            "id": "chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL",
            "object": "chat.completion",
            "created": 1727346168,
            "model": "gpt-4o-2024-08-06",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 14, "completion_tokens": 16, "total_tokens": 30},
        }
    )


def _data_payloads(stream: bytes) -> list[Any]:
    out = []
    for line in stream.splitlines():
        if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
            out.append(orjson.loads(line[5:]))
    return out


def _big_chat() -> bytes:
    chunk = {"choices": [{"index": 0, "delta": {"content": "x" * BIG_EVENT_BYTES}}]}
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def _big_anthropic() -> bytes:
    event = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "x" * BIG_EVENT_BYTES},
    }
    return b"event: content_block_delta\ndata: " + orjson.dumps(event) + b"\n\n"


def _big_responses() -> bytes:
    event = {"type": "response.output_text.delta", "delta": "x" * BIG_EVENT_BYTES}
    return b"event: response.output_text.delta\ndata: " + orjson.dumps(event) + b"\n\n"


def _big_gemini() -> bytes:
    chunk = {"candidates": [{"content": {"parts": [{"text": "x" * BIG_EVENT_BYTES}]}}]}
    return b"data: " + orjson.dumps(chunk) + b"\r\n\r\n"


KINDS: dict[str, Kind] = {
    "chat": Kind(
        "chat",
        CHAT_STREAM,
        _chat_reply(),
        b'"delta":{"content":"I',
        b"\n\n",
        _big_chat,
    ),
    "anthropic": Kind(
        "anthropic",
        (FIXTURES / "anthropic" / "sdkpy-basic-text.sse").read_bytes(),
        orjson.dumps(
            _recorded_body(
                FIXTURES / "anthropic" / "pydantic-nonstream-redacted-thinking.2.response.json"
            )
        ),
        b'"text_delta"',
        b"\n\n",
        _big_anthropic,
    ),
    "responses": Kind(
        "responses",
        (FIXTURES / "responses" / "openllmetry-gpt41nano-stream-text.sse").read_bytes(),
        orjson.dumps(_recorded_body(FIXTURES / "responses" / "pydantic-gpt4o-text.response.json")),
        b"response.output_text.delta",
        b"\n\n",
        _big_responses,
    ),
    "gemini": Kind(
        "gemini",
        _jsonl_as_sse(FIXTURES / "gemini" / "vercel-google-text.jsonl", named=False),
        (FIXTURES / "gemini" / "vercel-google-text.json").read_bytes(),
        b'"text":',
        b"\r\n\r\n",
        _big_gemini,
    ),
}

# Recorded error bodies, one per provider shape (the status comes from the scenario).
ERROR_BODIES: dict[str, bytes] = {
    "openai": orjson.dumps(
        _recorded_body(FIXTURES / "responses" / "dd-http401-invalid-api-key.response.json")
    ),
    "anthropic": orjson.dumps(
        _recorded_body(FIXTURES / "anthropic" / "sdkpy-recording-http400-invalid-request.json")
    ),
    "gemini": (FIXTURES / "gemini" / "vercel-google-429-retry-info.json").read_bytes(),
    "html": b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n",
    "text": b"upstream connect error or disconnect/reset before headers. reset reason: overflow",
    "empty": b"",
}
ERROR_CONTENT_TYPES = {"html": b"text/html", "text": b"text/plain", "empty": b"text/plain"}


def events_of(kind: Kind) -> list[bytes]:
    """The recorded stream as whole events, each with its separator."""
    sep = kind.separator
    parts = kind.stream.split(sep)
    return [p + sep for p in parts if p.strip()]


def content_start(events: list[bytes], kind: Kind) -> int:
    return next(i for i, e in enumerate(events) if kind.delta_marker in e)


@dataclass(frozen=True)
class ScenarioRequest:
    """A request with what picks its answer: the upstream kind its path names, its model
    (the scenario) and whether it streams."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    kind: str
    model: str
    stream: bool

    @property
    def scenario(self) -> str:
        name = self.model.split("-", 1)[1] if "-" in self.model else self.model
        return name.split(".", 1)[0]


Behaviour = Callable[[Conn, Request, Kind, "FaultyUpstream"], Awaitable[bool]]
"""Answers one request; returns True when the connection may serve another."""

SSE_HEAD = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"transfer-encoding", b"chunked"),
]


async def _ok(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
    if req.stream:
        await conn.head(200, SSE_HEAD)
        for event in events_of(kind):
            await conn.chunk(event)
        await conn.end_chunks()
    else:
        await conn.whole(200, kind.reply, b"application/json")
    return True


async def _slow(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
    """The recording with its first content event repeated 40 times, 0.1 s apart (a
    whole reply: its body in 40 pieces, 0.1 s apart)."""
    if not req.stream:
        body = kind.reply
        await conn.head(
            200, [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        )
        step = len(body) // 40 + 1
        for i in range(0, len(body), step):
            await asyncio.sleep(0.1)
            conn.write(body[i : i + step])
            await conn.drain()
        return True
    events = events_of(kind)
    i = content_start(events, kind)
    await conn.head(200, SSE_HEAD)
    for event in events[: i + 1]:
        await conn.chunk(event)
    for _ in range(40):
        await asyncio.sleep(0.1)
        await conn.chunk(events[i])
    for event in events[i + 1 :]:
        await conn.chunk(event)
    await conn.end_chunks()
    return True


FLOOD_BYTES = 32 * 1024 * 1024


async def _flood(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
    """As fast as the proxy takes it: the first content event made 16 KiB long, repeated
    to FLOOD_BYTES, then the rest of the recording (a long reply for a slow reader)."""
    events = events_of(kind)
    i = content_start(events, kind)
    piece = events[i].replace(b'"delta":{"content":"I', b'"delta":{"content":"' + b"I" * 16384)
    piece = piece.replace(b'"text":"', b'"text":"' + b"x" * 16384, 1)
    await conn.head(200, SSE_HEAD)
    for event in events[: i + 1]:
        await conn.chunk(event)
    for _ in range(FLOOD_BYTES // len(piece)):
        await conn.chunk(piece)  # drained: as fast as the proxy reads
        up.flooded[req.model] = up.flooded.get(req.model, 0) + len(piece)
    for event in events[i + 1 :]:
        await conn.chunk(event)
    await conn.end_chunks()
    return True


async def _drop_boundary(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
    if not req.stream:  # a Content-Length body cut short
        body = kind.reply
        await conn.head(
            200, [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        )
        conn.write(body[: len(body) // 2])
        await conn.drain()
        return False
    events = events_of(kind)
    await conn.head(200, SSE_HEAD)
    for event in events[: content_start(events, kind) + 2]:
        await conn.chunk(event)
    return False


async def _drop_inside(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
    if not req.stream:
        return await _drop_boundary(conn, req, kind, up)
    events = events_of(kind)
    n = content_start(events, kind) + 1
    await conn.head(200, SSE_HEAD)
    for event in events[:n]:
        await conn.chunk(event)
    await conn.chunk(events[n][: len(events[n]) // 2])
    return False


async def _stall_head(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
    await conn.hold()
    return False


async def _stall_body(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
    if not req.stream:
        body = kind.reply
        await conn.head(
            200, [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        )
        conn.write(body[:10])
        await conn.drain()
    else:
        events = events_of(kind)
        await conn.head(200, SSE_HEAD)
        for event in events[: content_start(events, kind) + 1]:
            await conn.chunk(event)
    await conn.hold()
    return False


async def _stall_error(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
    """A 503 whose body stops after a few bytes."""
    body = ERROR_BODIES["openai"]
    await conn.head(
        503, [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    )
    conn.write(body[:12])
    await conn.drain()
    await conn.hold()
    return False


GARBAGE = b"\x00\x89PNG\r\n\x1a\n\xff\xfe garbage \xc3\x28\ndata: {not json\xff\n\n"


async def _garbage(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
    events = events_of(kind)
    await conn.head(200, SSE_HEAD)
    for event in events[: content_start(events, kind) + 1]:
        await conn.chunk(event)
    await conn.chunk(GARBAGE)
    await conn.end_chunks()
    return True


async def _big_event(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
    events = events_of(kind)
    n = content_start(events, kind) + 1
    await conn.head(200, SSE_HEAD)
    for event in events[:n]:
        await conn.chunk(event)
    big = kind.big_event()
    for i in range(0, len(big), 64 * 1024):
        await conn.chunk(big[i : i + 64 * 1024])
    for event in events[n:]:
        await conn.chunk(event)
    await conn.end_chunks()
    return True


def _error(status: int, shape: str) -> Behaviour:
    async def answer(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
        body = ERROR_BODIES[shape]
        content_type = ERROR_CONTENT_TYPES.get(shape, b"application/json")
        extra = [(b"retry-after", b"30")] if status == 429 else []
        await conn.whole(status, body, content_type, extra)
        return True

    return answer


async def _r429(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
    """429 with retry-after: 0 for the first request of this model name, then the reply."""
    if up.seen(req.model) == 1:
        shape = {"chat": "openai", "responses": "openai"}.get(kind.name, kind.name)
        await conn.whole(429, ERROR_BODIES[shape], b"application/json", [(b"retry-after", b"0")])
        return True
    return await _ok(conn, req, kind, up)


async def _gzip(conn: Conn, req: ScenarioRequest, kind: Kind, up: FaultyUpstream) -> bool:
    if not req.stream:
        body = gzip.compress(kind.reply)
        await conn.whole(200, body, b"application/json", [(b"content-encoding", b"gzip")])
        return True
    await conn.head(200, [*SSE_HEAD, (b"content-encoding", b"gzip")])
    packer = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    for event in events_of(kind):  # one flushed gzip piece per event, as a server streams
        await conn.chunk(packer.compress(event) + packer.flush(zlib.Z_SYNC_FLUSH))
    await conn.chunk(packer.flush())
    await conn.end_chunks()
    return True


SCENARIOS: dict[str, Behaviour] = {
    "ok": _ok,
    "slow": _slow,
    "flood": _flood,
    "drop_boundary": _drop_boundary,
    "drop_inside": _drop_inside,
    "stall_head": _stall_head,
    "stall_body": _stall_body,
    "stall_error": _stall_error,
    "garbage": _garbage,
    "big_event": _big_event,
    "r429": _r429,
    "gzip": _gzip,
}
for _status in (400, 401, 403, 404, 429, 500, 502, 503):
    for _shape in ERROR_BODIES:
        SCENARIOS[f"err{_status}_{_shape}"] = _error(_status, _shape)


def _kind_of(path: str) -> tuple[str, str | None, bool | None]:
    """(kind, model from the path, stream from the path) for a request path."""
    bare = path.split("?", 1)[0]
    if bare.endswith("/chat/completions"):
        return "chat", None, None
    if bare.endswith("/v1/messages"):
        return "anthropic", None, None
    if bare.endswith("/responses"):
        return "responses", None, None
    if ":" in bare and "/models/" in bare:
        resource, method = bare.rsplit(":", 1)
        return "gemini", resource.rsplit("/", 1)[1], method == "streamGenerateContent"
    raise ValueError(f"no upstream kind answers {path}")


class FaultyUpstream(RawServer):
    """Answers each request as the scenario its model names says; a context manager."""

    abort_at_end = True

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[str, int] = {}
        self.flooded: dict[str, int] = {}  # flood bytes the proxy has taken, by model
        # A port whose accept queue is full: connecting there hangs (a connect timeout).
        self._blackhole = socket.socket()
        self._fillers: list[socket.socket] = []

    @property
    def blackhole_url(self) -> str:
        return f"http://127.0.0.1:{self._blackhole.getsockname()[1]}"

    def __enter__(self) -> FaultyUpstream:
        super().__enter__()
        self._blackhole.bind(("127.0.0.1", 0))
        self._blackhole.listen(0)
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(self._blackhole.getsockname())
            self._fillers.append(filler)
        return self

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        for s in (*self._fillers, self._blackhole):
            s.close()

    def seen(self, model: str) -> int:
        with self._lock:
            return self._seen.get(model, 0)

    async def answer(self, conn: Conn, request: Request) -> bool:
        kind, model, stream = _kind_of(request.path)
        payload = orjson.loads(request.body) if request.body else {}
        if model is None:
            model = str(payload.get("model", ""))
        if stream is None:
            stream = bool(payload.get("stream"))
        req = ScenarioRequest(
            request.method, request.path, request.headers, request.body, kind, model, stream
        )
        with self._lock:
            self._seen[req.model] = self._seen.get(req.model, 0) + 1
        behaviour = SCENARIOS.get(req.scenario)
        if behaviour is None:
            await conn.whole(599, f"unknown scenario {req.scenario}".encode(), b"text/plain")
            return False
        return await behaviour(conn, req, KINDS[req.kind], self)
