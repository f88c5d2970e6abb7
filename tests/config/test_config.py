"""Settings: the precedence of their sources, and ~/.hydramcp/.env read without side effects."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from hydra_proxy import cli
from hydra_proxy.config import (
    PROXY_KEYS_ENV,
    ConfigError,
    default_dotenv_path,
    environment,
    load,
    read_dotenv,
)


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test process's own provider keys and settings must not leak into these tests."""
    for name in list(os.environ):
        if name.startswith("HYDRA_") or name.endswith("_API_KEY"):
            monkeypatch.delenv(name)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_read_dotenv_lines(tmp_path: Path) -> None:
    dotenv = write(
        tmp_path / ".env",
        "# a comment\n\nexport OPENAI_API_KEY=sk-one\nQUOTED = 'two words'\n"
        'DOUBLE="x=y"\nnot a pair\nEMPTY=\n',
    )
    assert read_dotenv(dotenv) == {
        "OPENAI_API_KEY": "sk-one",
        "QUOTED": "two words",
        "DOUBLE": "x=y",
        "EMPTY": "",
    }
    assert read_dotenv(tmp_path / "missing.env") == {}


@pytest.mark.usefixtures("no_keys")
def test_dotenv_goes_into_settings_not_into_os_environ(tmp_path: Path) -> None:
    dotenv = write(tmp_path / ".env", "OPENAI_API_KEY=sk-from-file\nHYDRA_PROXY_PORT=4001\n")
    settings = load(env=environment(dotenv=dotenv))
    assert "OPENAI_API_KEY" not in os.environ
    assert "HYDRA_PROXY_PORT" not in os.environ
    assert settings.port == 4001
    assert settings.providers["openai"].api_key() == "sk-from-file"
    # Never shown: the key is not in any repr of the settings.
    assert "sk-from-file" not in repr(settings)


@pytest.mark.usefixtures("no_keys")
def test_default_dotenv_is_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_dotenv_path() == tmp_path / ".hydramcp" / ".env"
    write(default_dotenv_path(), "ANTHROPIC_API_KEY=sk-ant-file\n")
    settings = load()
    assert settings.providers["anthropic"].api_key() == "sk-ant-file"
    assert "ANTHROPIC_API_KEY" not in os.environ


@pytest.mark.usefixtures("no_keys")
def test_process_environment_wins_over_dotenv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dotenv = write(tmp_path / ".env", "OPENAI_API_KEY=sk-from-file\nHYDRA_TARGET_MODEL=file\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("HYDRA_TARGET_MODEL", "env")
    settings = load(env=environment(dotenv=dotenv))
    assert settings.providers["openai"].api_key() == "sk-from-env"
    assert settings.target_model == "env"
    # An empty variable in the environment is a choice too: no key, not the file's.
    monkeypatch.setenv("OPENAI_API_KEY", "")
    settings = load(env=environment(dotenv=dotenv))
    assert settings.providers["openai"].api_key() is None


@pytest.mark.usefixtures("no_keys")
def test_precedence_flag_env_dotenv_file_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(tmp_path / "hydra.toml", "[server]\nport = 1111\nworkers = 3\n")
    dotenv = write(tmp_path / ".env", "HYDRA_PROXY_PORT=2222\n")
    monkeypatch.setenv("HYDRA_CONFIG", str(config))
    monkeypatch.setenv("HYDRA_PROXY_PORT", "3333")

    def port(flags: dict[str, object] | None = None) -> int:
        return load(flags, environment(dotenv=dotenv)).port

    assert port({"port": 4444}) == 4444  # flag
    assert port() == 3333  # environment
    monkeypatch.delenv("HYDRA_PROXY_PORT")
    assert port() == 2222  # .env
    write(dotenv, "")
    assert port() == 1111  # config file
    assert load(env=environment(dotenv=dotenv)).workers == 3
    monkeypatch.delenv("HYDRA_CONFIG")
    assert port() == 3456  # default


@pytest.mark.usefixtures("no_keys")
def test_client_keys_only_from_the_process_environment(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dotenv = write(tmp_path / ".env", f"{PROXY_KEYS_ENV}=client-secret\n")
    with caplog.at_level(logging.WARNING, logger="hydra_proxy.config"):
        env = environment(dotenv=dotenv)
    assert PROXY_KEYS_ENV not in env
    assert PROXY_KEYS_ENV not in os.environ
    assert any(PROXY_KEYS_ENV in r.getMessage() for r in caplog.records)
    assert all("client-secret" not in r.getMessage() for r in caplog.records)
    # Set in the environment as well: used from there, nothing to report.
    caplog.clear()
    env = environment({PROXY_KEYS_ENV: "k1"}, dotenv=dotenv)
    assert env[PROXY_KEYS_ENV] == "k1"
    assert not caplog.records


@pytest.mark.usefixtures("no_keys")
def test_config_file_cannot_set_the_key_field(tmp_path: Path) -> None:
    config = write(
        tmp_path / "hydra.toml",
        '[providers.x]\nkind = "chat"\nbase_url = "http://x"\nfallback_api_key = "k"\n',
    )
    with pytest.raises(ConfigError, match="unknown keys"):
        load({"config": str(config)}, environment(dotenv=tmp_path / "none"))


@pytest.mark.usefixtures("no_keys")
def test_no_mock_when_the_key_comes_from_dotenv(tmp_path: Path) -> None:
    dotenv = write(tmp_path / ".env", "OPENAI_API_KEY=sk-from-file\n")
    settings = load(env=environment(dotenv=dotenv))
    with cli._mock_if_needed(settings, explicit_base_url=False, allowed=True) as served:
        assert served == (settings, None)  # as read, and a reload's settings as read too
    assert settings.providers["openai"].base_url == "https://api.openai.com/v1"


def test_usage_table_and_its_environment_override(tmp_path: Path) -> None:
    config = write(
        tmp_path / "hydra.toml",
        '[usage]\nledger = "postgresql://hydra@db/usage"\nmetrics = false\ntracing = true\n',
    )
    settings = load({"config": str(config)}, {})
    assert (settings.usage_ledger, settings.usage_metrics, settings.usage_tracing) == (
        "postgresql://hydra@db/usage",
        False,
        True,
    )
    assert load({"config": str(config)}, {"HYDRA_USAGE_LEDGER": "off"}).usage_ledger is None
    assert load({}, {}).usage_ledger == "sqlite:~/.hydra-proxy/usage.sqlite3"
    bad = write(tmp_path / "bad.toml", "[usage]\nledger = 3\nmetric = true\n")
    with pytest.raises(ConfigError) as info:
        load({"config": str(bad)}, {})
    assert "[usage]" in str(info.value) and "metric" in str(info.value)
