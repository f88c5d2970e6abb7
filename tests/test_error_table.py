"""Every upstream HTTP error in its right shape, in every client protocol, tried as a real
client would: the official `anthropic` and `openai` SDKs (max_retries=0) against the running
proxy, in front of a raw upstream that answers a scripted status and body byte for byte.

The table: upstream status x provider body shape (OpenAI, Anthropic, Gemini, an HTML page,
plain text, an empty body) x client protocol (Anthropic Messages, OpenAI Chat, OpenAI
Responses) x streamed or not -> the status the client sees, the error type, retry-after
and the SDK's exception class. The status decides the class; the body only the message.

Each test runs against a proxy on each transducer implementation (native and pure-Python).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import openai
import orjson
import pytest

from conftest import IMPLEMENTATIONS, NATIVE_MISSING, _native
from servers import ProxyServer

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KEYS = {
    "OA_KEY": "sk-openai-SECRET-key-0123456789",
    "AN_KEY": "sk-ant-SECRET-key-0123456789",
    "GE_KEY": "AIzaSECRET-gemini-key-0123456789abc",
    "POOL_KEY_1": "sk-pool-SECRET-key-number-1",
    "POOL_KEY_2": "sk-pool-SECRET-key-number-2",
}

# -- a raw upstream: answers each request with the next scripted (status, headers, body) ----


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


@dataclass
class Seen:
    path: str
    headers: dict[str, str]


class RawUpstream:
    """An HTTP/1.1 server on loopback that sends exactly the scripted bytes (any status, any
    body), one answer per request (the last one repeats), and closes the connection."""

    def __init__(self) -> None:
        self.answers: deque[Answer] = deque()
        self.last = Answer(500, b"")
        self.seen: list[Seen] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    def script(self, *answers: Answer) -> None:
        self.answers = deque(answers)
        self.last = answers[-1]
        self.seen = []

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, limit=1 << 20)
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()
        self._loop.run_until_complete(server.wait_closed())

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            await reader.readexactly(int(headers.get("content-length", "0")))
            self.seen.append(Seen(path, headers))
            answer = self.answers.popleft() if self.answers else self.last
            extra = "".join(f"{k}: {v}\r\n" for k, v in answer.headers.items())
            writer.write(
                f"HTTP/1.1 {answer.status} Scripted\r\ncontent-type: {answer.content_type}\r\n"
                f"content-length: {len(answer.body)}\r\n{extra}connection: close\r\n\r\n".encode()
                + answer.body
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def __enter__(self) -> RawUpstream:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


# -- the bodies each provider sends, by status ----------------------------------------------

# OpenAI says "invalid_request_error" for most 4xx, a 401 included (fixtures/responses/
# dd-http401-invalid-api-key.response.json): the status, not this type, is the class.
OPENAI_TYPES = {400: "invalid_request_error", 401: "invalid_request_error",
                403: "invalid_request_error", 404: "invalid_request_error",
                408: "invalid_request_error", 413: "invalid_request_error",
                422: "invalid_request_error", 429: "requests"}  # fmt: skip
ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                   403: "permission_error", 404: "not_found_error", 408: "timeout_error",
                   413: "request_too_large", 422: "invalid_request_error",
                   429: "rate_limit_error", 500: "api_error", 502: "api_error",
                   503: "overloaded_error", 504: "timeout_error",
                   529: "overloaded_error"}  # fmt: skip
GEMINI_STATUSES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                   404: "NOT_FOUND", 408: "DEADLINE_EXCEEDED", 413: "INVALID_ARGUMENT",
                   422: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                   502: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
                   529: "UNAVAILABLE"}  # fmt: skip
# Recorded: Gemini's 429, whose only retry-after is the RetryInfo in its body ("34.4s").
GEMINI_429 = (FIXTURES / "gemini" / "vercel-google-429-retry-info.json").read_bytes()
BIG_HTML = (
    b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body>"
    + b"<p>nginx</p>" * 10_000
    + b"</body></html>"
)


def message_of(status: int) -> str:
    return f"scripted failure {status}"


def body_for(shape: str, status: int) -> Answer:
    """What a provider of this shape answers with `status`."""
    if shape == "openai":
        kind = OPENAI_TYPES.get(status, "server_error")
        code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)
        error = {"message": message_of(status), "type": kind, "param": None, "code": code}
        return Answer(status, orjson.dumps({"error": error}))
    if shape == "anthropic":
        error = {"type": ANTHROPIC_TYPES[status], "message": message_of(status)}
        return Answer(status, orjson.dumps({"type": "error", "error": error, "request_id": "r1"}))
    if shape == "gemini":
        if status == 429:
            return Answer(status, GEMINI_429)
        error = {"code": status, "message": message_of(status), "status": GEMINI_STATUSES[status]}
        return Answer(status, orjson.dumps({"error": error}))
    if shape == "html":
        return Answer(status, BIG_HTML, content_type="text/html")
    if shape == "text":
        return Answer(status, f"{message_of(status)}\nmore detail\n".encode(), content_type="text/plain")
    assert shape == "empty"
    return Answer(status, b"")


SHAPES = ("openai", "anthropic", "gemini", "html", "text", "empty")
PROVIDER_OF = {"openai": "oa", "anthropic": "an", "gemini": "ge", "html": "oa", "text": "an",
               "empty": "ge"}  # fmt: skip

# -- the expected table ------------------------------------------------------------------------

A, O = anthropic, openai
# upstream status -> (Anthropic client: status, type, exception), (OpenAI client: status,
# type, exception). "429+ra": a 429 with `retry-after: 30`.
TABLE: dict[str, tuple[tuple[int, str, type], tuple[int, str, type]]] = {
    "400":    ((400, "invalid_request_error", A.BadRequestError),           (400, "invalid_request_error", O.BadRequestError)),
    "401":    ((401, "authentication_error",  A.AuthenticationError),       (401, "authentication_error",  O.AuthenticationError)),
    "403":    ((403, "permission_error",      A.PermissionDeniedError),     (403, "permission_error",      O.PermissionDeniedError)),
    "404":    ((404, "not_found_error",       A.NotFoundError),             (404, "not_found_error",       O.NotFoundError)),
    "408":    ((408, "timeout_error",         A.RequestTimeoutError),       (408, "timeout_error",         O.APIStatusError)),
    "413":    ((413, "request_too_large",     A.ContentTooLargeError),      (413, "invalid_request_error", O.APIStatusError)),
    "422":    ((422, "invalid_request_error", A.UnprocessableEntityError),  (422, "invalid_request_error", O.UnprocessableEntityError)),
    "429":    ((429, "rate_limit_error",      A.RateLimitError),            (429, "rate_limit_error",      O.RateLimitError)),
    "429+ra": ((429, "rate_limit_error",      A.RateLimitError),            (429, "rate_limit_error",      O.RateLimitError)),
    "500":    ((500, "api_error",             A.InternalServerError),       (500, "server_error",          O.InternalServerError)),
    "502":    ((500, "api_error",             A.InternalServerError),       (500, "server_error",          O.InternalServerError)),
    "503":    ((529, "overloaded_error",      A.OverloadedError),           (503, "overloaded_error",      O.InternalServerError)),
    "504":    ((504, "timeout_error",         A.GatewayTimeoutError),       (504, "timeout_error",         O.InternalServerError)),
    "529":    ((529, "overloaded_error",      A.OverloadedError),           (503, "overloaded_error",      O.InternalServerError)),
}  # fmt: skip
# retry-after the client sees: "429+ra" has the header; Gemini's recorded 429 says 34.4 s in
# its body only (rounded up; it wins over a header, being the precise one).
RETRY_AFTER = {("429", "gemini"): "35", ("429+ra", "gemini"): "35", ("429+ra", "openai"): "30",
               ("429+ra", "anthropic"): "30", ("429+ra", "html"): "30",
               ("429+ra", "text"): "30", ("429+ra", "empty"): "30"}  # fmt: skip
# A same-protocol upstream's well-formed error of the status the client gets anyway reaches
# it as it is (OpenAI's own vocabulary: its 401 says invalid_request_error): Chat clients
# of the OpenAI-kind provider, for these statuses; 502 and 529 are re-shaped (500, 503).
CHAT_PASSES_THROUGH = {"400", "401", "403", "404", "408", "413", "422", "429", "429+ra",
                       "500", "503", "504"}  # fmt: skip
PROTOCOLS = ("anthropic", "chat", "responses")


@pytest.fixture(scope="module")
def upstream() -> Iterator[RawUpstream]:
    with RawUpstream() as server:
        yield server


CONFIG = """
[server]
retries = {retries}

[providers.oa]
kind = "openai"
base_url = "{url}/v1"
api_key_env = "OA_KEY"

[providers.an]
kind = "anthropic"
base_url = "{url}"
api_key_env = "AN_KEY"

[providers.ge]
kind = "gemini"
base_url = "{url}/v1beta"
api_key_env = "GE_KEY"

[providers.pool]
kind = "openai"
base_url = "{url}/v1"
api_key_env = ["POOL_KEY_1", "POOL_KEY_2"]

[[routes]]
match = "oa-*"
provider = "oa"

[[routes]]
match = "an-*"
provider = "an"

[[routes]]
match = "ge-*"
provider = "ge"

[[routes]]
match = "pool-*"
provider = "pool"
"""


def start_proxy(
    upstream: RawUpstream, impl: str, tmp: Path, *, retries: int, extra: dict[str, str] | None = None
) -> ProxyServer:
    config = tmp / "hydra.toml"
    config.write_text(CONFIG.format(url=upstream.url, retries=retries), encoding="utf-8")
    env = {**KEYS, **(extra or {})}
    return ProxyServer(upstream.url + "/v1", "--config", str(config), impl=impl, env=env)


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def proxy(
    request: pytest.FixtureRequest, upstream: RawUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProxyServer]:
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    tmp = tmp_path_factory.mktemp(f"table-{request.param}")
    with start_proxy(upstream, request.param, tmp, retries=0) as server:
        yield server


def call(proxy: ProxyServer, protocol: str, model: str, stream: bool) -> Any:
    """One request as the official SDK makes it; returns the exception it raised."""
    try:
        if protocol == "anthropic":
            client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
            client.messages.create(
                model=model,
                max_tokens=16,
                messages=[{"role": "user", "content": "hi"}],
                stream=stream,
            )
        elif protocol == "chat":
            oa = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
            oa.chat.completions.create(
                model=model, messages=[{"role": "user", "content": "hi"}], stream=stream
            )
        else:
            oa = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
            oa.responses.create(model=model, input="hi", stream=stream)
    except (anthropic.APIStatusError, openai.APIStatusError) as exc:
        return exc
    raise AssertionError("the request succeeded")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("case", list(TABLE))
def test_error_table(
    proxy: ProxyServer, upstream: RawUpstream, case: str, shape: str, protocol: str, stream: bool
) -> None:
    status = int(case[:3])
    answer = body_for(shape, status)
    if case == "429+ra":
        answer.headers["retry-after"] = "30"
    upstream.script(answer)
    provider = PROVIDER_OF[shape]
    exc = call(proxy, protocol, f"{provider}-model", stream)
    anthropic_row, openai_row = TABLE[case]
    want_status, want_type, want_class = anthropic_row if protocol == "anthropic" else openai_row
    passed_through = protocol == "chat" and shape == "openai" and case in CHAT_PASSES_THROUGH
    if passed_through:
        want_type = OPENAI_TYPES.get(status, "server_error")
    assert type(exc) is want_class, (type(exc), exc.message)
    assert exc.status_code == want_status
    body = exc.body  # anthropic: the whole body; openai: its "error"
    error = body["error"] if protocol == "anthropic" else body
    assert isinstance(error, dict), body
    assert error["type"] == want_type
    assert exc.response.headers.get("retry-after") == RETRY_AFTER.get((case, shape))
    message = error["message"]
    assert len(message) < 400  # bounded: never the 100 KB page
    if shape in ("openai", "anthropic", "gemini") and not (shape == "gemini" and status == 429):
        assert message_of(status) in message
    elif shape == "gemini":
        assert "You exceeded your current quota" in message
    elif shape == "html":
        assert "502 Bad Gateway" in message and "nginx" not in message
    elif shape == "text":
        assert message_of(status) in message and "more detail" not in message
    else:
        assert "empty body" in message
    if not passed_through and not (protocol == "anthropic" and shape == "anthropic"):
        assert f"HTTP {status}" in message and f"provider {provider!r}" in message
    for secret in KEYS.values():
        assert secret not in message
    if protocol != "anthropic":
        assert set(error) >= {"message", "type", "param", "code"}
