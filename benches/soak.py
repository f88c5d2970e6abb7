"""The soak: many concurrent streams through one proxy worker, each byte-compared against
its expected translation; reports peak RSS per stream and proxy CPU per 1,000 events.

    PYTHONPATH=python:tests python benches/soak.py [--streams 500] [--impl native]
        [--pace-ms 3] [--waves 2] [--write]

Everything runs on loopback. The proxy is a real ``hydra-proxy serve`` process with one
granian worker; the upstream is an in-process aiohttp server that replays recorded
fixtures (tests/fixtures: Chat, Anthropic, Gemini and Responses streams with tool calls and
thinking), one event every ``pace_ms``. Each wave opens ``streams`` client streams at once
(Anthropic Messages, OpenAI Chat and Responses clients, round-robin over the CASES); the
upstream holds every reply until the whole wave has arrived, so all of them are in flight
together through the worker, then paces them out.

Expected bytes: each case's request goes through the same ingress plan in process (the
same settings, config file and signing key as the proxy: `hydra_proxy.server.ingress`),
and the fixture's upstream bytes through the plan's transducer (feed, then finish if the
upstream ended early, as server/pipeline/relay.py does). A forwarded case (same protocol both
sides) expects the upstream bytes unchanged.

Normalisation (`normalise`), applied to both sides before the comparison: the values the
proxy mints per request are replaced by their order of first appearance, so a stream must
still use each one consistently: ids (``msg_hydra``/``chatcmpl-hydra``/``resp_hydra`` and
items derived from them: ``hydra`` + 24 hex digits) become ``hydra<1>``, ``hydra<2>``...,
and the wall-clock ``"created"``/``"created_at"`` seconds become ``<t>``. Nothing else is
touched. Pings are time-driven, so the proxy runs with a ping interval far above the
soak's length (a ping would be a real difference, and would fail the comparison).

Numbers (read from /proc): RSS of the proxy's process tree sampled every 20 ms, peak minus
the idle baseline (measured after a warm-up request of every case) over the streams of one
wave; CPU seconds (user + system) the proxy spent over the waves, per 1,000 upstream events
relayed.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "python"), str(REPO / "tests"), str(REPO / "benches")]

import loadlib_proc as proc  # noqa: E402
from hydra_proxy.config import load  # noqa: E402
from hydra_proxy.mock.replay import load_reply  # noqa: E402
from hydra_proxy.server.ingress import anthropic, chat, responses  # noqa: E402
from hydra_proxy.server.pipeline.exchange import Exchange  # noqa: E402
from hydra_proxy.server.pipeline.routing import decide_route  # noqa: E402
from hydra_proxy.server.transport.worker import Worker  # noqa: E402
from hydra_proxy.signing_key import load_signing_key  # noqa: E402
from support.servers import ProxyServer  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"
RESULTS = REPO / "benches" / "results"
ENDPOINT = {
    "anthropic": "/v1/messages",
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
}
INGRESS = {"anthropic": anthropic.read, "chat": chat.read, "responses": responses.read}
PROVIDER = {"chat": "up-chat", "anthropic": "up-anthropic", "gemini": "up-gemini",
            "responses": "up-responses"}  # fmt: skip


@dataclass(frozen=True)
class Case:
    """A client protocol on an upstream kind, replaying one fixture."""

    client: str  # anthropic | chat | responses
    upstream: str  # a provider kind: chat | anthropic | gemini | responses
    fixture: str  # under tests/fixtures

    @property
    def model(self) -> str:
        stem = Path(self.fixture).name.split(".")[0]
        return f"soak-{self.client}-{stem}"


CASES = (
    Case("anthropic", "chat", "chat/oaipy-gpt4o-parallel-tool-calls.sse"),
    Case("anthropic", "chat", "chat/vercel-deepseek-reasoning-then-tool-call.jsonl"),
    Case("anthropic", "gemini",
         "gemini/pydantic-gemini3pro-stream-function-call-thought-signature.1.sse"),
    Case("anthropic", "responses", "responses/pydantic-gpt5-stream-reasoning-function-call.sse"),
    Case("chat", "anthropic", "anthropic/pydantic-thinking-signature.sse"),
    Case("chat", "anthropic", "anthropic/sdkpy-text-then-tool-use.sse"),
    Case("chat", "chat", "chat/oaipy-gpt4o-tool-call.sse"),
    Case("responses", "chat", "chat/pydantic-zai-glm-reasoning-content.sse"),
    Case("responses", "anthropic", "anthropic/pydantic-thinking-signature.sse"),
)  # fmt: skip

_MINTED_ID = re.compile(rb"hydra[0-9a-f]{24}")
_CLOCK = re.compile(rb'"(created|created_at)":\d+')


def normalise(body: bytes) -> bytes:
    """`body` with per-request ids numbered by first appearance and clock seconds as <t>
    (the module's docstring says why and what else stays exact)."""
    seen: dict[bytes, bytes] = {}

    def number(m: re.Match[bytes]) -> bytes:
        return seen.setdefault(m.group(0), b"hydra<%d>" % (len(seen) + 1))

    return _CLOCK.sub(rb'"\1":<t>', _MINTED_ID.sub(number, body))


def request_body(case: Case) -> dict[str, Any]:
    tools = [
        {
            "name": "get_weather",
            "description": "weather of a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    if case.client == "anthropic":
        return {
            "model": case.model, "max_tokens": 1024, "stream": True, "tools": tools,
            "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        }  # fmt: skip
    if case.client == "chat":
        return {
            "model": case.model, "stream": True,
            "tools": [{"type": "function", "function": {
                "name": "get_weather", "parameters": tools[0]["input_schema"]}}],
            "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        }  # fmt: skip
    return {
        "model": case.model, "stream": True, "input": "What is the weather in Paris?",
        "tools": [{"type": "function", "name": "get_weather",
                   "parameters": tools[0]["input_schema"]}],
    }  # fmt: skip


def request_headers(case: Case) -> dict[str, str]:
    headers = {"content-type": "application/json"}
    if case.client == "anthropic":
        headers["anthropic-version"] = "2023-06-01"
    return headers


def config_text(upstream_url: str) -> str:
    bases = {"chat": "/v1", "anthropic": "", "gemini": "/v1beta", "responses": "/v1"}
    lines = []
    for kind, name in PROVIDER.items():
        lines += [f"[providers.{name}]", f'kind = "{kind}"',
                  f'base_url = "{upstream_url}{bases[kind]}"', "api_key_optional = true", ""]  # fmt: skip
    for case in CASES:
        lines += ["[[routes]]", f'match = "{case.model}"', f'provider = "{PROVIDER[case.upstream]}"', ""]  # fmt: skip
    return "\n".join(lines)


def upstream_events(case: Case) -> list[bytes]:
    return load_reply(FIXTURES / case.fixture).events


def expected_bytes(case: Case, config: Path, signing_key_file: Path, impl: str) -> bytes:
    """What the proxy must send for `case`: the same plan, in process (see the docstring)."""
    settings = load({"config": str(config), "implementation": impl}, {})
    worker = dataclasses.replace(
        Worker.create(settings), signing_key=load_signing_key(str(signing_key_file))
    )
    headers = [(k.encode(), v.encode()) for k, v in request_headers(case).items()]
    scope = {"type": "http", "method": "POST", "path": ENDPOINT[case.client],
             "headers": headers, "query_string": b""}  # fmt: skip
    exchange = Exchange(worker, scope, None, None)  # type: ignore[arg-type]  # no I/O here
    body = request_body(case)
    request = INGRESS[case.client](exchange, body, orjson.dumps(body))
    decision = decide_route(worker, request.traits)
    plan = request.plan(decision, decision.attempts[0])
    upstream = b"".join(upstream_events(case))
    if plan.reply == "forward":  # as it is, less what the client did not ask for
        return plan.strip(upstream) if plan.strip is not None else upstream
    assert plan.reply == "relay" and plan.transducer is not None
    transducer = plan.transducer()
    out = transducer.feed(upstream)
    if not transducer.finished:
        out += transducer.finish()
    return out


class Upstream:
    """The paced replaying upstream; holds each wave's replies until all have arrived."""

    def __init__(self, pace_ms: float) -> None:
        self.pace = pace_ms / 1000
        self.events = {case.model: upstream_events(case) for case in CASES}
        self.barrier = 1
        self.arrived = 0
        self.release = asyncio.Event()
        self.active = 0
        self.peak = 0
        self.sent = 0
        self.requests = 0
        self.connections: set[object] = set()  # the proxy's upstream connections (peers)
        self.cut = 0  # replies whose end the proxy did not wait for (connection closed)

    def wave(self, size: int) -> None:
        self.barrier, self.arrived, self.peak = size, 0, 0
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        found = re.search(r"/models/([^/:]+):", request.path)
        model = found.group(1) if found else (await request.json())["model"]
        await request.read()
        events = self.events[model]
        self.requests += 1
        transport = request.transport
        self.connections.add(transport.get_extra_info("peername") if transport else None)
        self.arrived += 1
        if self.arrived >= self.barrier:
            self.release.set()
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await asyncio.wait_for(self.release.wait(), 120)
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            for index, event in enumerate(events):
                if index:  # paced between events; the end follows the last one at once
                    await asyncio.sleep(self.pace)
                await response.write(event)
                self.sent += 1
        finally:
            self.active -= 1
        try:
            await response.write_eof()
        except ConnectionResetError:  # the proxy closed the connection before the end
            self.cut += 1
        return response


@dataclass
class Mismatch:
    case: str
    status: int
    got: bytes
    want: bytes


async def _client_stream(session: ClientSession, url: str, case: Case) -> tuple[int, bytes]:
    body = orjson.dumps(request_body(case))
    async with session.post(
        url + ENDPOINT[case.client], data=body, headers=request_headers(case)
    ) as r:
        return r.status, await r.read()


class Sampler:
    """Peak RSS of a process tree, sampled every `interval` seconds while running."""

    def __init__(self, root: int, interval: float = 0.02) -> None:
        self.root = root
        self.interval = interval
        self.peak = 0
        self.task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            self.peak = max(self.peak, proc.rss_bytes(proc.tree(self.root)))
            await asyncio.sleep(self.interval)

    def __enter__(self) -> Sampler:
        self.task = asyncio.ensure_future(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.task is not None
        self.task.cancel()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _raise_fd_limit(streams: int) -> None:
    """Room for a client and an upstream socket per stream, here and in the proxy (which
    inherits the limit): the soft limit goes up to what is needed, within the hard one."""
    import resource

    needed = 2 * streams + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            raise RuntimeError(f"{streams} streams need {needed} open files; the limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


async def soak(
    streams: int, impl: str, pace_ms: float, waves: int, workdir: Path
) -> dict[str, Any]:
    """Run the soak; returns its numbers and every mismatch (none when the proxy is right)."""
    _raise_fd_limit(streams)
    upstream = Upstream(pace_ms)
    app = web.Application(client_max_size=1 << 20)
    app.router.add_post("/{tail:.*}", upstream.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port, backlog=4096).start()
    upstream_url = f"http://127.0.0.1:{port}"
    config = workdir / "soak.toml"
    config.write_text(config_text(upstream_url), encoding="utf-8")
    signing = workdir / "signing-key"
    load_signing_key(str(signing))
    expected = {c.model: normalise(expected_bytes(c, config, signing, impl)) for c in CASES}
    env = {"HYDRA_SIGNING_KEY_FILE": str(signing), "HYDRA_PING_INTERVAL": "3600"}
    mismatches: list[Mismatch] = []
    result: dict[str, Any] = {"streams": streams, "waves": waves, "impl": impl,
                              "pace_ms": pace_ms, "cases": len(CASES)}  # fmt: skip

    def check(case: Case, status: int, body: bytes) -> None:
        if status != 200 or normalise(body) != expected[case.model]:
            mismatches.append(Mismatch(case.model, status, body, expected[case.model]))

    connector = TCPConnector(limit=0)
    timeout = ClientTimeout(total=180)
    try:
        with ProxyServer(upstream_url + "/v1", "--config", str(config), impl=impl, env=env) as px:
            assert px.process is not None
            root = px.process.pid
            async with ClientSession(connector=connector, timeout=timeout) as session:
                upstream.wave(1)  # warm-up: every case once (imports, caches, pools)
                for case in CASES:
                    check(case, *await _client_stream(session, px.url, case))
                await asyncio.sleep(1.0)
                baseline = proc.rss_bytes(proc.tree(root))
                sent_before = upstream.sent
                cpu_before = proc.cpu_seconds(proc.tree(root))
                peak, concurrent, seconds = 0, streams, 0.0
                for _ in range(waves):
                    upstream.wave(streams)
                    wave = [CASES[i % len(CASES)] for i in range(streams)]
                    started = time.monotonic()
                    with Sampler(root) as sampler:
                        replies = await asyncio.gather(
                            *(_client_stream(session, px.url, case) for case in wave)
                        )
                    seconds += time.monotonic() - started
                    peak = max(peak, sampler.peak)
                    concurrent = min(concurrent, upstream.peak)
                    for case, (status, body) in zip(wave, replies, strict=True):
                        check(case, status, body)
                cpu = proc.cpu_delta(cpu_before, proc.cpu_seconds(proc.tree(root)))
                events = upstream.sent - sent_before
    finally:
        await runner.cleanup()
    result.update(
        concurrent=concurrent,
        events=events,
        seconds=round(seconds, 2),
        baseline_mib=round(baseline / 2**20, 1),
        peak_mib=round(peak / 2**20, 1),
        rss_kib_per_stream=round((peak - baseline) / streams / 1024, 1),
        cpu_seconds=round(cpu, 2),
        cpu_ms_per_1000_events=round(cpu * 1000 / (events / 1000), 1) if events else None,
        cpu_ms_per_stream=round(cpu * 1000 / (streams * waves), 2),
        compared=streams * waves + len(CASES),
        upstream_requests=upstream.requests,
        upstream_connections=len(upstream.connections),
        upstream_replies_cut_at_the_end=upstream.cut,
        mismatches=len(mismatches),
    )
    result["first_mismatches"] = [
        {"case": m.case, "status": m.status, "got": m.got[:600].decode("utf-8", "replace"),
         "want": m.want[:600].decode("utf-8", "replace")}
        for m in mismatches[:3]
    ]  # fmt: skip
    return result


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "# Soak: concurrent streams through one worker",
        "",
        "`python benches/soak.py --write` (loopback; see the script's docstring for the method"
        " and the byte comparison's normalisation). Every client stream was byte-compared"
        " against its expected translation.",
        "",
        "| transducers | streams at once | waves | cases | events | mismatches | idle RSS | "
        "peak RSS | RSS per stream | proxy CPU | CPU per 1,000 events | CPU per stream |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['impl']} | {r['concurrent']} | {r['waves']} | {r['cases']} | {r['events']} | "
            f"{r['mismatches']} of {r['compared']} | {r['baseline_mib']} MiB | "
            f"{r['peak_mib']} MiB | {r['rss_kib_per_stream']} KiB | {r['cpu_seconds']} s | "
            f"{r['cpu_ms_per_1000_events']} ms | {r['cpu_ms_per_stream']} ms |"
        )
    first = results[0]
    lines.append("")
    for r in results:
        lines.append(
            f"- {r['impl']}: {r['upstream_requests']} upstream requests on"
            f" {r['upstream_connections']} connections (kept alive across waves);"
            f" {r['upstream_replies_cut_at_the_end']} upstream replies closed by the proxy"
            " before their end; wall time of the waves"
            f" {r['seconds']} s."
        )
    lines += [
        "",
        f"Upstream pacing {first['pace_ms']:g} ms between events; the proxy: one granian"
        " worker, default settings (usage ledger and metrics on) but a ping interval above"
        " the run. A stream here is short (about 50 events), so the CPU per event includes"
        " each request's own cost (reading and translating it, its token estimate, an"
        " upstream connection, its usage record) spread over few events; the RSS is the"
        " peak with every stream of a wave open at once, above the idle worker after a"
        " warm-up.",
        f"Machine: {os.cpu_count()} cores shared with the load generator and the upstream"
        " (one process beside the proxy), so CPU is the proxy's own (user + system) time.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--waves", type=int, default=2)
    parser.add_argument("--pace-ms", dest="pace_ms", type=float, default=3.0)
    parser.add_argument("--impl", choices=("native", "python", "both"), default="both")
    parser.add_argument("--write", action="store_true", help="write benches/results/soak.md")
    args = parser.parse_args()
    impls = ("native", "python") if args.impl == "both" else (args.impl,)
    results = []
    for impl in impls:
        with tempfile.TemporaryDirectory(prefix="hydra-soak-") as workdir:
            result = asyncio.run(soak(args.streams, impl, args.pace_ms, args.waves, Path(workdir)))
        results.append(result)
        print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    text = markdown(results)
    print(text)
    if args.write:
        (RESULTS / "soak.md").write_text(text, encoding="utf-8")
        (RESULTS / "soak.json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    return 0 if all(r["mismatches"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
