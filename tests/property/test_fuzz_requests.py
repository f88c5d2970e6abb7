"""Request-side fuzzing through the running proxy, on both transducer implementations.

Every client endpoint (``/v1/messages``, ``/v1/messages/count_tokens``,
``/v1/chat/completions``, ``/v1/responses``) gets requests made from recorded ones (Claude
Code's and Codex's own, tests/fixtures/claude-code and codex; Chat requests recorded from
SDKs, tests/fixtures/chat; see each directory's SOURCES.md) and mutated: values of another
type, fields removed, huge strings and lists, values nested hundreds deep, JSON held in
strings nested deep, invalid UTF-8, duplicated keys, truncated bodies. The routes make
every request translated (Messages to Chat, Chat to Messages, Responses to Chat, and a
model name that goes to Gemini). Every answer must be a well-formed 2xx or 4xx in the
client's protocol (tests/support/wellformed.py), never a 5xx; /health must answer after each; no
traceback may reach the log.

A bounded number of examples runs by default (HYDRA_FUZZ_EXAMPLES per endpoint and
implementation, 25); a long run sets it higher and HYDRA_FUZZ_REPORT to a file that gets
the tally (requests, distinct 4xx kinds, 5xx).
"""

from __future__ import annotations

import copy
import http.client
import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hydra_proxy.mock import MockServer
from support import wellformed
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXAMPLES = int(os.environ.get("HYDRA_FUZZ_EXAMPLES", "25"))
GEMINI_MODEL = "fuzz-gemini-2.5-flash"

ENDPOINTS: dict[str, wellformed.Client] = {
    "/v1/messages": "anthropic",
    "/v1/messages/count_tokens": "anthropic",
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
}


def _recorded(directory: str, pattern: str) -> list[dict[str, Any]]:
    return [
        orjson.loads(p.read_bytes())["body"] for p in sorted((FIXTURES / directory).glob(pattern))
    ]


def _chat_seeds() -> list[dict[str, Any]]:
    seeds = []
    for body in _recorded("chat", "*.request.json"):
        body.setdefault("model", "gpt-4o-mini")
        seeds.append(body)
    return seeds


def _codex_seeds() -> list[dict[str, Any]]:
    body: dict[str, Any] = orjson.loads(
        (FIXTURES / "codex" / "request-exec-first-turn.json").read_bytes()
    )
    return [body]


SEEDS: dict[str, list[dict[str, Any]]] = {
    "/v1/messages": _recorded("claude-code", "request-*.json"),
    "/v1/messages/count_tokens": [
        {k: v for k, v in b.items() if k in ("model", "messages", "system", "tools", "tool_choice")}
        for b in _recorded("claude-code", "request-*.json")
    ],
    "/v1/chat/completions": _chat_seeds(),
    "/v1/responses": _codex_seeds(),
}
HEADERS = {
    "/v1/messages": {"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-client"},
    "/v1/messages/count_tokens": {"anthropic-version": "2023-06-01"},
    "/v1/chat/completions": {"authorization": "Bearer sk-client", "user-agent": "Zed/0.200"},
    "/v1/responses": {"authorization": "Bearer sk-client", "originator": "codex_exec"},
}
CONFIG = """
[server]
provider = "openai"
continuation = "always"

[providers.gemini-native]
base_url = "{mock}/v1beta"

[[routes]]
match = "fuzz-gemini-*"
provider = "gemini-native"

[[routes]]
match = "*"
client = "chat"
provider = "anthropic"
"""

TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def proxy(
    request: pytest.FixtureRequest, mock: MockServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProxyServer]:
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    config = tmp_path_factory.mktemp("fuzz") / "hydra.toml"
    config.write_text(CONFIG.format(mock=mock.url))
    env = {
        "HYDRA_ANTHROPIC_BASE_URL": mock.url,
        "ANTHROPIC_API_KEY": "sk-ant-upstream-SECRET",
        "GEMINI_API_KEY": "AIza-upstream-SECRET-0000000000",
        "HYDRA_USAGE_LEDGER": "off",
    }
    with ProxyServer(
        mock.url + "/v1", "--config", str(config), impl=request.param, env=env
    ) as server:
        yield server
        log = server.log_tail()
    assert "Traceback" not in log, log
    _write_report()


def _write_report() -> None:
    target = os.environ.get("HYDRA_FUZZ_REPORT")
    if not target:
        return
    kinds = sorted(k for k in TALLY if k.startswith("4"))
    lines = [
        f"requests: {sum(v for k, v in TALLY.items() if k[0] in '245')}",
        f"2xx: {sum(v for k, v in TALLY.items() if k.startswith('2'))}",
        f"4xx: {sum(v for k, v in TALLY.items() if k.startswith('4'))}",
        f"5xx: {sum(v for k, v in TALLY.items() if k.startswith('5'))}",
        f"distinct 4xx kinds: {len(kinds)}",
        *(f"  {TALLY[k]:6d}  {k}" for k in kinds),
    ]
    Path(target).write_text("\n".join(lines) + "\n")


# --- mutations ---------------------------------------------------------------------------


def _paths(
    value: Any, path: tuple[Any, ...] = (), out: list[tuple[Any, ...]] | None = None
) -> list[tuple[Any, ...]]:
    """Every place in `value` (dict keys and list indexes), depth first, at most 4000."""
    out = [] if out is None else out
    if len(out) >= 4000 or len(path) > 200:
        return out
    out.append(path)
    if isinstance(value, dict):
        for key, child in value.items():
            _paths(child, (*path, key), out)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _paths(child, (*path, index), out)
    return out


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _set(body: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    parent = _get(body, path[:-1])
    parent[path[-1]] = new
    return body


def _nested(depth: int, kind: str) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["", " ", "null", "{}", "[]", "\u0000", "claude-sonnet-4-5", GEMINI_MODEL]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def mutations(draw: st.DrawFn, seeds: list[dict[str, Any]]) -> bytes:
    body: Any = copy.deepcopy(draw(st.sampled_from(seeds)))
    huge = False
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(body)
        # The body itself now and then; mostly a field somewhere inside it.
        path = draw(
            st.sampled_from(paths[1:] if len(paths) > 1 and draw(st.integers(0, 19)) else paths)
        )
        op = draw(
            st.sampled_from(
                ["swap", "swap", "remove", "huge", "long-list", "nest", "json-in-string", "model"]
            )
        )
        if op == "swap":
            body = _set(body, path, draw(VALUES))
        elif op == "remove" and path:
            parent = _get(body, path[:-1])
            del parent[path[-1]]
        elif op == "huge" and not huge:  # one per request: bodies stay within 8 MB
            huge = True
            size = draw(st.sampled_from([1_000, 70_000, 300_000, 1_200_000]))
            body = _set(body, path, draw(st.sampled_from(["a", " ", "\U0001f600", "\n"])) * size)
        elif op == "long-list":  # of immutable values: a later mutation changes one place
            body = _set(body, path, [draw(SCALARS)] * draw(st.sampled_from([100, 5_000])))
        elif op == "nest":
            depth = draw(st.sampled_from([20, 127, 129, 300]))
            body = _set(body, path, _nested(depth, draw(st.sampled_from(["list", "dict"]))))
        elif op == "json-in-string":
            depth = draw(st.sampled_from([10, 129, 400]))
            body = _set(body, path, json.dumps(_nested(depth, "dict")))
        elif op == "model" and isinstance(body, dict):
            body["model"] = draw(st.sampled_from([GEMINI_MODEL, "m" * 300, "gpt-4o\n", 7]))
    raw = _dumps(body)
    assert len(raw) < 8 << 20, len(raw)
    byte_op = draw(
        st.sampled_from(["none"] * 6 + ["utf8", "utf8", "duplicate", "duplicate", "truncate"])
    )
    if byte_op == "utf8" and raw:
        at = draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80"])) + raw[at:]
    elif byte_op == "duplicate" and raw.startswith(b"{") and len(raw) > 2:
        keys = re.findall(rb'"([A-Za-z_]{1,30})":', raw[:20000])
        if keys:
            key = draw(st.sampled_from(keys))
            junk = _dumps(draw(VALUES))
            raw = raw.replace(b'"%s":' % key, b'"%s":%s,"%s":' % (key, junk, key), 1)
    elif byte_op == "truncate" and raw:
        raw = raw[: draw(st.integers(0, len(raw) - 1))]
    return raw


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):  # past orjson's depth, or a huge integer
        return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


# --- the check ---------------------------------------------------------------------------


def _kind(status: int, error_type: str | None, message: str) -> str:
    """A 4xx's kind: its status, type and message with the request's own values masked."""
    template = re.sub(r"'[^']*'|\"[^\"]*\"|\b\d+\b", "_", message)[:90]
    template = re.sub(r"(\b[a-z_]+\.)?\b\d+\b|\.\d+\.", ".", template)
    return f"{status} {error_type} {template}"


def _judge(path: str, got: wellformed.Received) -> None:
    assert got.status < 500, (got.status, got.body[:500])
    client = ENDPOINTS[path]
    if path.endswith("count_tokens") and got.status == 200:
        count = orjson.loads(got.body)["input_tokens"]
        assert isinstance(count, int) and count > 0
        TALLY["200 count_tokens"] += 1
        return
    outcome = wellformed.judge(client, got, secrets=("sk-ant-upstream-SECRET",))
    if outcome.status >= 400:
        TALLY[_kind(outcome.status, outcome.error_type, outcome.message)] += 1
    else:
        assert outcome.error_type != "api_error", outcome.message  # an in-stream 500
        TALLY[f"{outcome.status} {'stream' if outcome.streamed else 'json'}"] += 1


def _keep(path: str, raw: bytes) -> None:
    """A failing request, kept beside the report for a look (a long run only)."""
    target = os.environ.get("HYDRA_FUZZ_REPORT")
    if target:
        name = path.strip("/").replace("/", "-")
        Path(f"{target}.{name}.{TALLY['failed']}.json").write_bytes(raw)
        TALLY["failed"] += 1


def _health(proxy: ProxyServer) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("GET", "/health")
    status = conn.getresponse().status
    conn.close()
    return status


@pytest.mark.parametrize("path", list(ENDPOINTS))
def test_mutated_requests_get_a_wellformed_answer_never_a_500(
    proxy: ProxyServer, path: str
) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=EXAMPLES <= 50,  # the bounded run is the same on every machine
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        raw = data.draw(mutations(SEEDS[path]))
        got = wellformed.call(proxy.port, path, raw, HEADERS[path], timeout=60)
        try:
            _judge(path, got)
        except AssertionError:
            _keep(path, raw)
            raise
        assert _health(proxy) == 200

    run()
