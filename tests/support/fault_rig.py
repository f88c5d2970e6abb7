"""The fault-injection rig: a proxy (leak_probe_app under granian) whose providers of every
kind point at one FaultyUpstream, with small timeouts so stalls cost little.

Model names pick the provider and the upstream's behaviour: ``chat-<scenario>`` goes to a
Chat upstream, ``anth-`` to Anthropic, ``resp-`` to Responses, ``gem-`` to Gemini,
``refused-`` to a closed port and ``hole-`` to a port that never accepts (a connect
timeout).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hydra_proxy.mock.server import free_port
from support.faulty_upstream import UPSTREAM_KEY, FaultyUpstream
from support.leaks import LeakCounter, ProbedProxy
from support.wellformed import PATHS, call, request_body

# Small, so a stall past each costs well under a second (docs/CONFIG.md [server]).
CONNECT_TIMEOUT = 0.3
FIRST_BYTE_TIMEOUT = 0.5
IDLE_TIMEOUT = 0.5
# Past the retry backoff (at most 0.25 s for the one retry): an upstream error reaches the
# client as an HTTP error, not as an error event after pings have started the stream. The
# idle timeout is noticed at the next ping tick.
PING_INTERVAL = 1.0
MAX_BODY_BYTES = 256 * 1024
MAX_EVENT_BYTES = 1024 * 1024
PROXY_KEY = "hydra-client-key-for-tests"

PREFIXES = {
    "chat": "fchat",
    "anth": "fanthropic",
    "resp": "fresponses",
    "gem": "fgemini",
    "refused": "frefused",
    "hole": "fhole",
}


def config_text(upstream: FaultyUpstream, closed_port: int, shutdown_grace: float = 3.0) -> str:
    kinds = {
        "fchat": ("chat", f"{upstream.url}/v1"),
        "fanthropic": ("anthropic", upstream.url),
        "fresponses": ("responses", f"{upstream.url}/v1"),
        "fgemini": ("gemini", f"{upstream.url}/v1beta"),
        "frefused": ("chat", f"http://127.0.0.1:{closed_port}/v1"),
        "fhole": ("chat", f"{upstream.blackhole_url}/v1"),
    }
    lines = [
        "[server]",
        f"connect_timeout = {CONNECT_TIMEOUT}",
        f"first_byte_timeout = {FIRST_BYTE_TIMEOUT}",
        f"idle_timeout = {IDLE_TIMEOUT}",
        f"ping_interval = {PING_INTERVAL}",
        "retries = 1",
        f"max_body_bytes = {MAX_BODY_BYTES}",
        f"max_event_bytes = {MAX_EVENT_BYTES}",
        f"shutdown_grace = {shutdown_grace}",
        "",
    ]
    for name, (kind, url) in kinds.items():
        lines += [
            f"[providers.{name}]",
            f'kind = "{kind}"',
            f'base_url = "{url}"',
            'api_key_env = "FAULT_UPSTREAM_KEY"',
            "",
        ]
    for prefix, provider in PREFIXES.items():
        lines += ["[[routes]]", f'match = "{prefix}-*"', f'provider = "{provider}"', ""]
    return "\n".join(lines)


@dataclass
class Rig:
    proxy: ProbedProxy
    upstream: FaultyUpstream
    leaks: LeakCounter
    impl: str

    @property
    def port(self) -> int:
        return self.proxy.port


@contextlib.contextmanager
def rig(
    impl: str,
    *,
    proxy_keys: bool = False,
    env: dict[str, str] | None = None,
    shutdown_grace: float = 3.0,
) -> Iterator[Rig]:
    with FaultyUpstream() as upstream, tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "hydra.toml"
        config.write_text(config_text(upstream, free_port(), shutdown_grace), encoding="utf-8")
        variables = {"FAULT_UPSTREAM_KEY": UPSTREAM_KEY, **(env or {})}
        if proxy_keys:
            variables["HYDRA_PROXY_KEYS"] = f"other-key,{PROXY_KEY}"
        with ProbedProxy(config, impl=impl, env=variables) as proxy:
            r = Rig(proxy, upstream, LeakCounter(proxy, upstream), impl)
            warm_up(r, PROXY_KEY if proxy_keys else None)
            yield r


def warm_up(r: Rig, key: str | None) -> None:
    """One reply per client protocol and upstream kind, streamed and not: what a worker
    opens once (the usage ledger's file, caches) is open before any count is taken."""
    headers = {"x-api-key": key} if key else {}
    for client in PATHS:
        for prefix in ("chat", "anth", "resp", "gem"):
            for stream in (True, False):
                body = request_body(client, f"{prefix}-ok.warmup", stream=stream)
                got = call(r.port, PATHS[client], body, headers)
                assert got.status == 200, (client, prefix, got.status, got.body[:300])
