"""One `serve --workers 2` and no Redis: the provider bound holds across both workers
through the host store, and a worker's rest of a key is seen by the other."""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hydra_proxy.cluster.host import HostCounters
from hydra_proxy.cluster.rests import RestSync
from hydra_proxy.config import load
from hydra_proxy.config.keys import Key, KeyPool
from support.cluster_rig import CountingUpstream, stream_chat
from support.servers import ProxyServer

BOUND = 4
SESSIONS = 40


@pytest.mark.e2e
def test_a_provider_bound_holds_across_two_workers_of_one_serve() -> None:
    with CountingUpstream(pieces=6, delay=0.05) as upstream, ProxyServer(
        upstream.url + "/v1", "--workers", "2",
        env={"HYDRA_PROVIDER_STREAMS": str(BOUND), "HYDRA_QUEUE_TIMEOUT": "60"},
    ) as proxy:  # fmt: skip
        with ThreadPoolExecutor(SESSIONS) as pool:
            results = list(
                pool.map(
                    lambda i: stream_chat(
                        proxy.port, f"s{i}", {"x-claude-code-session-id": f"session-{i}"}
                    ),
                    range(SESSIONS),
                )
            )
        assert [r["status"] for r in results] == [200] * SESSIONS, proxy.log_tail()
        assert all(r["complete"] and r["text"].startswith(f"s{i} ") for i, r in enumerate(results))
        assert upstream.served == SESSIONS
        # Per worker it would be 8; shared, never more than the bound, and the bound is used.
        assert upstream.most == BOUND


def test_a_rest_one_worker_learns_reaches_the_other(tmp_path: Path) -> None:
    path = tmp_path / "counters.sqlite3"
    keys = [Key(0, "K1", "sk-first-key-000000001"), Key(1, "K2", "sk-second-key-00000002")]

    async def scenario() -> None:
        one, other = RestSync(HostCounters(path), None), RestSync(HostCounters(path), None)
        pool_one = one.share({"openai": KeyPool("openai", keys)})["openai"]
        pool_other = other.share({"openai": KeyPool("openai", keys)})["openai"]
        loop = asyncio.get_running_loop()
        assert pool_one.report(keys[0], 429, "30", loop.time()) == 30
        await asyncio.gather(*one._pending)
        assert pool_other.acquire(loop.time()) is keys[0]  # not known yet
        await other.sync_once()
        now = loop.time()
        assert [pool_other.acquire(now), pool_other.acquire(now)] == [keys[1], keys[1]]

    asyncio.run(scenario())


def test_cluster_settings_are_read_and_checked(tmp_path: Path) -> None:
    cfg = tmp_path / "hydra.toml"
    cfg.write_text('[cluster]\nredis_url = "redis://r:6379/0"\nlease_ttl = 4\n'
                   'on_store_failure = "closed"\n')  # fmt: skip
    settings = load({"config": str(cfg)}, {})
    assert (settings.redis_url, settings.lease_ttl, settings.on_store_failure) == (
        "redis://r:6379/0", 4.0, "closed",
    )  # fmt: skip
    assert load({}, {"HYDRA_REDIS_URL": "redis://e:6379/1"}).redis_url == "redis://e:6379/1"
    cfg.write_text('[cluster]\non_store_failure = "open"\n')
    with pytest.raises(Exception, match="on_store_failure"):
        load({"config": str(cfg)}, {})


def test_the_config_reference_documents_every_cluster_key() -> None:
    import re

    from hydra_proxy.config.schema import CLUSTER

    doc = (Path(__file__).resolve().parent.parent.parent / "docs" / "CONFIG.md").read_text("utf-8")
    table = doc[doc.index("\n### `[cluster]`\n") :]
    table = table[: table.find("\n### ", 1)]  # up to the next table's section
    assert re.findall(r"^\| `([a-z_]+)` \|", table, flags=re.M) == list(CLUSTER)


def _hold_and_die(path: str) -> None:
    """A worker that takes both slots of a bound and is killed holding them."""
    import os
    import signal

    async def hold() -> None:
        store = HostCounters(path)
        assert await store.acquire("p", 2, "dead-1", 60.0)
        assert await store.acquire("p", 2, "dead-2", 60.0)

    asyncio.run(hold())
    os.kill(os.getpid(), signal.SIGKILL)


def test_the_slots_of_a_killed_worker_are_freed_at_once_not_at_their_lease_end(
    tmp_path: Path,
) -> None:
    import multiprocessing

    path = str(tmp_path / "counters.sqlite3")
    worker = multiprocessing.get_context("spawn").Process(target=_hold_and_die, args=(path,))
    worker.start()
    worker.join(30)
    assert worker.exitcode == -9

    async def scenario() -> None:
        store = HostCounters(path)
        assert await store.held("p") == 2  # leases of 60 s, their holder gone
        assert await store.acquire("p", 2, "alive", 60.0)
        assert await store.held("p") == 1

    asyncio.run(scenario())


def test_a_redis_url_of_another_scheme_is_refused_and_check_shows_it_masked(
    tmp_path: Path,
) -> None:
    from hydra_proxy.config import ConfigError
    from hydra_proxy.config.check import describe

    with pytest.raises(ConfigError, match="HYDRA_REDIS_URL: not a Redis URL"):
        load({}, {"HYDRA_REDIS_URL": "http://cache:6379"})
    cfg = tmp_path / "hydra.toml"
    cfg.write_text('[cluster]\nredis_url = "unix:///run/redis.sock"\n')
    with pytest.raises(ConfigError, match=r"\[cluster\] redis_url: not a Redis URL"):
        load({"config": str(cfg)}, {})
    shown = describe(load({}, {"HYDRA_REDIS_URL": "redis://:s3cret-pass@cache:6379/0"}))
    assert (
        "cluster: redis://***@cache:6379/0, leases of 10 s, "
        "Redis unreachable after 0.25 s: local" in shown
    )
    assert "s3cret" not in shown
    sentinel = {
        "HYDRA_REDIS_SENTINELS": "s1:26379, s2:26379",
        "HYDRA_REDIS_SENTINEL_SERVICE": "mymaster",
        "HYDRA_REDIS_TIMEOUT": "0.1",
    }
    shown = describe(load({}, sentinel))
    assert "cluster: the primary 'mymaster' of Sentinel(s) s1:26379, s2:26379" in shown
    assert "Redis unreachable after 0.1 s" in shown
    with pytest.raises(ConfigError, match="no sentinel_service names the primary"):
        load({}, {"HYDRA_REDIS_SENTINELS": "s1:26379"})
    with pytest.raises(ConfigError, match="HYDRA_REDIS_TIMEOUT"):
        load({}, {"HYDRA_REDIS_URL": "redis://r:6379/0", "HYDRA_REDIS_TIMEOUT": "0"})


def test_the_host_store_folder_of_a_serve_that_died_is_removed_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    from hydra_proxy.cluster import host

    monkeypatch.setattr(host.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(host.os.path, "isdir", lambda p: False)  # no tmpfs: tmp_path
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    stale = tmp_path / f"hydra-counters-{gone.stdout.strip()}-x1"
    stale.mkdir()
    alive = tmp_path / f"hydra-counters-{os.getppid()}-x2"
    alive.mkdir()
    fresh = host.new_path()
    assert not stale.exists() and alive.exists()
    assert fresh.parent.name.startswith(f"hydra-counters-{os.getpid()}-")


def test_a_redis_unreachable_at_start_stops_a_closed_serve_and_warns_a_local_one() -> None:
    """Nothing listens on the Redis port: `closed` exits before listening with one line
    naming the URL (its password masked); `local` warns and serves on its own bounds."""
    import subprocess
    import sys

    from hydra_proxy.mock.server import free_port
    from support.servers import PYTHON_DIR

    url = f"redis://:s3cret-pass@127.0.0.1:{free_port()}/0"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYDRA_")}
    env.update(
        HYDRA_REDIS_URL=url,
        HYDRA_ON_STORE_FAILURE="closed",
        OPENAI_API_KEY="sk-upstream",
        PYTHONPATH=str(PYTHON_DIR),
    )
    port = str(free_port())
    done = subprocess.run(
        [sys.executable, "-m", "hydra_proxy", "serve", "--port", port, "--provider", "openai"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1
    masked = url.replace(":s3cret-pass@", ":***@").replace("redis://:", "redis://")
    assert lines[-1].startswith(f"hydra-proxy: the Redis at {masked} cannot be reached")
    assert "s3cret" not in done.stderr + done.stdout and "listening on" not in done.stderr
    with (
        CountingUpstream(pieces=2, delay=0.01) as upstream,
        ProxyServer(
            upstream.url + "/v1",
            env={
                "HYDRA_REDIS_URL": url,
                "HYDRA_PROVIDER_STREAMS": "2",
                "HYDRA_USAGE_LEDGER": "off",
            },
        ) as proxy,
    ):
        assert stream_chat(proxy.port, "local", {})["status"] == 200
        log = proxy.log_text()
        assert "cannot be reached" in log and "starting on this replica's own bounds" in log
        assert "s3cret" not in log
