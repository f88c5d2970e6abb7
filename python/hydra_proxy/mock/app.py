"""The mock upstream as a raw ASGI 3 application (no framework: it must never be the
bottleneck of a benchmark).

Endpoints:

- ``POST /v1/chat/completions`` (OpenAI) and ``POST /v1/messages`` (Anthropic), streaming
  or not; ``POST /v1/responses`` (OpenAI Responses); ``POST
  /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent`` (Gemini, also
  under ``/v1/models/``; model and mode from the URL, ``?alt=sse`` for SSE; a scripted
  turn's ``match.model`` sees no model, the body has none); ``POST
  /v1/messages/count_tokens``; ``GET /v1/models`` (Anthropic shape when the request has
  ``anthropic-version``); ``GET /health``. Query strings are accepted anywhere.
- Control API for tests: ``GET|DELETE /_mock/requests`` (the recorded requests, API keys
  redacted; DELETE also empties the prefix cache), ``GET|POST|DELETE /_mock/script`` (FIFO of scripted turns, one consumed per
  model request that its ``match`` accepts; when empty, the default reply is used).

Which reply a model request gets: the ``x-mock-turn`` header (a turn as JSON), else the
``x-mock-replay`` header (a fixture name), else the oldest scripted turn if its ``match``
accepts the request (no ``match``: any request; see :mod:`hydra_proxy.mock.script`), else
``--replay``, else the canned text reply. Knobs resolve turn field > ``x-mock-*`` header >
CLI option. A recorded model request says which it got: ``"reply"`` is ``"header"``,
``"script"`` or ``"default"``.

With no delay the whole body goes out in one ASGI message, and the canned reply for given
parameters is rendered once and cached, so a request costs little more than parsing its
JSON. With ``--prefix-cache`` (or the ``x-mock-prefix-cache: 1`` header) the usage
reports the prompt and cached tokens of a provider's prompt cache by prefix
(:mod:`hydra_proxy.mock.prefix_cache`; a recorded request has its ``cached_tokens``).
State (recordings, script, prefix cache) is per process: use one worker for scripted tests.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import itertools
import random
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

import orjson

from . import anthropic_wire, chat_wire, gemini_wire, responses_wire
from .options import MockOptions
from .prefix_cache import PrefixCache
from .replay import ReplayCache, ReplayError
from .response import RenderContext, Reply, json_reply
from .script import (
    Pacing,
    ScriptedReply,
    ScriptedUsage,
    ScriptError,
    canned_reply,
    parse_reply,
    parse_script,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

REDACTED: Final = "<redacted>"
SECRET_HEADERS: Final = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key"}
)
MODELS: Final = (
    "mock-model",
    "gpt-4o",
    "gpt-4o-mini",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
)
_CACHE_MAX: Final = 1024


def key_hash(key: str) -> str:
    """How recorded requests name a key they carried (tests compare it, never the key)."""
    return hashlib.sha256(key.encode()).hexdigest()[:12]


_MAX_MS: Final = 600_000.0


class _ClientError(Exception):
    """A request the mock refuses; answered in the endpoint's own error format."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class _Wire:
    name: str
    render: Callable[[ScriptedReply, RenderContext], Reply]
    overloaded: Callable[[], Reply]
    id_prefix: str
    make_error: Callable[[int, str], Reply] | None = None

    def error(self, status: int, message: str) -> Reply:
        if self.make_error is not None:
            return self.make_error(status, message)
        if self.name == "anthropic":
            kind = "request_too_large" if status == 413 else "invalid_request_error"
            if status == 404:
                kind = "not_found_error"
            return anthropic_wire.error_reply(status, kind, message)
        kind = "not_found_error" if status == 404 else "invalid_request_error"
        return chat_wire.error_reply(status, kind, message)


_CHAT = _Wire("chat", chat_wire.render, chat_wire.overloaded_reply, "chatcmpl-")
_ANTHROPIC = _Wire("anthropic", anthropic_wire.render, anthropic_wire.overloaded_reply, "msg_")
_RESPONSES = _Wire("responses", responses_wire.render, responses_wire.overloaded_reply, "resp_")
_GEMINI_PREFIXES: Final = ("/v1beta/models/", "/v1/models/")
_GEMINI_METHODS: Final = {"generateContent": False, "streamGenerateContent": True}


def _gemini_error(status: int, message: str) -> Reply:
    return gemini_wire.error_reply(status, message)


def _gemini_wire(path: str, query: bytes) -> _Wire | None:
    """The Gemini wire for ``/v1beta/models/{model}:{method}`` or ``/v1/...`` (None: not
    such a path)."""
    model, _, method = path.split("/models/", 1)[1].rpartition(":")
    stream = _GEMINI_METHODS.get(method)
    if not model or "/" in model or stream is None:
        return None
    sse = b"alt=sse" in query.split(b"&")
    # the name keys the canned-reply cache, which must tell URLs apart
    name = f"gemini:{model}:{method}:{sse}"
    render = gemini_wire.renderer(model, stream, sse)
    return _Wire(name, render, gemini_wire.overloaded_reply, "", _gemini_error)


@dataclass(frozen=True, slots=True)
class _Knobs:
    chunks: int
    chunk_size: int
    delay_ms: float
    jitter_ms: float
    ttfb_ms: float
    split_bytes: int
    error_rate: float

    def with_pacing(self, p: Pacing) -> _Knobs:
        # Every pacing field is a knob of the same name.
        overrides = {
            f.name: value
            for f in dataclasses.fields(p)
            if (value := getattr(p, f.name)) is not None
        }
        return dataclasses.replace(self, **overrides)


def _int_header(name: str, value: str, lo: int, hi: int) -> int:
    try:
        n = int(value)
    except ValueError:
        raise _ClientError(400, f"header {name} must be an integer") from None
    if not lo <= n <= hi:
        raise _ClientError(400, f"header {name} must be between {lo} and {hi}")
    return n


def _float_header(name: str, value: str, lo: float, hi: float) -> float:
    try:
        x = float(value)
    except ValueError:
        raise _ClientError(400, f"header {name} must be a number") from None
    if not lo <= x <= hi:  # also refuses NaN
        raise _ClientError(400, f"header {name} must be between {lo:g} and {hi:g}")
    return x


# Each knob a request header may set: the header, the knob and the header's parser.
_KNOB_HEADERS: Final[dict[str, tuple[str, Callable[[str, str], float]]]] = {
    "x-mock-chunks": ("chunks", partial(_int_header, lo=0, hi=1_000_000)),
    "x-mock-chunk-size": ("chunk_size", partial(_int_header, lo=1, hi=1 << 26)),
    "x-mock-delay-ms": ("delay_ms", partial(_float_header, lo=0, hi=_MAX_MS)),
    "x-mock-jitter-ms": ("jitter_ms", partial(_float_header, lo=0, hi=_MAX_MS)),
    "x-mock-ttfb-ms": ("ttfb_ms", partial(_float_header, lo=0, hi=_MAX_MS)),
    "x-mock-split-bytes": ("split_bytes", partial(_int_header, lo=0, hi=1 << 30)),
    "x-mock-error-rate": ("error_rate", partial(_float_header, lo=0, hi=1)),
}
_KNOB_HEADER_NAMES: Final = frozenset(_KNOB_HEADERS)


class MockApp:
    """The ASGI callable; one instance per worker process holds that worker's state."""

    def __init__(self, options: MockOptions):
        self.options = options
        # Every knob is an option of the same name.
        self._base = _Knobs(
            **{f.name: getattr(options, f.name) for f in dataclasses.fields(_Knobs)}
        )
        self._recorded: deque[tuple[dict[str, Any], int]] = deque()
        self._recorded_bytes = 0
        self._script: deque[ScriptedReply] = deque()
        self._replays = ReplayCache(options.fixtures, options.replay)
        self._default_replay: Reply | None = None
        if options.replay is not None:
            self._default_replay = self._replays.reply(options.replay.resolve())
        self._canned: dict[tuple[Any, ...], Reply] = {}
        self._prefix = PrefixCache()
        self._ids = itertools.count(1)
        self._token = secrets.token_hex(6)

    # -- ASGI entry point --------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        method: str = scope["method"]
        if path == "/v1/chat/completions":
            await self._model(scope, receive, send, _CHAT, method)
        elif path == "/v1/messages":
            await self._model(scope, receive, send, _ANTHROPIC, method)
        elif path == "/v1/responses":
            await self._model(scope, receive, send, _RESPONSES, method)
        elif path.startswith(_GEMINI_PREFIXES):
            wire = _gemini_wire(path, scope.get("query_string", b""))
            if wire is None:
                await self._send(send, _gemini_error(404, f"no such endpoint: {method} {path}"))
            else:
                await self._model(scope, receive, send, wire, method)
        elif path == "/v1/messages/count_tokens":
            await self._count_tokens(scope, receive, send, method)
        elif path in ("/health", "/"):
            await self._send(send, json_reply(200, {"status": "ok"}))
        elif path == "/v1/models":
            await self._send(send, self._models(scope))
        elif path == "/_mock/requests":
            await self._control_requests(scope, receive, send, method)
        elif path == "/_mock/script":
            await self._control_script(scope, receive, send, method)
        else:
            await self._send(send, _CHAT.error(404, f"no such endpoint: {method} {path}"))

    # -- model endpoints ---------------------------------------------------------------

    async def _model(
        self, scope: Scope, receive: Receive, send: Send, wire: _Wire, method: str
    ) -> None:
        if method != "POST":
            await self._send(send, _method_not_allowed(wire, method, "POST"))
            return
        try:
            headers, raw, body = await self._read_json(scope, receive)
            entry = self._record(scope, headers, raw, body)
            knobs = self._knobs(headers)
            if knobs.error_rate and random.random() < knobs.error_rate:
                await self._send(send, wire.overloaded())
                return
            refusal = self._refusal(wire, body)
            if refusal is not None:
                if entry is not None:
                    entry["reply"] = "refused"
                await self._send(send, refusal)
                return
            turn, source = self._pick_turn(headers, body)
            if entry is not None:
                entry["reply"] = source
            if self.options.prefix_cache or headers.get("x-mock-prefix-cache") == "1":
                turn = self._prefix_cached(turn, knobs, wire.name, body, headers)
                if entry is not None:
                    entry["cached_tokens"] = turn.usage.cached_tokens if turn.usage else 0
            if turn is not None:
                knobs = knobs.with_pacing(turn.pacing)
            reply = self._reply(wire, turn, body, knobs)
        except _ClientError as exc:
            await self._send(send, wire.error(exc.status, exc.message))
            return
        await self._send(send, reply, knobs, receive, entry)

    def _refusal(self, wire: _Wire, body: dict[str, Any]) -> Reply | None:
        """A Chat request the modelled provider refuses (`refuse_params`, `max_output`), in
        the words real providers use."""
        if wire is not _CHAT:
            return None
        for name in self.options.refuse_params:
            if name in body:
                return chat_wire.error_reply(
                    400,
                    "invalid_request_error",
                    f"Unsupported parameter: '{name}' is not supported with this model.",
                    param=name,
                    code="unsupported_parameter",
                )
        limit = self.options.max_output
        asked = body.get("max_tokens", body.get("max_completion_tokens"))
        if limit is not None and isinstance(asked, int) and asked > limit:
            return chat_wire.error_reply(
                400,
                "invalid_request_error",
                f"Invalid max_tokens value, the valid range of max_tokens is [1, {limit}]",
            )
        return None

    def _pick_turn(
        self, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[ScriptedReply | None, str]:
        """The scripted turn for this request (None: the default reply) and where it came
        from: ``"header"``, ``"script"`` or ``"default"``."""
        header_turn = headers.get("x-mock-turn")
        if header_turn is not None:
            try:
                turn = parse_reply(orjson.loads(header_turn), "x-mock-turn")
            except orjson.JSONDecodeError:
                raise _ClientError(400, "header x-mock-turn is not valid JSON") from None
            except ScriptError as exc:
                raise _ClientError(400, str(exc)) from None
            return turn, "header"
        header_replay = headers.get("x-mock-replay")
        if header_replay is not None:
            return ScriptedReply(replay=header_replay), "header"
        if self._script and self._script[0].accepts(body):
            return self._script.popleft(), "script"
        return None, "default"

    def _prefix_cached(
        self,
        turn: ScriptedReply | None,
        knobs: _Knobs,
        wire: str,
        body: dict[str, Any],
        headers: dict[str, str],
    ) -> ScriptedReply:
        """The turn with the prompt and cached counts of the prefix cache (a replayed or raw
        turn keeps its own bytes)."""
        turn = turn if turn is not None else canned_reply(knobs.chunks, knobs.chunk_size)
        if turn.replay is not None or turn.raw is not None:
            return turn
        prompt, cached = self._prefix.usage(wire, body, headers)
        old = turn.usage or ScriptedUsage()
        usage = ScriptedUsage(prompt, old.completion_tokens, cached, old.cache_hit_field)
        return dataclasses.replace(turn, usage=usage)

    def _context(self, wire: _Wire, body: dict[str, Any], chunk_size: int) -> RenderContext:
        n = next(self._ids)
        model = body.get("model")
        options = body.get("stream_options")
        return RenderContext(
            model=model if isinstance(model, str) and model else "mock-model",
            stream=body.get("stream") is True,
            include_usage=isinstance(options, dict) and options.get("include_usage") is True,
            chunk_size=chunk_size,
            message_id=f"{wire.id_prefix}mock{self._token}{n:010d}",
            created=int(time.time()),
            request_id=f"req_mock{self._token}{n:010d}",
        )

    def _reply(
        self, wire: _Wire, turn: ScriptedReply | None, body: dict[str, Any], knobs: _Knobs
    ) -> Reply:
        if turn is None:
            if self._default_replay is not None:
                return self._default_replay
            return self._canned_reply(wire, body, knobs)
        if turn.replay is not None:
            try:
                reply = self._replays.reply(self._replays.resolve(turn.replay))
            except ReplayError as exc:
                raise _ClientError(400, str(exc)) from None
            return (
                Reply(reply.status, reply.headers, reply.events, abort=True)
                if turn.abort
                else reply
            )
        if turn.raw is not None:
            events = [turn.raw.encode()]
            return Reply(200, [(b"content-type", b"text/event-stream")], events, abort=turn.abort)
        return wire.render(turn, self._context(wire, body, knobs.chunk_size))

    def _canned_reply(self, wire: _Wire, body: dict[str, Any], knobs: _Knobs) -> Reply:
        model = body.get("model")
        options = body.get("stream_options")
        key = (
            wire.name,
            body.get("stream") is True,
            model if isinstance(model, str) else None,
            isinstance(options, dict) and options.get("include_usage") is True,
            knobs.chunks,
            knobs.chunk_size,
        )
        reply = self._canned.get(key)
        if reply is None:
            turn = canned_reply(knobs.chunks, knobs.chunk_size)
            reply = wire.render(turn, self._context(wire, body, knobs.chunk_size))
            if len(self._canned) >= _CACHE_MAX:
                self._canned.clear()
            self._canned[key] = reply
        return reply

    def _knobs(self, headers: dict[str, str]) -> _Knobs:
        k = self._base
        if not _KNOB_HEADER_NAMES.intersection(headers):
            return k
        overrides: dict[str, Any] = {}
        for header, (knob, parse) in _KNOB_HEADERS.items():
            value = headers.get(header)
            if value is not None:
                overrides[knob] = parse(header, value)
        return dataclasses.replace(k, **overrides)

    async def _count_tokens(self, scope: Scope, receive: Receive, send: Send, method: str) -> None:
        if method != "POST":
            await self._send(send, _method_not_allowed(_ANTHROPIC, method, "POST"))
            return
        try:
            headers, raw, body = await self._read_json(scope, receive)
        except _ClientError as exc:
            await self._send(send, _ANTHROPIC.error(exc.status, exc.message))
            return
        self._record(scope, headers, raw, body)
        await self._send(send, anthropic_wire.count_tokens_reply(body))

    def _models(self, scope: Scope) -> Reply:
        anthropic = any(name == b"anthropic-version" for name, _ in scope["headers"])
        if anthropic:
            models = [
                {
                    "type": "model",
                    "id": m,
                    "display_name": m,
                    "created_at": "2025-01-01T00:00:00Z",
                }
                for m in MODELS
            ]
            return json_reply(
                200,
                {"data": models, "has_more": False, "first_id": MODELS[0], "last_id": MODELS[-1]},
            )
        data: list[dict[str, Any]] = [
            {"id": m, "object": "model", "created": 1735689600, "owned_by": "hydra-mock"}
            for m in MODELS
        ]
        return json_reply(200, {"object": "list", "data": data})

    # -- control endpoints -------------------------------------------------------------

    async def _control_requests(
        self, scope: Scope, receive: Receive, send: Send, method: str
    ) -> None:
        if method == "GET":
            await self._send(send, json_reply(200, [entry for entry, _ in self._recorded]))
        elif method == "DELETE":
            self._recorded.clear()
            self._recorded_bytes = 0
            self._prefix.clear()
            await self._send(send, json_reply(200, {"cleared": True}))
        else:
            await self._send(send, _method_not_allowed(_CHAT, method, "GET, DELETE"))

    async def _control_script(
        self, scope: Scope, receive: Receive, send: Send, method: str
    ) -> None:
        if method == "GET":
            await self._send(send, json_reply(200, {"pending": len(self._script)}))
        elif method == "DELETE":
            self._script.clear()
            await self._send(send, json_reply(200, {"pending": 0}))
        elif method == "POST":
            try:
                raw = await self._read_body(receive, _headers(scope))
                try:
                    turns = parse_script(orjson.loads(raw))
                except orjson.JSONDecodeError:
                    raise _ClientError(400, "the script is not valid JSON") from None
                except ScriptError as exc:
                    raise _ClientError(400, str(exc)) from None
                for turn in turns:
                    if turn.replay is not None:
                        try:
                            self._replays.resolve(turn.replay)
                        except ReplayError as exc:
                            raise _ClientError(400, str(exc)) from None
                if len(self._script) + len(turns) > self.options.max_script:
                    raise _ClientError(
                        400, f"at most {self.options.max_script} turns can be queued"
                    )
            except _ClientError as exc:
                await self._send(send, _CHAT.error(exc.status, exc.message))
                return
            self._script.extend(turns)
            await self._send(send, json_reply(200, {"pending": len(self._script)}))
        else:
            await self._send(send, _method_not_allowed(_CHAT, method, "GET, POST, DELETE"))

    # -- plumbing ----------------------------------------------------------------------

    async def _read_json(
        self, scope: Scope, receive: Receive
    ) -> tuple[dict[str, str], bytes, dict[str, Any]]:
        """A request's headers, its body and that body parsed (a _ClientError unless it is
        a JSON object)."""
        headers = _headers(scope)
        raw = await self._read_body(receive, headers)
        return headers, raw, _parse_json_object(raw)

    async def _read_body(self, receive: Receive, headers: dict[str, str]) -> bytes:
        limit = self.options.max_body_bytes
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _ClientError(413, f"request body is larger than {limit} bytes")
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk: bytes = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > limit:
                    raise _ClientError(413, f"request body is larger than {limit} bytes")
                parts.append(chunk)
            if not message.get("more_body", False):
                break
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _record(
        self, scope: Scope, headers: dict[str, str], raw: bytes, body: dict[str, Any]
    ) -> dict[str, Any] | None:
        opts = self.options
        if opts.max_recorded == 0:
            return None
        entry: dict[str, Any] = {
            "method": scope["method"],
            "path": scope["path"],
            "query": _redact_query(scope.get("query_string", b"").decode("latin-1")),
            "headers": {k: (REDACTED if k in SECRET_HEADERS else v) for k, v in headers.items()},
            "body": body,
            # Which key was sent, without the key: the first 12 hex digits of its SHA-256.
            "key_hashes": {
                k: key_hash(v.removeprefix("Bearer "))
                for k, v in headers.items()
                if k in SECRET_HEADERS
            },
        }
        size = len(raw)
        self._recorded.append((entry, size))
        self._recorded_bytes += size
        while self._recorded and (
            len(self._recorded) > opts.max_recorded
            or self._recorded_bytes > opts.max_recorded_bytes
        ):
            _, old = self._recorded.popleft()
            self._recorded_bytes -= old
        return entry

    async def _send(
        self,
        send: Send,
        reply: Reply,
        knobs: _Knobs | None = None,
        receive: Receive | None = None,
        entry: dict[str, Any] | None = None,
    ) -> None:
        """Write ``reply``: in one message when unpaced, else event by event.

        An aborted reply ends without the final body message, which makes the server drop
        the connection mid-body. ``receive`` (given once the request body has been read)
        lets a paced stream stop as soon as the client disconnects; its recorded ``entry``
        then gets ``"disconnected": true`` (tests use it to see a proxy drop the upstream).
        """
        k = knobs or self._base
        if k.ttfb_ms:
            await asyncio.sleep(k.ttfb_ms / 1000)
        start = {"type": "http.response.start", "status": reply.status, "headers": reply.headers}
        try:
            if not (k.split_bytes or k.delay_ms or k.jitter_ms):
                await send(start)
                await send(
                    {"type": "http.response.body", "body": reply.body, "more_body": reply.abort}
                )
                return
            events = reply.events
            if k.split_bytes:
                body = reply.body
                events = [body[i : i + k.split_bytes] for i in range(0, len(body), k.split_bytes)]
            gone = asyncio.Event()
            watcher = asyncio.create_task(_watch_disconnect(receive, gone)) if receive else None
            try:
                await send(start)
                delay = k.delay_ms / 1000
                jitter = k.jitter_ms / 1000
                for i, piece in enumerate(events):
                    if i and (delay or jitter):
                        await asyncio.sleep(delay + (random.random() * jitter if jitter else 0.0))
                    if gone.is_set():
                        if entry is not None:
                            entry["disconnected"] = True
                        return
                    await send({"type": "http.response.body", "body": piece, "more_body": True})
            finally:
                if watcher is not None:
                    watcher.cancel()
            if not reply.abort:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            return  # the client went away mid-stream (servers that raise on send)


async def _watch_disconnect(receive: Receive, gone: asyncio.Event) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


def _headers(scope: Scope) -> dict[str, str]:
    """The request headers by (ASGI-lowercased) name; repeated names are joined with ", "."""
    out: dict[str, str] = {}
    for name, value in scope["headers"]:
        key = name.decode("latin-1")
        text = value.decode("latin-1")
        out[key] = f"{out[key]}, {text}" if key in out else text
    return out


def _redact_query(query: str) -> str:
    """The query string with API keys (Gemini's ``key=``) redacted."""
    if "key=" not in query:
        return query
    pairs = [p.split("=", 1) for p in query.split("&")]
    return "&".join(
        f"{p[0]}={REDACTED}" if p[0] == "key" and len(p) == 2 else "=".join(p) for p in pairs
    )


def _parse_json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise _ClientError(400, "request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise _ClientError(400, "request body must be a JSON object")
    return body


def _method_not_allowed(wire: _Wire, method: str, allowed: str) -> Reply:
    reply = wire.error(405, f"method {method} not allowed (use {allowed})")
    reply.headers.append((b"allow", allowed.encode()))
    return reply


def create_app(options: MockOptions | None = None) -> ASGIApp:
    """The mock upstream as an ASGI 3 application."""
    return MockApp(options or MockOptions())
