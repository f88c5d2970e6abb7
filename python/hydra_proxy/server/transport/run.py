"""Serving the app with granian (one process per worker).

Hot reload: granian's main process takes SIGHUP and respawns every worker gracefully
(in-flight streams finish on the old worker), calling its reload hooks first. The hook
here re-reads the config in the main process (`config.reload`: validated fully, and
through every check a start runs: client keys, a public bind without them, the signing
key, provider keys); the respawned workers load the app from the new settings, key pools
rebuilt. A config that fails any check is refused with the same errors as at start
(logged), and the workers come back with the settings in force. Nothing is checked on the
request path.
"""

from __future__ import annotations

import functools
import logging
import math
import shutil
from collections.abc import Callable

from ... import logs
from ...config import ConfigError, Settings, reload
from ...usage.metrics import multiprocess_dir, setup_multiprocess_dir
from ..app import App
from .shutdown import KILL_MARGIN

# Request heads (granian's HTTP/1 settings; hyper enforces them): the head must arrive
# within 30 s, and fit hyper's read buffer (a larger head is answered 431 and the
# connection closed). hyper also refuses more than 100 header fields (431). Claude Code's
# heads are about 2 KB.
HEADER_READ_TIMEOUT_MS = 30_000
MAX_HEAD_BUFFER = 64 * 1024

log = logging.getLogger("hydra_proxy")


def destinations(settings: Settings) -> dict[str, str]:
    """Where requests go: each provider's base URL (the target provider's first)."""
    target = settings.target_provider
    ordered = sorted(settings.providers.values(), key=lambda p: p.name != target)
    return {p.name: p.base_url for p in ordered}


class SettingsHolder:
    """The settings in force, replaced on SIGHUP in the main process; the worker loader
    reads it when granian (re)spawns a worker. `adjust`: what the start did to the settings
    read (the embedded mock in place of a provider without a key), done to a reload's."""

    def __init__(
        self, settings: Settings, adjust: Callable[[Settings], Settings] | None = None
    ) -> None:
        self.settings = settings
        self.adjust = adjust

    def reload(self) -> None:
        try:
            new = reload(None, self.settings)
            if self.adjust is not None:
                new = self.adjust(new)
        except ConfigError as exc:
            log.error(
                "config reload refused, the running config stays: %s",
                " | ".join(str(problem).replace("\n  -> ", " -> ") for problem in exc.problems),
            )
            return
        before, after = destinations(self.settings), destinations(new)
        self.settings = new
        log.warning("config reloaded from %s", new.config_file or "flags and environment")
        if before != after:
            changed = [
                f"{name}: {before.get(name, 'none')} -> {url}"
                for name, url in after.items()
                if before.get(name) != url
            ] + [f"{name}: {url} -> none" for name, url in before.items() if name not in after]
            log.warning("the reload changes where requests go: %s", "; ".join(changed))


def _watch_live_config(holder: SettingsHolder) -> None:
    """With an admin API (or a live config stored already), reload when the live config
    in the key store moves (team.live_config), as SIGHUP does."""
    import os

    from ...team import live_config, service

    settings = holder.settings
    if settings.overlay_version or service.configured(settings, os.environ):
        live_config.watch(lambda: holder.settings, service.refresh_interval(os.environ))


def _load_app(holder: SettingsHolder) -> App:
    return App(holder.settings)


def kill_timeout(settings: Settings) -> int:
    """Seconds granian waits for a stopping worker before it kills it: past the grace
    (server/transport/shutdown.py ends the streams then), time for their closing events."""
    return math.ceil(settings.shutdown_grace + KILL_MARGIN)


def serve(
    settings: Settings,
    *,
    log_level: str = "info",
    adjust: Callable[[Settings], Settings] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM; in-flight streams get `shutdown_grace` seconds to finish."""
    from granian.constants import Interfaces, Loops
    from granian.http import HTTP1Settings
    from granian.log import LogLevels
    from granian.server import Server

    logging.getLogger("hydra_proxy").setLevel(log_level.upper())
    server = Server(
        "hydra_proxy.server.app:App",  # a name for the logs: the app comes from target_loader
        address=settings.host,
        port=settings.port,
        interface=Interfaces.ASGI,
        workers=settings.workers,
        loop=Loops.auto,
        backlog=4096,
        backpressure=16384,  # concurrent requests per worker: agents hold long streams
        log_enabled=True,
        log_level=LogLevels(log_level),
        log_access=False,
        log_dictconfig=logs.granian_config(),  # its lines escaped as ours are
        workers_kill_timeout=kill_timeout(settings),  # then a busy worker is killed
        http1_settings=HTTP1Settings(
            header_read_timeout=HEADER_READ_TIMEOUT_MS, max_buffer_size=MAX_HEAD_BUFFER
        ),
    )
    holder = SettingsHolder(settings, adjust)
    server.on_reload(holder.reload)
    _watch_live_config(holder)
    # The workers' shared counters (hydra_proxy.cluster), named to them in the environment.
    from ...cluster import prepare_serve

    store_dir = prepare_serve(settings)
    # Several workers count metrics in shared files; the env var is inherited by them.
    own_dir = None
    if settings.workers > 1 and multiprocess_dir() is None:
        own_dir = setup_multiprocess_dir()
    try:
        # A module-level function in a partial stays picklable for non-fork start methods.
        server.serve(target_loader=functools.partial(_load_app, holder), wrap_loader=False)
    finally:
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)
        if store_dir is not None:
            shutil.rmtree(store_dir, ignore_errors=True)
