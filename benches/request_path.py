"""The modules a streamed request crosses before its first upstream byte, in order.

    .venv/bin/python benches/request_path.py            # the list and its length
    .venv/bin/python benches/request_path.py --json     # the same, as JSON

Runs the proxy's ASGI app in this process (a Chat provider on a local raw-socket upstream
that answers one short stream per request, usage accounting on as by default), sends one
warm-up request, then the measured one: Claude Code's real request
(tests/fixtures/claude-code/request-after-tool-result.json) as a streamed
``POST /v1/messages`` routed to the Chat provider. A `sys.setprofile` hook records every
Python function entered from the app's ASGI call until the upstream client writes the
request (`_Connection.begin` in server/transport/http1.py); the count is the distinct
``hydra_proxy`` modules among them, in the order first entered. Functions without a
module file count for the module whose globals they run in (a dataclass's generated
``__init__``: the module defining the class); the native extension is not counted. Also
printed: how many calls on that path go from one hydra_proxy module into another.

tests/request/test_request_path.py runs this script and bounds the count.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests/fixtures/claude-code/request-after-tool-result.json"
MODEL = "bench-chat"

_STREAM = (
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


async def _upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A keep-alive Chat upstream: every POST gets the same short stream."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                + f"content-length: {len(_STREAM)}\r\n\r\n".encode()
                + _STREAM
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


def _module(frame: FrameType, root: str) -> str | None:
    """The hydra_proxy module whose code `frame` runs: its file's, or for code generated
    at import time (a dataclass's ``__init__``) the module whose globals it runs in."""
    filename = frame.f_code.co_filename
    if filename.startswith(root) and filename.endswith(".py"):
        dotted = filename[len(root) - len("hydra_proxy/") : -3].replace(os.sep, ".")
        return dotted.removesuffix(".__init__")
    if filename.startswith("<"):
        name = frame.f_globals.get("__name__")
        if isinstance(name, str) and name.startswith("hydra_proxy."):
            return name
    return None


async def _request(
    app: Any, body: bytes, trace: list[str] | None, crossings: list[int] | None = None
) -> int:
    """One request through `app`; with `trace`, the modules entered before the first
    upstream byte are appended to it (and to `crossings`, the calls from one hydra_proxy
    module into another). Returns the response status."""
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/messages",
        "raw_path": b"/v1/messages",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"anthropic-version", b"2023-06-01"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 3456),
    }
    done = asyncio.Event()
    sent_body = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif not message.get("more_body", False):
            done.set()

    import hydra_proxy

    root = str(Path(hydra_proxy.__file__).resolve().parent) + os.sep
    seen: set[str] = set()
    tracing = trace is not None

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal tracing
        if event != "call" or not tracing:
            return
        code = frame.f_code
        module = _module(frame, root)
        if module is None:
            return
        if module not in seen:
            seen.add(module)
            assert trace is not None
            trace.append(module)
        caller = frame.f_back
        if crossings is not None and caller is not None:
            outer = _module(caller, root)
            if outer is not None and outer != module:
                crossings.append(1)
        if module == "hydra_proxy.server.transport.http1" and code.co_name == "begin":
            tracing = False  # the request is being written: the first upstream byte

    if trace is not None:
        sys.setprofile(profile)
    try:
        await app(scope, receive, send)
    finally:
        sys.setprofile(None)
    done.set()
    return status


async def measure() -> tuple[list[str], int]:
    """The distinct hydra_proxy modules of one warm streamed request, in order, and the
    calls it makes from one of them into another."""
    server = await asyncio.start_server(_upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    home = tempfile.mkdtemp(prefix="hydra-path-")
    config = Path(home) / "hydra.toml"
    config.write_text(
        "[providers.chat]\n"
        'kind = "chat"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\n'
        'api_key_env = "HYDRA_PATH_UPSTREAM_KEY"\n'
        "[[routes]]\n"
        f'match = "{MODEL}"\n'
        'provider = "chat"\n'
    )
    os.environ["HOME"] = home
    os.environ["HYDRA_PATH_UPSTREAM_KEY"] = "sk-path-upstream-key-0123"
    os.environ["HYDRA_SIGNING_KEY_FILE"] = str(Path(home) / "signing-key")
    from hydra_proxy.config.loading import environment, load
    from hydra_proxy.server.app import App

    settings = load({"config": str(config)}, environment())
    app = App(settings)
    lifespan: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await lifespan.put({"type": "lifespan.startup"})
    started = asyncio.Event()

    async def lifespan_send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()
        elif message["type"] == "lifespan.startup.failed":
            raise RuntimeError(message.get("message"))

    running = asyncio.ensure_future(
        app({"type": "lifespan", "asgi": {"version": "3.0"}}, lifespan.get, lifespan_send)
    )
    await started.wait()
    request = orjson.loads(FIXTURE.read_bytes())["body"]
    request["model"] = MODEL
    request["stream"] = True
    body = orjson.dumps(request)
    try:
        status = await _request(app, body, None)  # warm: the connection pool, lazy caches
        assert status == 200, status
        trace: list[str] = []
        crossings: list[int] = []
        status = await _request(app, body, trace, crossings)
        assert status == 200, status
    finally:
        await lifespan.put({"type": "lifespan.shutdown"})
        await running
        server.close()
    return trace, len(crossings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    trace, crossings = asyncio.run(measure())
    if args.json:
        print(orjson.dumps({"modules": trace, "count": len(trace), "calls": crossings}).decode())
    else:
        for i, module in enumerate(trace, 1):
            print(f"{i:3d}  {module}")
        print(f"{len(trace)} modules before the first upstream byte")
        print(f"{crossings} calls from one of them into another")
    return 0


if __name__ == "__main__":
    sys.exit(main())
