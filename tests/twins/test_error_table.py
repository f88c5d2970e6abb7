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

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import openai
import orjson
import pytest

from support.implementations import (
    IMPLEMENTATIONS,
    NATIVE_MISSING,
    _native,
    anthropic_via_chat_class,
    feed_all,
)
from support.raw_upstream import Conn, RawServer, Request
from support.servers import ProxyServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
KEYS = {
    "OA_KEY": "sk-openai-SECRET-key-0123456789",
    "AN_KEY": "sk-ant-SECRET-key-0123456789",
    "GE_KEY": "AIzaSECRET-gemini-key-0123456789abc",
    "POOL_KEY_1": "sk-pool-SECRET-key-number-1",
    "POOL_KEY_2": "sk-pool-SECRET-key-number-2",
}

# -- the raw upstream answers each request with the next scripted (status, headers, body) --


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


class ScriptedUpstream(RawServer):
    """Sends exactly the scripted bytes (any status, any body), one answer per request (the
    last one repeats), and closes the connection."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: deque[Answer] = deque()
        self.last = Answer(500, b"")

    def script(self, *answers: Answer) -> None:
        self.answers = deque(answers)
        self.last = answers[-1]
        self.requests = []

    async def answer(self, conn: Conn, req: Request) -> bool:
        answer = self.answers.popleft() if self.answers else self.last
        extra = [(k.encode(), v.encode()) for k, v in answer.headers.items()]
        extra.append((b"connection", b"close"))
        await conn.whole(answer.status, answer.body, answer.content_type.encode(), extra)
        return False


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
        return Answer(
            status, f"{message_of(status)}\nmore detail\n".encode(), content_type="text/plain"
        )
    assert shape == "empty"
    return Answer(status, b"")


SHAPES = ("openai", "anthropic", "gemini", "html", "text", "empty")
PROVIDER_OF = {"openai": "oa", "anthropic": "an", "gemini": "ge", "html": "oa", "text": "an",
               "empty": "ge"}  # fmt: skip

# -- the expected table ------------------------------------------------------------------------

A, OA = anthropic, openai
# upstream status -> (Anthropic client: status, type, exception), (OpenAI client: status,
# type, exception). "429+ra": a 429 with `retry-after: 30`.
TABLE: dict[str, tuple[tuple[int, str, type], tuple[int, str, type]]] = {
    "400":    ((400, "invalid_request_error", A.BadRequestError),           (400, "invalid_request_error", OA.BadRequestError)),
    "401":    ((401, "authentication_error",  A.AuthenticationError),       (401, "authentication_error",  OA.AuthenticationError)),
    "403":    ((403, "permission_error",      A.PermissionDeniedError),     (403, "permission_error",      OA.PermissionDeniedError)),
    "404":    ((404, "not_found_error",       A.NotFoundError),             (404, "not_found_error",       OA.NotFoundError)),
    "408":    ((408, "timeout_error",         A.RequestTimeoutError),       (408, "timeout_error",         OA.APIStatusError)),
    "413":    ((413, "request_too_large",     A.ContentTooLargeError),      (413, "invalid_request_error", OA.APIStatusError)),
    "422":    ((422, "invalid_request_error", A.UnprocessableEntityError),  (422, "invalid_request_error", OA.UnprocessableEntityError)),
    "429":    ((429, "rate_limit_error",      A.RateLimitError),            (429, "rate_limit_error",      OA.RateLimitError)),
    "429+ra": ((429, "rate_limit_error",      A.RateLimitError),            (429, "rate_limit_error",      OA.RateLimitError)),
    "500":    ((500, "api_error",             A.InternalServerError),       (500, "server_error",          OA.InternalServerError)),
    "502":    ((500, "api_error",             A.InternalServerError),       (500, "server_error",          OA.InternalServerError)),
    "503":    ((529, "overloaded_error",      A.OverloadedError),           (503, "overloaded_error",      OA.InternalServerError)),
    "504":    ((504, "timeout_error",         A.GatewayTimeoutError),       (504, "timeout_error",         OA.InternalServerError)),
    "529":    ((529, "overloaded_error",      A.OverloadedError),           (503, "overloaded_error",      OA.InternalServerError)),
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
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream() as server:
        yield server


CONFIG = """
[server]
retries = {retries}

[providers.oa]
kind = "chat"
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

[providers.pool1]
kind = "chat"
base_url = "{url}/v1"
api_key_env = ["POOL_KEY_1", "POOL_KEY_2"]

[providers.pool2]
kind = "chat"
base_url = "{url}/v1"
api_key_env = ["POOL_KEY_1", "POOL_KEY_2"]

[providers.pool3]
kind = "chat"
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
match = "pool1-*"
provider = "pool1"

[[routes]]
match = "pool2-*"
provider = "pool2"

[[routes]]
match = "pool3-*"
provider = "pool3"
"""


def start_proxy(
    upstream: ScriptedUpstream,
    impl: str,
    tmp: Path,
    *,
    retries: int,
    extra: dict[str, str] | None = None,
) -> ProxyServer:
    config = tmp / "hydra.toml"
    config.write_text(CONFIG.format(url=upstream.url, retries=retries), encoding="utf-8")
    env = {**KEYS, **(extra or {})}
    return ProxyServer(upstream.url + "/v1", "--config", str(config), impl=impl, env=env)


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def proxy(
    request: pytest.FixtureRequest,
    upstream: ScriptedUpstream,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ProxyServer]:
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    tmp = tmp_path_factory.mktemp(f"table-{request.param}")
    with start_proxy(upstream, request.param, tmp, retries=0) as server:
        yield server


_CLIENTS: dict[str, tuple[anthropic.Anthropic, openai.OpenAI]] = {}


def clients(proxy: ProxyServer) -> tuple[anthropic.Anthropic, openai.OpenAI]:
    """The SDK clients for `proxy` (made once: building one costs more than a request)."""
    if proxy.url not in _CLIENTS:
        _CLIENTS[proxy.url] = (
            anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0),
            openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0),
        )
    return _CLIENTS[proxy.url]


def call(proxy: ProxyServer, protocol: str, model: str, stream: bool) -> Any:
    """One request as the official SDK makes it; returns the exception it raised."""
    claude, oa = clients(proxy)
    try:
        if protocol == "anthropic":
            claude.messages.create(
                model=model,
                max_tokens=16,
                messages=[{"role": "user", "content": "hi"}],
                stream=stream,
            )
        elif protocol == "chat":
            oa.chat.completions.create(
                model=model, messages=[{"role": "user", "content": "hi"}], stream=stream
            )
        else:
            oa.responses.create(model=model, input="hi", stream=stream)
    except (anthropic.APIStatusError, openai.APIStatusError) as exc:
        return exc
    raise AssertionError("the request succeeded")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("case", list(TABLE))
def test_error_table(
    proxy: ProxyServer,
    upstream: ScriptedUpstream,
    case: str,
    shape: str,
    protocol: str,
    stream: bool,
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


# -- within a class, the body refines; other providers' variants ------------------------------


def _openai(status: int, message: str, kind: str, code: str | None = None) -> Answer:
    error = {"message": message, "type": kind, "param": None, "code": code}
    return Answer(status, orjson.dumps({"error": error}))


GEMINI_BAD_KEY = Answer(
    400,
    orjson.dumps(
        {
            "error": {
                "code": 400,
                "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "API_KEY_INVALID",
                        "domain": "googleapis.com",
                    }
                ],
            }
        }
    ),
)
ANTHROPIC_500_OVERLOADED = Answer(
    500,
    orjson.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
)
OPENAI_QUOTA = _openai(
    429, "You exceeded your current quota", "insufficient_quota", "insufficient_quota"
)
OPENAI_NO_MODEL = _openai(
    404, "The model `x` does not exist", "invalid_request_error", "model_not_found"
)
# Shaped as these providers document their errors (no recording of them is public).
OPENROUTER_402 = Answer(402, b'{"error":{"code":402,"message":"Insufficient credits"}}')
DEEPSEEK_401 = _openai(401, "Authentication Fails (no such user)", "authentication_error",
                       "invalid_request_error")  # fmt: skip
GROQ_429 = _openai(429, "Rate limit reached for model", "tokens", "rate_limit_exceeded")
ZAI_429 = Answer(429, b'{"error":{"code":"1302","message":"High concurrency usage"}}')
VLLM_400 = Answer(400, b'{"object":"error","message":"max_tokens is too large","type":'
                       b'"BadRequestError","param":null,"code":400}')  # fmt: skip
JSON_STRING = Answer(500, b'"internal failure"')
JSON_LIST = Answer(502, b"[1, 2]")

# (provider, upstream answer, client protocol) -> status, type, code (OpenAI clients), SDK
# exception, a part of the message.
REFINED: list[tuple[str, Answer, str, int, str, str | None, type, str]] = [
    ("an", ANTHROPIC_500_OVERLOADED, "anthropic", 529, "overloaded_error", None, A.OverloadedError, "Overloaded"),
    ("an", ANTHROPIC_500_OVERLOADED, "chat", 503, "overloaded_error", None, OA.InternalServerError, "Overloaded"),
    ("oa", OPENAI_QUOTA, "anthropic", 429, "rate_limit_error", None, A.RateLimitError, "quota"),
    ("oa", OPENAI_QUOTA, "responses", 429, "insufficient_quota", "insufficient_quota", OA.RateLimitError, "quota"),
    ("ge", GEMINI_BAD_KEY, "anthropic", 401, "authentication_error", None, A.AuthenticationError, "API key not valid"),
    ("ge", GEMINI_BAD_KEY, "chat", 401, "authentication_error", "invalid_api_key", OA.AuthenticationError, "API key not valid"),
    ("oa", OPENAI_NO_MODEL, "responses", 404, "not_found_error", "model_not_found", OA.NotFoundError, "does not exist"),
    ("oa", OPENROUTER_402, "anthropic", 402, "billing_error", None, A.PaymentRequiredError, "Insufficient credits"),
    ("oa", OPENROUTER_402, "responses", 402, "insufficient_quota", "insufficient_quota", OA.APIStatusError, "Insufficient credits"),
    ("oa", DEEPSEEK_401, "anthropic", 401, "authentication_error", None, A.AuthenticationError, "Authentication Fails"),
    ("oa", GROQ_429, "anthropic", 429, "rate_limit_error", None, A.RateLimitError, "Rate limit reached"),
    ("oa", ZAI_429, "responses", 429, "rate_limit_error", "1302", OA.RateLimitError, "High concurrency"),
    ("oa", VLLM_400, "anthropic", 400, "invalid_request_error", None, A.BadRequestError, "max_tokens is too large"),
    ("an", JSON_STRING, "anthropic", 500, "api_error", None, A.InternalServerError, "internal failure"),
    ("an", JSON_LIST, "anthropic", 500, "api_error", None, A.InternalServerError, "without an error message"),
    ("oa", JSON_LIST, "chat", 500, "server_error", None, OA.InternalServerError, "without an error message"),
]  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    ("provider", "answer", "protocol", "status", "kind", "code", "error_class", "text"),
    REFINED,
    ids=[f"{r[0]}-{r[1].status}-{r[2]}-{i}" for i, r in enumerate(REFINED)],
)
def test_refinements_and_variants(
    proxy: ProxyServer,
    upstream: ScriptedUpstream,
    provider: str,
    answer: Answer,
    protocol: str,
    status: int,
    kind: str,
    code: str | None,
    error_class: type,
    text: str,
    stream: bool,
) -> None:
    upstream.script(answer)
    exc = call(proxy, protocol, f"{provider}-model", stream)
    assert type(exc) is error_class
    assert exc.status_code == status
    error = exc.body["error"] if protocol == "anthropic" else exc.body
    assert error["type"] == kind and text in error["message"]
    if protocol != "anthropic":
        assert error["code"] == code


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("shape", ["openai", "text"])
def test_an_upstream_that_echoes_the_key_never_shows_it(
    proxy: ProxyServer, upstream: ScriptedUpstream, protocol: str, shape: str
) -> None:
    """An upstream echoing the key it got (in a JSON message or a text page): the client
    sees neither that key nor any other key-like token; a same-protocol error that would
    echo it is re-shaped, not passed through."""
    key = KEYS["OA_KEY"]
    said = f"invalid key {key}, and sk-someone-elses-key-42424242"
    if shape == "openai":
        answer = _openai(401, said, "invalid_request_error", "invalid_api_key")
    else:
        answer = Answer(401, said.encode(), content_type="text/plain")
    upstream.script(answer)
    exc = call(proxy, protocol, "oa-model", False)
    assert exc.status_code == 401
    assert key not in exc.response.text and "someone-elses" not in exc.response.text
    assert "invalid key [redacted]" in exc.response.text


# -- the proxy's own retries before the first byte ---------------------------------------------


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def retrying(
    request: pytest.FixtureRequest,
    upstream: ScriptedUpstream,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ProxyServer]:
    """A proxy that retries (twice) before the first byte."""
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    tmp = tmp_path_factory.mktemp(f"retrying-{request.param}")
    with start_proxy(upstream, request.param, tmp, retries=2) as server:
        yield server


def _gemini_429(delay: str) -> Answer:
    body = orjson.loads(GEMINI_429)
    for detail in body["error"]["details"]:
        if detail["@type"].endswith("RetryInfo"):
            detail["retryDelay"] = delay
    return Answer(429, orjson.dumps(body))


GEMINI_TEXT = (FIXTURES / "gemini" / "vercel-google-text.json").read_bytes()
OPENAI_SSE = (FIXTURES / "chat" / "oaipy-gpt4o-text-usage.sse").read_bytes()


def _sse_text(sse: bytes) -> str:
    """The text a recorded Chat stream says, read straight off its chunks."""
    out = []
    for line in sse.splitlines():
        if line.startswith(b"data: {"):
            for choice in orjson.loads(line[6:]).get("choices") or []:
                out.append(choice.get("delta", {}).get("content") or "")
    return "".join(out)


def _gemini_text(reply: bytes) -> str:
    parts = orjson.loads(reply)["candidates"][0]["content"]["parts"]
    return "".join(p.get("text", "") for p in parts if not p.get("thought"))


def test_gemini_retry_info_is_waited_out_before_the_first_byte(
    retrying: ProxyServer, upstream: ScriptedUpstream
) -> None:
    """Gemini's 429 says when to retry in its body only (RetryInfo): a short delay is waited
    out and the request tried again; the client never sees the 429."""
    upstream.script(_gemini_429("0.2s"), Answer(200, GEMINI_TEXT))
    claude, _ = clients(retrying)
    message = claude.messages.create(
        model="ge-model", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    )
    assert "".join(b.text for b in message.content if b.type == "text") == _gemini_text(GEMINI_TEXT)
    assert len(upstream.requests) == 2


def test_gemini_retry_info_past_the_bound_goes_to_the_client(
    retrying: ProxyServer, upstream: ScriptedUpstream
) -> None:
    """A RetryInfo longer than the proxy waits (the recorded 34.4 s) is not retried at once
    (that would only be refused again): the client gets the 429 with retry-after 35."""
    upstream.script(Answer(429, GEMINI_429))
    exc = call(retrying, "chat", "ge-model", False)
    assert type(exc) is openai.RateLimitError
    assert exc.response.headers["retry-after"] == "35"
    assert len(upstream.requests) == 1


POOL_KEYS = {f"Bearer {KEYS['POOL_KEY_1']}", f"Bearer {KEYS['POOL_KEY_2']}"}


def test_a_pool_tries_its_next_key_after_a_429_streamed(
    retrying: ProxyServer, upstream: ScriptedUpstream
) -> None:
    """The last (only) attempt of a provider with two keys: a 429 on one key is tried once
    more with the other, before any byte reached the client; one clean stream."""
    busy = _openai(429, "Rate limit reached", "requests", "rate_limit_exceeded")
    busy.headers["retry-after"] = "30"
    upstream.script(busy, Answer(200, OPENAI_SSE, content_type="text/event-stream"))
    claude, _ = clients(retrying)
    with claude.messages.stream(
        model="pool1-model", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        message = stream.get_final_message()
    assert "".join(b.text for b in message.content if b.type == "text") == _sse_text(OPENAI_SSE)
    used = [seen.headers["authorization"] for seen in upstream.requests]
    assert len(used) == 2 and set(used) == POOL_KEYS


def test_a_pool_tries_its_next_key_after_a_429_forwarded(
    retrying: ProxyServer, upstream: ScriptedUpstream
) -> None:
    busy = _openai(429, "Rate limit reached", "requests", "rate_limit_exceeded")
    busy.headers["retry-after"] = "30"
    upstream.script(busy, Answer(200, OPENAI_SSE, content_type="text/event-stream"))
    _, oa = clients(retrying)
    chunks = oa.chat.completions.create(
        model="pool2-model", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == _sse_text(OPENAI_SSE)
    used = [seen.headers["authorization"] for seen in upstream.requests]
    assert len(used) == 2 and set(used) == POOL_KEYS


def test_a_pool_whose_keys_are_all_busy_answers_429_once_each(
    retrying: ProxyServer, upstream: ScriptedUpstream
) -> None:
    """Bounded: one more try, not a loop; the client gets the last 429 and its retry-after."""
    busy = _openai(429, "Rate limit reached", "requests", "rate_limit_exceeded")
    busy.headers["retry-after"] = "30"
    upstream.script(busy)
    exc = call(retrying, "anthropic", "pool3-model", True)
    assert type(exc) is anthropic.RateLimitError
    assert exc.response.headers["retry-after"] == "30"
    used = [seen.headers["authorization"] for seen in upstream.requests]
    assert len(used) == 2 and set(used) == POOL_KEYS


# -- in-stream errors: the same rule, and native == Python -------------------------------------

# An error inside a 200 stream (OpenRouter's {"error": {"code": <status>, ...}} chunk): a
# numeric status in it decides, exactly as over HTTP; without one, its type or code does.
IN_STREAM: list[tuple[dict[str, Any], str]] = [
    ({"code": 401, "type": "invalid_request_error"}, "authentication_error"),
    ({"code": 403, "type": "invalid_request_error"}, "permission_error"),
    ({"code": 404, "type": "invalid_request_error"}, "not_found_error"),
    ({"code": 400, "type": "rate_limit_error"}, "invalid_request_error"),
    ({"code": 408}, "timeout_error"),
    ({"code": 413}, "request_too_large"),
    ({"code": 429, "type": "tokens"}, "rate_limit_error"),
    ({"code": 500, "type": "overloaded_error"}, "overloaded_error"),
    ({"code": 502}, "api_error"),
    ({"code": 503, "type": "api_error"}, "overloaded_error"),
    ({"code": 504}, "timeout_error"),
    ({"code": 529}, "overloaded_error"),
    ({"type": "overloaded_error"}, "overloaded_error"),
    ({"code": "rate_limit_exceeded"}, "rate_limit_error"),
    ({"code": "insufficient_quota"}, "billing_error"),
    ({"code": 200, "type": "weird"}, "api_error"),
]


@pytest.mark.parametrize(("error", "kind"), IN_STREAM, ids=[str(e) for e, _ in IN_STREAM])
def test_in_stream_error_types(impl: str, error: dict[str, Any], kind: str) -> None:
    transducer = anthropic_via_chat_class(impl)("msg_1", "claude-x", 1)
    chunk = orjson.dumps({"error": {**error, "message": "it failed"}})
    out = feed_all(transducer, b"data: " + chunk + b"\n\n")
    assert transducer.error == (kind, "it failed")
    assert f'"type":"{kind}"'.encode() in out
