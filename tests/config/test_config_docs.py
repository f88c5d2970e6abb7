"""docs/CONFIG.md stays true: its reference covers every key, its preset table every
preset, its team example validates and routes as it says, its error example is real."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import orjson
import pytest

from hydra_proxy import cli
from hydra_proxy.config import RequestTraits, environment, load, presets, request_traits
from hydra_proxy.config.schema import ADMISSION, PRICE, PROVIDER, ROUTE, SERVER, USAGE

DOC = (Path(__file__).resolve().parent.parent.parent / "docs" / "CONFIG.md").read_text("utf-8")
FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude-code"


def section(title: str) -> str:
    start = DOC.index(f"\n### {title}\n")
    end = DOC.find("\n### ", start + 1)
    return DOC[start : end if end > 0 else None]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC, flags=re.S)


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("HYDRA_") or name.endswith("_API_KEY"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize(
    ("title", "keys"),
    [
        ("`[server]`", SERVER),
        ("`[providers.NAME]`", PROVIDER),
        ("`[[routes]]`", ROUTE),
        ('`[pricing."MODEL-GLOB"]`', PRICE),
        ("`[usage]`", USAGE),
        ("`[admission]`", ADMISSION),
    ],
)
def test_the_reference_documents_every_key(title: str, keys: dict[str, object]) -> None:
    rows = re.findall(r"^\| `([a-z_]+)` \|", section(title), flags=re.M)
    assert rows == list(keys)


def test_the_preset_table_lists_every_preset_with_its_kind() -> None:
    table = DOC[DOC.index("\n## Providers\n") : DOC.index("\n### Keys and key pools\n")]
    rows = dict(re.findall(r"^\| `([a-z-]+)` \| (\w+) \|", table, flags=re.M))
    assert rows == {name: row["kind"] for name, row in presets().items()}


def test_the_team_example_validates_and_routes_as_described(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "hydra.toml"
    config.write_text(blocks("toml")[0], encoding="utf-8")
    for var in ("ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_KEY_1", "DEEPSEEK_KEY_2"):
        monkeypatch.setenv(var, f"sk-{var.lower()}-0000000000")
    settings = load({"config": str(config)}, environment(dotenv=tmp_path / "none"))
    assert cli.require_keys(settings) == []

    def chain(traits: RequestTraits) -> list[tuple[str, str]]:
        decision = settings.decide(traits)
        assert decision is not None
        return [(a.provider.name, a.model) for a in decision.attempts]

    def captured(name: str) -> RequestTraits:
        record = orjson.loads((FIXTURES / name).read_bytes())
        return request_traits(record["body"], headers=record["headers"])

    assert chain(captured("request-plain.json")) == [("anthropic", "claude-opus-5-5")]
    assert chain(captured("request-subagent.json")) == [
        ("qwen", "qwen/qwen3-coder"),
        ("deepseek", "deepseek-chat"),
        ("local", "Qwen/Qwen3-Coder-30B-A3B-Instruct"),
    ]
    assert chain(RequestTraits("claude-haiku-4-5", tools=True)) == [("deepseek", "deepseek-chat")]
    assert chain(RequestTraits("claude-opus-5-5", max_tokens=512)) == [
        ("deepseek", "deepseek-chat")
    ]
    assert chain(RequestTraits("gpt-4.1", client="chat")) == [("anthropic", "gpt-4.1")]
    keys = settings.providers["deepseek"].api_keys()
    assert [var for var, _ in keys] == ["DEEPSEEK_KEY_1", "DEEPSEEK_KEY_2"]
    assert settings.providers["local"].base_url == "http://gpu-box:8000/v1"
    assert not settings.providers["local"].needs_key


def test_the_error_example_is_what_the_cli_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = next(b for b in blocks("text") if "configuration errors" in b)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HYDRA_PROXY_IMPL", "rust")
    Path("hydra.toml").write_text(
        '[server]\nprot = 3456\n\n[provider.deepseek]\nkind = "chat"\n', encoding="utf-8"
    )
    assert cli.main(["config", "check", "--config", "hydra.toml"]) == 2
    assert capsys.readouterr().err == example


def test_every_serve_flag_is_in_the_flags_table() -> None:
    commands = argparse.ArgumentParser().add_subparsers()
    cli._serve_parser(commands)
    serve = commands.choices["serve"]
    flags = [o for a in serve._actions for o in a.option_strings if o.startswith("--")]
    table = section("`serve` flags and the environment")
    named = set(re.findall(r"`(--[a-z-]+)`", table))
    assert [f for f in flags if f != "--help" and f not in named] == []
