"""Config errors a user can act on: file, line, what is wrong and what to do; every
problem in one pass; presets merged with overrides; reload refuses a bad file."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.config import (
    ConfigError,
    Problem,
    Settings,
    describe,
    environment,
    load,
    presets,
    reload,
    require_keys,
)
from hydra_proxy.config.protocols import FORMER_KINDS, PROTOCOLS
from hydra_proxy.config.source import SourceMap


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("HYDRA_") or name.endswith("_API_KEY") or name.startswith("DS_"):
            monkeypatch.delenv(name)


def write(tmp_path: Path, text: str, name: str = "hydra.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_file(
    tmp_path: Path, text: str, env: dict[str, str] | None = None, **flags: Any
) -> Settings:
    config = write(tmp_path, text)
    return load({"config": str(config), **flags}, environment(env or {}, dotenv=tmp_path / "none"))


def problems(tmp_path: Path, text: str, **flags: Any) -> list[Problem]:
    with pytest.raises(ConfigError) as info:
        load_file(tmp_path, text, **flags)
    return list(info.value.problems)


def only(found: list[Problem]) -> Problem:
    assert len(found) == 1, found
    return found[0]


def test_misnamed_tables_are_errors_with_the_line_and_the_right_name(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        '[server]\nport = 4000\n\n[provider.deepseek]\napi_key_env = "X"\n\n'
        '[[route]]\nmatch = "*"\nprovider = "deepseek"\n',
    )
    assert [(p.line, p.message, p.hint) for p in found] == [
        (4, "unknown table [provider.deepseek]", "did you mean [providers.deepseek]?"),
        (7, "unknown table [[route]]", "did you mean [[routes]]?"),
    ]
    assert all(p.file == str(tmp_path / "hydra.toml") for p in found)
    assert str(found[0]).startswith(
        f"{tmp_path / 'hydra.toml'}:4: unknown table [provider.deepseek]"
    )


def test_misspelled_keys_suggest_the_close_match(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        "[server]\nhost = '127.0.0.1'\nprot = 4000\n\n"
        '[providers.ds]\npreset = "deepseek"\nmax_tokens_feild = "max_tokens"\n\n'
        '[[routes]]\nmatch = "*"\nprovider = "ds"\nspoof_modle = "x"\n',
    )
    assert [(p.line, p.message, p.hint) for p in found] == [
        (3, "unknown keys in [server]: 'prot'", "did you mean 'port'?"),
        (
            7,
            "unknown keys in [providers.ds]: 'max_tokens_feild'",
            "did you mean 'max_tokens_field'?",
        ),
        (12, "unknown keys in [[routes]] #1: 'spoof_modle'", "did you mean 'spoof_model'?"),
    ]


def test_a_server_key_at_the_top_level_says_where_it_belongs(tmp_path: Path) -> None:
    problem = only(problems(tmp_path, "port = 4000\n"))
    assert problem.line == 1 and "not inside a table" in problem.message
    assert problem.hint is not None and "[server]" in problem.hint


def test_routes_naming_unknown_providers_and_invalid_globs(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        '[providers.deepseek2]\npreset = "deepseek"\n\n'
        '[[routes]]\nmatch = "claude-*"\nprovider = "deepseek22"\n\n'
        '[[routes]]\nmatch = "claude-[haiku"\nprovider = "deepseek2"\n'
        'fallback = ["groq", { provider = "nope" }]\n',
    )
    assert [p.line for p in found] == [6, 9, 11]
    assert found[0].message == "[[routes]] #1 names unknown provider 'deepseek22'"
    assert found[0].hint is not None and found[0].hint.startswith("did you mean 'deepseek2'?")
    assert "not a valid glob: unclosed '['" in found[1].message
    assert found[2].message == "[[routes]] #2 names unknown provider 'nope'"


def test_bad_values_in_the_file(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        '[server]\nport = 99999\nworkers = "2"\nimplementation = "rust"\n\n'
        '[providers.x]\nkind = "grpc"\nbase_url = "http://x"\napi_key_optional = true\n\n'
        '[[routes]]\nprovider = "x"\nclient = "zed"\neffort = { max = "maximum" }\n'
        "long_context = 0\n",
    )
    messages = {p.line: p.message for p in found}
    assert messages == {
        2: "[server] port = 99999: must be a whole number from 1 to 65535",
        3: "[server] workers must be a whole number, not '2'",
        4: "[server] implementation = 'rust' is not one of auto, native, python",
        7: "[providers.x] kind = 'grpc' is not one of anthropic, chat, responses, gemini",
        13: "[[routes]] #1 client = 'zed' is not one of anthropic, chat, responses, gemini",
        14: "[[routes]] #1 effort map 'max' -> 'maximum': both must be one of "
        "none, minimal, low, medium, high, xhigh, max",
        15: "[[routes]] #1 long_context = 0: must be a whole number of at least 1",
    }


def test_variables_and_flags_are_named_in_their_errors(tmp_path: Path) -> None:
    env = {
        "HYDRA_PROXY_PORT": "abc",
        "HYDRA_PROXY_IMPL": "rust",
        "HYDRA_IDLE_TIMEOUT": "0",
        "HYDRA_PASSTHROUGH": "maybe",
    }
    with pytest.raises(ConfigError) as info:
        load(env=environment(env, dotenv=tmp_path / "none"))
    assert [str(p) for p in info.value.problems] == [
        "HYDRA_PROXY_PORT=abc: port must be a whole number from 1 to 65535",
        "HYDRA_PASSTHROUGH=maybe: passthrough must be true or false\n"
        "  -> use true/false, 1/0, yes/no",
        "HYDRA_PROXY_IMPL=rust: not a valid implementation\n  -> use one of auto, native, python",
        "HYDRA_IDLE_TIMEOUT=0: idle_timeout must be a number above 0",
    ]
    with pytest.raises(ConfigError, match=r"^--port 99999: port must be a whole number"):
        load({"port": 99999}, environment({}, dotenv=tmp_path / "none"))
    with pytest.raises(ConfigError) as info:
        load({"provider": "deepsek"}, environment({}, dotenv=tmp_path / "none"))
    problem = only(list(info.value.problems))
    assert problem.message == "--provider: unknown provider 'deepsek'"
    assert problem.hint is not None and problem.hint.startswith("did you mean 'deepseek'?")


def test_toml_syntax_errors_keep_the_line(tmp_path: Path) -> None:
    problem = only(problems(tmp_path, '[server]\nport = 4000\nhost = "unterminated\n'))
    assert problem.file == str(tmp_path / "hydra.toml") and problem.line == 3
    assert problem.message.startswith("invalid TOML: ")
    with pytest.raises(ConfigError, match="cannot read the config file"):
        load({"config": str(tmp_path / "missing.toml")}, environment({}, dotenv=tmp_path / "n"))


def test_missing_keys_of_the_providers_routes_need(tmp_path: Path) -> None:
    text = (
        '[providers.ds]\npreset = "deepseek"\napi_key_env = ["DS_K1", "DS_K2"]\n\n'
        '[providers.custom]\nkind = "chat"\nbase_url = "http://127.0.0.1:9/v1"\n\n'
        '[providers.local]\nkind = "chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
        "api_key_optional = true\n\n"
        '[[routes]]\nmatch = "*haiku*"\nprovider = "ds"\nfallback = ["ollama", "local"]\n\n'
        '[[routes]]\nmatch = "*"\nprovider = "custom"\n'
    )
    settings = load_file(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        require_keys(settings)
    found = list(info.value.problems)
    assert [(p.line, p.message) for p in found] == [
        (1, "provider 'ds' (used by [[routes]] #1) has no key: DS_K1 or DS_K2 is not set"),
        (
            5,
            "provider 'custom' (used by [[routes]] #2) has no api_key_env: requests would go "
            "upstream without a key",
        ),
    ]
    assert found[0].hint is not None and "api_key_optional = true" in found[0].hint
    # The `*` route claims everything, so the target provider's missing key is no error;
    # ollama is keyless by preset, `local` by api_key_optional. One key of a pool is enough.
    os.environ["DS_K2"] = "sk-test-0000000000000002"
    text = text.replace('provider = "custom"', 'provider = "local"')
    require_keys(load_file(tmp_path, text))


@pytest.mark.parametrize("former", sorted(FORMER_KINDS))
def test_a_former_kind_spelling_still_loads_as_its_protocol(tmp_path: Path, former: str) -> None:
    """Config files written when Chat's kind was "openai" keep working; everything after
    reading them (the provider, `config check`) says the protocol's one name."""
    settings = load_file(
        tmp_path,
        f'[providers.x]\nkind = "{former}"\nbase_url = "http://x"\napi_key_optional = true\n\n'
        f'[providers.groq]\nkind = "{former}"\n\n[[routes]]\nprovider = "x"\n',
    )
    current = FORMER_KINDS[former]
    assert current in PROTOCOLS and former not in PROTOCOLS
    assert settings.providers["x"].kind == settings.providers["groq"].kind == current
    assert f"x: {current} http://x" in describe(settings)
    assert not any(row["kind"] in FORMER_KINDS for row in presets().values())


def test_presets_are_data_and_a_table_overrides_columns(tmp_path: Path) -> None:
    table = presets()
    for name in ("openai", "anthropic", "gemini", "gemini-native", "ollama", "vllm",
                 "deepseek", "openrouter", "groq", "zai", "moonshot"):  # fmt: skip
        assert name in table, name
    assert table["gemini-native"]["kind"] == "gemini" and table["gemini"]["kind"] == "chat"
    settings = load_file(
        tmp_path,
        "[providers.deepseek]\nmax_tokens_limit = 4096\n\n"
        '[providers.kimi]\npreset = "moonshot"\nbase_url = "https://api.moonshot.cn/v1"\n',
        env={"HYDRA_OLLAMA_BASE_URL": "http://gpu-box:11434/v1"},
    )
    deepseek = settings.providers["deepseek"]
    assert (deepseek.base_url, deepseek.replay_reasoning, deepseek.max_tokens_limit) == (
        "https://api.deepseek.com/v1",
        True,
        4096,
    )
    kimi = settings.providers["kimi"]
    assert kimi.base_url == "https://api.moonshot.cn/v1" and kimi.api_key_env == "MOONSHOT_API_KEY"
    assert kimi.reasoning_field == "reasoning_content" and kimi.preset == "moonshot"
    assert settings.providers["ollama"].base_url == "http://gpu-box:11434/v1"
    assert settings.providers["ollama"].keyless and not settings.providers["groq"].keyless
    assert settings.providers["groq"].max_tokens_field == "max_completion_tokens"


def test_key_pool_variables_and_the_dotenv_file(tmp_path: Path) -> None:
    dotenv = write(tmp_path, "DS_K2=sk-from-dotenv-000000002\n", ".env")
    config = write(
        tmp_path, '[providers.ds]\npreset = "deepseek"\napi_keys_env = ["DS_K1", "DS_K2"]\n'
    )
    os.environ["DS_K1"] = "sk-from-env-0000000001"
    settings = load({"config": str(config)}, environment(dotenv=dotenv))
    provider = settings.providers["ds"]
    assert provider.api_keys() == [
        ("DS_K1", "sk-from-env-0000000001"),
        ("DS_K2", "sk-from-dotenv-000000002"),
    ]
    assert "sk-from" not in repr(settings)


def test_source_map_lines() -> None:
    text = (
        "# comment\n[server]\nport = 1\n\n[providers.a]\nkind = 'chat'\n"
        "[[routes]]\nmatch = 'x'\nfallback = [\n  'a',\n  ['b'],\n]\nprovider = 'a'\n"
        "[[routes]]\nprovider = { name = 'inline' }\n[routes.extra]\nkey = 1\n"
    )
    source = SourceMap(text)
    assert source.line(("server", "port")) == 3
    assert source.line(("providers", "a", "kind")) == 6
    assert source.line(("providers", "a", "missing")) == 5  # the table header
    assert source.line(("routes", 0, "provider")) == 13  # after a multi-line array
    assert source.line(("routes", 1)) == 14
    assert source.line(("routes", 1, "provider", "name")) == 15
    assert source.line(("routes", 1, "extra", "key")) == 17
    assert source.line(("nothing",)) is None


def test_reload_validates_fully_and_keeps_restart_only_settings(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-test-000000000001"
    good = write(
        tmp_path, '[server]\nport = 4100\n\n[[routes]]\nmatch = "*"\nprovider = "anthropic"\n'
    )
    current = load({"config": str(good), "workers": 2}, environment(dotenv=tmp_path / "none"))
    bad = write(tmp_path, '[[routes]]\nmatch = "*"\nprovider = "deepseek"\n', "bad.toml")
    with pytest.raises(ConfigError, match="has no key: DEEPSEEK_API_KEY is not set"):
        reload(str(bad), current, environment(dotenv=tmp_path / "none"))
    typo = write(tmp_path, '[[route]]\nmatch = "*"\n', "typo.toml")
    with pytest.raises(ConfigError, match=r"typo.toml:1: unknown table \[\[route\]\]"):
        reload(str(typo), current, environment(dotenv=tmp_path / "none"))
    new_text = '[server]\nport = 4200\nprovider = "anthropic"\n\n[[routes]]\nmatch = "claude-*"\nprovider = "anthropic"\n'
    good.write_text(new_text, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="hydra_proxy.config"):
        new = reload(None, current, environment(dotenv=tmp_path / "none"))
    assert [r.match for r in new.routes] == ["claude-*"]
    assert new.port == 4100 and new.workers == 2  # the CLI flag and the bound port stay
    assert "port changed, which needs a restart" in caplog.text


def test_pricing_overrides_are_validated_and_kept(tmp_path: Path) -> None:
    settings = load_file(
        tmp_path,
        '[pricing."gpt-4o"]\ninput = 2.0\noutput = 8\ncache_read = 0.5\n\n'
        '[pricing."my-local-*"]\ninput = 0\noutput = 0\n',
    )
    assert settings.pricing == {
        "gpt-4o": {"input": 2.0, "output": 8, "cache_read": 0.5},
        "my-local-*": {"input": 0, "output": 0},
    }
    found = problems(
        tmp_path,
        '[pricing."gpt-4o"]\ninput = -1\noutput = 8\ncahce_read = 0.5\n\n'
        '[pricing."x-*"]\ninput = 1\n\n[price."y"]\ninput = 1\n',
    )
    assert [(p.line, p.message, p.hint) for p in found] == [
        (2, "[pricing.'gpt-4o'] input = -1: must be a number of at least 0", None),
        (4, "unknown keys in [pricing.'gpt-4o']: 'cahce_read'", "did you mean 'cache_read'?"),
        (6, "[pricing.'x-*'] needs output (USD per million tokens)", None),
        (9, "unknown table [price.y]", 'did you mean [pricing."MODEL-GLOB"]?'),
    ]


def test_every_preset_row_is_valid_by_the_schema() -> None:
    from hydra_proxy.config.schema import PROVIDER
    from hydra_proxy.config.validate import Validator

    check = Validator("providers.toml", None)
    for name, row in presets().items():
        user_columns = {k: v for k, v in row.items() if k in PROVIDER}
        check.check_table(("providers", name), user_columns, PROVIDER, f"[{name}]")
        assert set(row) - set(PROVIDER) <= {"base_url_env", "keyless"}, name
        assert row["base_url"].startswith(("https://", "http://127.0.0.1:")), name
        assert row.get("keyless") or row.get("api_key_env"), name
    assert check.problems == []


def test_settings_survive_pickling_for_the_workers(tmp_path: Path) -> None:
    import pickle

    from hydra_proxy.config import RequestTraits

    os.environ["DS_K1"] = "sk-from-env-0000000001"
    settings = load_file(
        tmp_path,
        '[providers.ds]\npreset = "deepseek"\napi_key_env = ["DS_K1"]\n\n'
        '[[routes]]\nmatch = "*haiku*"\nprovider = "ds"\nfallback = ["ollama"]\n'
        "effort = { max = 'high' }\n",
    )
    copy = pickle.loads(pickle.dumps(settings))
    assert copy == settings
    decision = copy.decide(RequestTraits("claude-haiku-4-5"))
    assert decision is not None
    assert [a.provider.name for a in decision.attempts] == ["ds", "ollama"]
    assert copy.providers["ds"].api_keys() == [("DS_K1", "sk-from-env-0000000001")]


def test_wrong_types_in_a_route_are_reported_not_crashed_on(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        '[[routes]]\nmatch = 5\nprovider = 7\nfallback = "groq"\nsubagent = "yes"\n',
    )
    assert [(p.line, p.message) for p in found] == [
        (2, "[[routes]] #1 match must be a string, not 5"),
        (3, "[[routes]] #1 provider must be a string or a list, not 7"),
        (3, "[[routes]] #1 provider must name one or more providers"),
        (4, "[[routes]] #1 fallback must be a list, not 'groq'"),
        (5, "[[routes]] #1 subagent must be true or false, not 'yes'"),
    ]
