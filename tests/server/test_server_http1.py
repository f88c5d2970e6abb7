"""The lean HTTP/1.1 upstream client against scripted raw servers: framing, keep-alive,
bounded heads and error bodies, gzip, TLS with SNI and a CONNECT tunnel through a proxy.
"""

from __future__ import annotations

import asyncio
import gzip
import shutil
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from hydra_proxy.config import Settings
from hydra_proxy.server.pipeline.attempts import post, start
from hydra_proxy.server.pipeline.reply import UpstreamHTTPError
from hydra_proxy.server.transport.http1 import (
    INFLATE_ALLOWANCE,
    INFLATE_RATIO,
    INFLATE_STEP,
    MAX_HEAD_BYTES,
    H1Client,
    H1Error,
    H1Response,
)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def post_once(client: H1Client, url: str) -> H1Response:
    """One POST as the attempts module sends it, with no retry."""
    return await post(client, Settings(retries=0), start(client, url, {}, b"{}"))


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head, await reader.readexactly(length)


async def serve(handler: Handler, context: ssl.SSLContext | None = None) -> asyncio.Server:
    return await asyncio.start_server(handler, "127.0.0.1", 0, ssl=context)


def port(server: asyncio.Server) -> int:
    return int(server.sockets[0].getsockname()[1])


async def collect(response: H1Response) -> bytes:
    parts: list[bytes] = []
    ended = asyncio.get_running_loop().create_future()

    def end(exc: BaseException | None) -> None:
        if not ended.done():
            ended.set_result(exc)

    response.stream(parts.append, end)
    failure = await ended
    if failure is not None:
        raise failure
    return b"".join(parts)


def test_chunked_body_split_anywhere_arrives_whole_and_the_connection_is_reused() -> None:
    events = [b'data: {"n":%d}\n\n' % i for i in range(50)]
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
    wire = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    wire += b"transfer-encoding: chunked\r\n\r\n" + chunked
    connections = 0
    requests: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while not reader.at_eof():
            try:
                head, body = await read_request(reader)
            except asyncio.IncompleteReadError:
                break
            requests.append(head + body)
            for i in range(0, len(wire), 7):  # odd slices: framing split everywhere
                writer.write(wire[i : i + 7])
                await writer.drain()
        writer.close()

    async def run() -> None:
        server = await serve(handler)
        client = H1Client(connect_timeout=5)
        url = f"http://127.0.0.1:{port(server)}/v1/chat/completions"
        for _ in range(3):
            request = client.prepare(url, {"authorization": "Bearer k"}, b'{"a":1}')
            response = await client.send(request)
            await response.head
            assert response.status == 200
            assert response.headers["content-type"] == "text/event-stream"
            assert await collect(response) == b"".join(events)
            response.release()
        client.close()
        server.close()

    asyncio.run(run())
    assert connections == 1  # kept alive across the three requests
    assert requests[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"authorization: Bearer k\r\n" in requests[0]
    assert requests[0].endswith(b"content-length: 7\r\n\r\n" + b'{"a":1}')


def test_the_chunks_of_one_read_reach_the_sink_as_one_piece() -> None:
    """One transducer feed (and one client send) per upstream read, however many HTTP
    chunks it framed."""
    events = [b'data: {"n":%d}\n\n' % i for i in range(200)]
    wire = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
    wire += b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(wire)  # one write: a few reads at most on the other side
        await writer.drain()
        writer.close()

    async def run() -> list[bytes]:
        server = await serve(handler)
        client = H1Client(connect_timeout=5)
        response = await client.send(client.prepare(f"http://127.0.0.1:{port(server)}/", {}, b""))
        await response.head
        parts: list[bytes] = []
        ended = asyncio.get_running_loop().create_future()
        response.stream(parts.append, ended.set_result)
        assert await ended is None
        client.close()
        server.close()
        return parts

    parts = asyncio.run(run())
    assert b"".join(parts) == b"".join(events)
    assert len(parts) < len(events) // 10


def test_a_pooled_connection_closed_by_the_upstream_is_replaced() -> None:
    """The upstream closes after each reply without saying so: the next request still
    succeeds (a fresh connection), and that costs no retry attempt."""
    served = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        await read_request(reader)
        served += 1
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    async def run() -> None:
        server = await serve(handler)
        upstream = H1Client(connect_timeout=10)
        url = f"http://127.0.0.1:{port(server)}/x"
        for _ in range(3):
            response = await post_once(upstream, url)
            assert await response.read(100) == b"ok"
            response.release()
            await asyncio.sleep(0.05)  # the upstream's FIN arrives
        upstream.close()
        server.close()

    asyncio.run(run())
    assert served == 3


def test_error_body_gzip_decoded_and_bounded() -> None:
    big = b'{"error":{"type":"rate_limit_error","message":"' + b"x" * 200_000 + b'"}}'
    packed = gzip.compress(big)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 30\r\ncontent-encoding: gzip\r\n"
            b"content-length: %d\r\n\r\n" % len(packed) + packed
        )
        await writer.drain()
        writer.close()

    async def run() -> UpstreamHTTPError:
        server = await serve(handler)
        upstream = H1Client(connect_timeout=10)
        try:
            await post_once(upstream, f"http://127.0.0.1:{port(server)}/x")
        except UpstreamHTTPError as exc:
            return exc
        finally:
            upstream.close()
            server.close()
        raise AssertionError("no error")

    exc = asyncio.run(run())
    assert exc.status == 429 and exc.retry_after == "30"
    assert exc.body.startswith(b'{"error":{"type":"rate_limit_error"')
    assert len(exc.body) == 64 * 1024  # MAX_ERROR_BODY: the rest is dropped


def test_an_oversized_response_head_is_refused() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n")
        for i in range(MAX_HEAD_BYTES // 1000 + 2):
            writer.write(b"x-filler-%d: %s\r\n" % (i, b"y" * 1000))
        writer.write(b"\r\n")
        await writer.drain()
        writer.close()

    async def run() -> None:
        server = await serve(handler)
        client = H1Client(connect_timeout=5)
        response = await client.send(client.prepare(f"http://127.0.0.1:{port(server)}/", {}, b""))
        with pytest.raises(H1Error, match="head exceeds"):
            await response.head
        client.close()
        server.close()

    asyncio.run(run())


def test_a_body_delimited_by_the_end_of_the_connection_and_a_cut_chunked_one() -> None:
    replies = [
        b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nall of it",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n",  # cut
    ]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(replies.pop(0))
        await writer.drain()
        writer.close()

    async def run() -> None:
        server = await serve(handler)
        client = H1Client(connect_timeout=5)
        url = f"http://127.0.0.1:{port(server)}/"
        response = await client.send(client.prepare(url, {}, b""))
        await response.head
        assert await collect(response) == b"all of it"
        response = await client.send(client.prepare(url, {}, b""))
        await response.head
        parts: list[bytes] = []
        ended = asyncio.get_running_loop().create_future()
        response.stream(parts.append, ended.set_result)
        failure = await ended
        assert isinstance(failure, H1Error) and parts == [b"hello"]
        client.close()
        server.close()

    asyncio.run(run())


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-days", "1", "-subj", "/CN=upstream.test", "-keyout", str(key),
            "-out", str(cert), "-addext", "subjectAltName=DNS:upstream.test",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def test_tls_through_a_connect_proxy_with_sni(
    certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """https via HTTPS_PROXY: a CONNECT tunnel to the upstream's name, then TLS inside it
    with that name as SNI, checked against the certificate."""
    cert, key = certificate
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    seen_sni: list[str | None] = []

    def sni(sock: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        seen_sni.append(name)

    server_context.sni_callback = sni  # type: ignore[assignment]
    tunnels: list[bytes] = []

    async def upstream_handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecret")
        await writer.drain()
        writer.close()

    async def run() -> tuple[bytes, int]:
        upstream = await serve(upstream_handler, server_context)
        upstream_port = port(upstream)

        async def proxy_handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            tunnels.append(head.split(b"\r\n", 1)[0])
            target_r, target_w = await asyncio.open_connection("127.0.0.1", upstream_port)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

            async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
                dst.close()

            await asyncio.gather(pipe(reader, target_w), pipe(target_r, writer))

        proxy = await serve(proxy_handler)
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port(proxy)}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        client_context = ssl.create_default_context(cafile=str(cert))
        client = H1Client(connect_timeout=5, ssl_context=client_context)
        url = f"https://upstream.test:{upstream_port}/v1/messages"
        response = await client.send(client.prepare(url, {}, b"{}"))
        await response.head
        body = await response.read(100)
        client.close()
        proxy.close()
        upstream.close()
        return body, upstream_port

    body, upstream_port = asyncio.run(run())
    assert body == b"secret"
    assert seen_sni == ["upstream.test"]
    assert tunnels == [b"CONNECT upstream.test:%d HTTP/1.1" % upstream_port]


def test_no_proxy_bypasses_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "internal.test,127.0.0.1")
    client = H1Client(connect_timeout=1)
    assert client.prepare("http://internal.test/x", {}, b"").proxy is None
    assert client.prepare("https://api.example.test/x", {}, b"").proxy == "http://127.0.0.1:9"
    via = client.prepare("http://api.example.test/v1/x?q=1", {}, b"")
    assert via.wire.startswith(b"POST http://api.example.test/v1/x?q=1 HTTP/1.1\r\n")


def test_proxy_credentials_and_header_line_breaks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://user:p%40ss@127.0.0.1:9")
    client = H1Client(connect_timeout=1)
    wire = client.prepare("http://api.example.test/x", {}, b"").wire
    assert b"proxy-authorization: Basic dXNlcjpwQHNz\r\n" in wire  # user:p@ss
    with pytest.raises(H1Error, match="line break"):
        client.prepare("http://api.example.test/x", {"anthropic-beta": "a\r\nx-evil: 1"}, b"")


def test_a_non_streamed_reply_cut_short_is_a_502() -> None:
    from hydra_proxy.errors import ProxyError
    from hydra_proxy.server.pipeline.reply import read_json

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{"id":"chatcmpl-1",')
        await writer.drain()
        writer.close()

    async def run() -> ProxyError:
        server = await serve(handler)
        upstream = H1Client(connect_timeout=10)
        response = await post_once(upstream, f"http://127.0.0.1:{port(server)}/x")
        try:
            await read_json(response, 1 << 20)
        except ProxyError as exc:
            return exc
        finally:
            upstream.close()
            server.close()
        raise AssertionError("no error")

    exc = asyncio.run(run())
    assert exc.status == 502 and "broke off" in str(exc)


def _gzip_server(packed: bytes) -> Handler:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
            b"content-length: %d\r\n\r\n" % len(packed)
        )
        for i in range(0, len(packed), 16384):
            writer.write(packed[i : i + 16384])
            await writer.drain()
        writer.close()

    return handler


def _stream_from(handler: Handler) -> tuple[list[int], BaseException | None]:
    """The sizes of the pieces a streamed response delivered, and how it ended."""

    async def run() -> tuple[list[int], BaseException | None]:
        server = await serve(handler)
        client = H1Client(connect_timeout=5)
        try:
            response = await client.send(
                client.prepare(f"http://127.0.0.1:{port(server)}/", {}, b"{}")
            )
            await response.head
            sizes: list[int] = []
            ended: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
            response.stream(lambda piece: sizes.append(len(piece)), ended.set_result)
            return sizes, await ended
        finally:
            client.close()
            server.close()

    return asyncio.run(run())


def test_a_gzip_bomb_is_inflated_in_pieces_and_dropped_past_its_bound() -> None:
    packed = gzip.compress(bytes(64 * 1024 * 1024), compresslevel=1)  # 64 MiB in 280 kB
    sizes, ended = _stream_from(_gzip_server(packed))
    assert isinstance(ended, H1Error) and "inflates more than 100 times" in str(ended)
    assert max(sizes) <= INFLATE_STEP
    assert sum(sizes) <= INFLATE_ALLOWANCE + INFLATE_RATIO * len(packed)


def test_a_compressed_stream_of_ordinary_events_arrives_whole() -> None:
    events = b"".join(
        b'data: {"choices":[{"index":0,"delta":{"content":"word %d "}}]}\n\n' % i
        for i in range(100_000)
    )  # 6 MB of SSE, which gzip shrinks about 15 times
    sizes, ended = _stream_from(_gzip_server(gzip.compress(events, compresslevel=6)))
    assert ended is None and sum(sizes) == len(events)
