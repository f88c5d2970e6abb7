"""Images and text-only models: the `vision` column, the `images` route, and the
placeholder an image becomes before a model that cannot read it (logged once per session),
in the translation and end to end through the proxy."""

from __future__ import annotations

import base64
import copy
import http.client
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from hydra_proxy.canonical.text_only import (
    IMAGE_PLACEHOLDER,
    without_images,
    without_openai_images,
)
from hydra_proxy.config.presets import preset_row
from hydra_proxy.config.providers import build_provider
from hydra_proxy.config.routes import Route, decide, request_traits
from hydra_proxy.mock import MockServer
from support.servers import ProxyServer


def png(width: int = 4, height: int = 4) -> str:
    """A real PNG image, base64."""
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
    data += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return base64.b64encode(data).decode()


IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png()}}


def conversation() -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": [IMAGE, {"type": "text", "text": "What is this?"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.png"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": [{"type": "text", "text": "the file:"}, IMAGE]}]},
        ],
    }  # fmt: skip


def test_every_image_becomes_the_placeholder_and_the_input_stays() -> None:
    body = conversation()
    before = copy.deepcopy(body)
    out, count = without_images(body)
    assert count == 2 and body == before
    assert out["messages"][0]["content"][0] == {"type": "text", "text": IMAGE_PLACEHOLDER}
    result = out["messages"][2]["content"][0]["content"]
    assert result == [{"type": "text", "text": "the file:"},
                      {"type": "text", "text": IMAGE_PLACEHOLDER}]  # fmt: skip
    assert b'"image"' not in orjson.dumps(out)
    # Without images: the very same object, nothing copied.
    plain = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert without_images(plain) == (plain, 0)
    # The same words every turn: the prompt's prefix does not change.
    assert orjson.dumps(without_images(conversation())[0]) == orjson.dumps(out)


def test_openai_image_parts_become_text_parts() -> None:
    url = f"data:image/png;base64,{png()}"
    chat = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "see"},
                    {"type": "image_url", "image_url": {"url": url}},
                ],
            }
        ]
    }
    out, count = without_openai_images(chat)
    assert count == 1
    assert out["messages"][0]["content"][1] == {"type": "text", "text": IMAGE_PLACEHOLDER}
    responses = {"input": [
        {"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": url}]},
        {"type": "function_call_output", "call_id": "c", "output": [
            {"type": "input_image", "image_url": url}]}]}  # fmt: skip
    out, count = without_openai_images(responses)
    assert count == 2
    assert out["input"][0]["content"] == [{"type": "input_text", "text": IMAGE_PLACEHOLDER}]
    assert out["input"][1]["output"] == [{"type": "input_text", "text": IMAGE_PLACEHOLDER}]


def providers() -> dict[str, Any]:
    out = {}
    for name in ("deepseek", "openai"):
        row = preset_row(name)
        assert row is not None
        out[name] = build_provider(name, row, {})
    return out


def test_an_image_for_a_text_only_route_takes_the_images_route() -> None:
    assert not providers()["deepseek"].vision and providers()["openai"].vision
    routes = [
        Route(match="claude-*", provider="deepseek", model="deepseek-chat"),
        Route(match="claude-*", provider="openai", model="gpt-4.1", images=True, name="images"),
    ]
    with_image = request_traits(conversation())
    assert with_image.images
    decision = decide(routes, None, providers(), with_image)
    assert decision is not None and decision.label == "images"
    assert decision.attempts[0].provider.name == "openai"
    plain = request_traits({"model": "claude-sonnet-4-5", "messages": []})
    decision = decide(routes, None, providers(), plain)
    assert decision is not None and decision.attempts[0].provider.name == "deepseek"
    # A route that says it reads images keeps them, whatever its provider.
    reads = [Route(match="claude-*", provider="deepseek", vision=True), routes[1]]
    decision = decide(reads, None, providers(), with_image)
    assert decision is not None and decision.attempts[0].provider.name == "deepseek"
    assert decision.attempts[0].vision
    # No images route: the text-only one, which will get the placeholder.
    decision = decide(routes[:1], None, providers(), with_image)
    assert decision is not None and not decision.attempts[0].vision


CONFIG = """
[server]
provider = "textonly"

[providers.textonly]
preset = "deepseek"
base_url = "{url}/v1"

[providers.eyes]
kind = "chat"
base_url = "{url}/v1"
api_key_env = "DEEPSEEK_API_KEY"

[[routes]]
match = "text-*"
provider = "textonly"
{images_route}
"""
IMAGES_ROUTE = """
[[routes]]
name = "images"
match = "text-*"
images = true
provider = "eyes"
model = "vision-model"
"""


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def serve(mock: MockServer, tmp_path: Path, *, images_route: bool) -> ProxyServer:
    config = tmp_path / "hydra.toml"
    extra = IMAGES_ROUTE if images_route else ""
    config.write_text(CONFIG.format(url=mock.url, images_route=extra), encoding="utf-8")
    env = {"DEEPSEEK_API_KEY": "sk-deepseek-test-key"}
    args = ("--config", str(config), "--log-level", "info")
    return ProxyServer(mock.url + "/v1", *args, env=env)


def post(proxy: ProxyServer, path: str, body: dict[str, Any], session: str) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01",
               "x-claude-code-session-id": session}  # fmt: skip
    conn.request("POST", path, orjson.dumps(body), headers)
    response = conn.getresponse()
    data = response.read()
    assert response.status == 200, data
    return data


def test_a_session_goes_on_with_placeholders_logged_once(mock: MockServer, tmp_path: Path) -> None:
    mock.clear()
    body = {**conversation(), "model": "text-model"}
    with serve(mock, tmp_path, images_route=False) as proxy:
        for session in ("session-one", "session-one", "session-one", "session-two"):
            post(proxy, "/v1/messages", body, session)
        chat = {
            "model": "text-model",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "image_url",
                            "image_url": {"url": f"data:image/png;base64,{png()}"},
                        }
                    ],
                }
            ],
        }
        post(proxy, "/v1/chat/completions", chat, "session-three")  # passed through
        proxy.log.seek(0)
        log = proxy.log.read().decode("utf-8", "replace")
    sent = [r["body"] for r in mock.requests() if r["method"] == "POST"]
    assert len(sent) == 5
    for upstream in sent:
        text = orjson.dumps(upstream)
        assert b"image_url" not in text and IMAGE_PLACEHOLDER.encode() in text
    assert sent[0] == sent[1] == sent[2]  # every turn the same words
    assert log.count("image(s) left out for provider 'textonly'") == 3, log  # once a session
    assert "images_left_out=2" in log


def test_an_images_route_keeps_the_images(mock: MockServer, tmp_path: Path) -> None:
    mock.clear()
    with serve(mock, tmp_path, images_route=True) as proxy:
        post(proxy, "/v1/messages", {**conversation(), "model": "text-model"}, "s")
        post(
            proxy,
            "/v1/messages",
            {
                "model": "text-model",
                "max_tokens": 10,
                "messages": [{"role": "user", "content": "hi"}],
            },
            "s",
        )
    with_image, plain = [r["body"] for r in mock.requests() if r["method"] == "POST"]
    assert with_image["model"] == "vision-model" and b"image_url" in orjson.dumps(with_image)
    assert IMAGE_PLACEHOLDER.encode() not in orjson.dumps(with_image)
    assert plain["model"] == "text-model"
