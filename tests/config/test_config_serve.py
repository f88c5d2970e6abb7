"""`hydra-proxy serve` refuses the config errors (unknown tables, bad values, bad routes) not covered by
test_cli_config.py: each prints its file:line message, exits 2, and nothing listens."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli_config import hydra, refused

from hydra_proxy.mock.server import free_port

KEY = {"OPENAI_API_KEY": "sk-openai-test-000000000001"}


@pytest.mark.parametrize(
    ("text", "messages"),
    [
        (
            '[[route]]\nmatch = "x"\nprovider = "openai"\n',
            [":1: unknown table [[route]]\n  -> did you mean [[routes]]?"],
        ),
        (
            '[server]\nimplementation = "rust"\nworkers = 0\n',
            [
                ":2: [server] implementation = 'rust' is not one of auto, native, python",
                ":3: [server] workers = 0: must be a whole number of at least 1",
            ],
        ),
        (
            '[[routes]]\nmatch = "claude-[abc"\nprovider = "openai"\nfallback = ["nope"]\n',
            [
                ":2: [[routes]] #1 match = 'claude-[abc' is not a valid glob: unclosed '['",
                ":4: [[routes]] #1 names unknown provider 'nope'",
            ],
        ),
    ],
)
def test_serve_refuses_config_errors(tmp_path: Path, text: str, messages: list[str]) -> None:
    config = tmp_path / "hydra.toml"
    config.write_text(text, encoding="utf-8")
    port = free_port()
    result = hydra("serve", "--config", str(config), "--port", str(port), home=tmp_path, env=KEY)
    stderr = refused(result, port)
    assert "configuration error" in stderr and "not starting" in stderr
    for message in messages:
        assert f"{config}{message}" in stderr, stderr
