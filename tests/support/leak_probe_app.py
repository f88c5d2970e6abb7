"""The product app behind a test-only probe, served by granian as `hydra-proxy serve` does.

``python leak_probe_app.py PORT CONFIG IMPL`` serves the proxy's App (settings loaded as the
CLI loads them: flags, environment, the config file) with one extra test-only route:
  GET /__test/leaks   {"pid": the worker's pid, "tasks": asyncio tasks alive in it}
  GET /__test/leaks?collect   the same, and "garbage": what a full collection found
                              unreachable, counted by type
so a leak count can see inside the worker without a debug endpoint in the product. Every
other request goes to the product app unchanged.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import sys
from collections import Counter
from typing import Any

import orjson

from hydra_proxy.config import Settings
from hydra_proxy.config.loading import environment, load
from hydra_proxy.server.app import App
from hydra_proxy.server.transport.run import kill_timeout

PROBE_PATH = "/__test/leaks"


class ProbedApp:
    def __init__(self, settings: Settings) -> None:
        self.app = App(settings)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == PROBE_PATH:
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
            found: dict[str, object] = {"pid": os.getpid(), "tasks": len(tasks)}
            if scope.get("query_string") == b"collect":
                found["garbage"] = _collect()
            body = orjson.dumps(found)
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def _collect() -> dict[str, int]:
    """What a full collection finds unreachable (objects only a reference cycle kept
    alive), counted by type."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return dict(Counter(_name(o) for o in gc.garbage))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def _name(found: object) -> str:
    if isinstance(found, type):  # a class made at run time: which one
        return f"class {found.__module__}.{found.__qualname__}"
    return type(found).__qualname__


def _load(settings: Settings) -> ProbedApp:
    return ProbedApp(settings)


def main() -> None:
    from granian.constants import Interfaces, Loops
    from granian.server import Server

    port, config, impl = sys.argv[1:4]
    logging.basicConfig(
        level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stdout
    )
    settings = load({"port": int(port), "config": config, "implementation": impl}, environment())
    # As server.transport.run.serve configures granian (one worker here: one process to count).
    server = Server(
        "leak_probe_app:ProbedApp",
        address=settings.host,
        port=settings.port,
        interface=Interfaces.ASGI,
        workers=1,
        loop=Loops.auto,
        backlog=4096,
        backpressure=16384,
        log_enabled=True,
        log_access=False,
        workers_kill_timeout=kill_timeout(settings),  # as serve's: past the grace
    )
    server.serve(target_loader=functools.partial(_load, settings), wrap_loader=False)


if __name__ == "__main__":
    main()
