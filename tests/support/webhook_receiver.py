"""A webhook receiver on loopback for the spend-alert tests: records every POST (path,
headers, JSON body) and answers each with the next scripted status (then 200)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import orjson


class Receiver:
    def __init__(self, statuses: list[int] | None = None) -> None:
        self.posts: list[tuple[str, dict[str, str], Any]] = []
        self.statuses = list(statuses or [])
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                with receiver._lock:
                    receiver.posts.append(
                        (self.path, {k.lower(): v for k, v in self.headers.items()},
                         orjson.loads(raw))
                    )  # fmt: skip
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def bodies(self) -> list[Any]:
        with self._lock:
            return [body for _, _, body in self.posts]

    def wait_for(self, count: int, timeout: float = 15.0) -> list[Any]:
        """The bodies once `count` arrived (or the timeout passed)."""
        deadline = time.monotonic() + timeout
        while len(self.posts) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.bodies()

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.shutdown()
        self.server.server_close()
