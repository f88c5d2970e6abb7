"""A minimal ASGI app wiring UsageService the way the proxy server does, served by granian.

``python usage_granian_app.py PORT WORKERS LEDGER_URL PROMETHEUS_DIR`` serves:
  POST /finish       body: a UsageRecord as JSON -> usage.finish(record); replies the pid
  GET  /pid          the pid of the worker that answers
  GET  /metrics      the merged Prometheus text of all workers
  GET  /dashboard... the usage page
Startup creates the service in each worker (lifespan), shutdown closes it (flushes the
ledger). The main process sets up the multiprocess directory before granian forks.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

import orjson

from hydra_proxy.usage.metrics import setup_multiprocess_dir
from hydra_proxy.usage.record import UsageRecord
from hydra_proxy.usage.service import UsageService


class App:
    def __init__(self, ledger_url: str) -> None:
        self.ledger_url = ledger_url
        self.usage: UsageService | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self.usage = UsageService.start(
                        ledger_url=self.ledger_url,
                        # Never flushed by size or time here: only the clean shutdown
                        # (close) writes the ledger, which the test then checks.
                        ledger_options={"batch_size": 10_000, "flush_interval": 3600},
                    )
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    if self.usage is not None:
                        self.usage.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        assert self.usage is not None
        path = scope["path"]
        if scope["method"] == "POST" and path == "/finish":
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            self.usage.finish(UsageRecord(**orjson.loads(body)))
            status, content_type, payload = 200, "text/plain", str(os.getpid()).encode()
        elif path == "/pid":  # which worker answered (the test waits for both)
            status, content_type, payload = 200, "text/plain", str(os.getpid()).encode()
        elif path == "/metrics":
            status, content_type, payload = self.usage.metrics_response()
        elif path.startswith("/dashboard"):
            status, content_type, payload = self.usage.dashboard(
                path, scope.get("query_string", b"").decode()
            )
        else:
            status, content_type, payload = 404, "text/plain", b"no"
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", content_type.encode())],
            }
        )
        await send({"type": "http.response.body", "body": payload})


def _load(ledger_url: str) -> App:
    return App(ledger_url)


def main() -> None:
    from granian.constants import Interfaces
    from granian.server import Server

    port, workers, ledger_url, prom_dir = sys.argv[1:5]
    setup_multiprocess_dir(prom_dir)
    server = Server(
        "usage_granian_app:App",
        address="127.0.0.1",
        port=int(port),
        interface=Interfaces.ASGI,
        workers=int(workers),
        log_enabled=False,
        workers_kill_timeout=30,
    )
    server.serve(target_loader=functools.partial(_load, ledger_url), wrap_loader=False)


if __name__ == "__main__":
    main()
