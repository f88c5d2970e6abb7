"""Serving the app with granian (one process per worker)."""

from __future__ import annotations

import functools
import logging
import shutil

from ..config import Settings
from ..usage.metrics import multiprocess_dir, setup_multiprocess_dir
from .app import App


def _load_app(settings: Settings) -> App:
    return App(settings)


def serve(settings: Settings, *, log_level: str = "info") -> None:
    """Serve until SIGINT/SIGTERM; in-flight streams get `shutdown_grace` seconds to finish."""
    from granian.constants import Interfaces, Loops
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
        workers_kill_timeout=int(settings.shutdown_grace),
    )
    # Several workers count metrics in shared files; the env var is inherited by them.
    own_dir = None
    if settings.workers > 1 and multiprocess_dir() is None:
        own_dir = setup_multiprocess_dir()
    try:
        # A module-level function in a partial stays picklable for non-fork start methods.
        server.serve(target_loader=functools.partial(_load_app, settings), wrap_loader=False)
    finally:
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)
