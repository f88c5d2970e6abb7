"""Misbehaving clients on raw sockets: they hang up mid-stream, read a few bytes a second,
or send their body a byte at a time (slow loris). Well-behaved requests go through
wellformed.call or the official SDKs."""

from __future__ import annotations

import contextlib
import socket
import time

from support.wellformed import Received


def wire(path: str, body: bytes, headers: dict[str, str], *, length: int | None = None) -> bytes:
    """A POST's head (with `length` as its Content-Length, default the body's) and body."""
    lines = [f"POST {path} HTTP/1.1", "host: 127.0.0.1", "content-type: application/json"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    lines.append(f"content-length: {len(body) if length is None else length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def connect(port: int, *, receive_buffer: int | None = None) -> socket.socket:
    sock = socket.socket()
    if receive_buffer is not None:  # before connect: the window is set at the handshake
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    return sock


def hang_up_after(
    port: int, request: bytes, marker: bytes, *, limit: int = 1 << 20, wait: float = 0.0
) -> bytes:
    """Send `request`, read until `marker` has arrived (the stream has begun; an empty
    marker: wait `wait` s instead), then close the socket; returns what was read."""
    with connect(port) as sock:
        sock.sendall(request)
        seen = b""
        if not marker:
            time.sleep(wait)
            limit = 0
        while marker not in seen and len(seen) < limit:
            data = sock.recv(65536)
            if not data:
                break
            seen += data
        # RST rather than FIN: the client is gone, not half-closed.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    return seen


def read_slowly(
    port: int,
    request: bytes,
    *,
    seconds: float,
    bytes_per_second: int,
) -> int:
    """Send `request`, then read `bytes_per_second` for `seconds` through a small receive
    window; hangs up after. Returns the bytes read."""
    with connect(port, receive_buffer=4096) as sock:
        sock.sendall(request)
        read = 0
        tick = 0.1
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            data = sock.recv(max(1, int(bytes_per_second * tick)))
            if not data:
                break
            read += len(data)
            time.sleep(tick)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    return read


def slow_loris(
    port: int, path: str, body: bytes, headers: dict[str, str], *, interval: float, wait: float
) -> Received | None:
    """Send the head, then the body one byte every `interval` s; stop at the first byte of
    an answer. None when no answer came within `wait` s (the server is still waiting)."""
    with connect(port) as sock:
        sock.sendall(wire(path, b"", headers, length=len(body)))
        sock.settimeout(interval)
        deadline = time.monotonic() + wait
        answer = b""
        for byte in body:
            if time.monotonic() > deadline:
                return None
            try:
                sock.sendall(bytes([byte]))
            except OSError:  # the server closed the upload: read its answer
                break
            with contextlib.suppress(TimeoutError):
                answer = sock.recv(65536)
                if answer:
                    break
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        with contextlib.suppress(TimeoutError, OSError):
            while b"\r\n\r\n" not in answer:
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
        return parse_response(answer) if answer else None


def parse_response(data: bytes) -> Received:
    """A whole response read off a socket (Content-Length framed, as the proxy's errors are)."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    return Received(status, headers, body)
