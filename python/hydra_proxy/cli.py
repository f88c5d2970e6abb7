"""The `hydra-proxy` command: `serve` the proxy, `config check` a configuration, run the
embedded `mock` upstream, print the `usage` report, manage named client `keys`, or
read the `audit` log of admin changes.

Each subcommand is one entry of `COMMANDS`: a function adding its parser and one running
it (returning the exit code). Configuration errors exit with code 2 and a message that
says where and what to do, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from . import __version__, logs
from .config import (
    ConfigError,
    Settings,
    check_port_free,
    check_startup,
    describe,
    environment,
    load,
    require_keys,
)
from .config.check import admin_key_problems
from .config.extras import missing_extras
from .transducers import select

log = logging.getLogger("hydra_proxy")


def _workers(text: str) -> int:
    """`--workers`: a count (the config checks its range), or `auto`: one per CPU this
    process may run on."""
    if text.strip().lower() == "auto":
        return (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else (os.cpu_count() or 1)
        )
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or auto") from None


def _serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="run the proxy",
        description=(
            "Run the proxy. Anthropic clients (Claude Code: ANTHROPIC_BASE_URL=http://HOST:PORT) "
            "and OpenAI clients (base URL http://HOST:PORT/v1) are served by the target provider. "
            "With no provider key set, an embedded mock upstream answers instead (and says so)."
        ),
    )
    p.add_argument("--host", help="address to bind (default 127.0.0.1; env HYDRA_PROXY_HOST)")
    p.add_argument("--port", type=int, help="port (default 3456; env HYDRA_PROXY_PORT)")
    p.add_argument(
        "--model", help="upstream model name (env HYDRA_TARGET_MODEL; default: the requested name)"
    )
    p.add_argument(
        "--provider",
        help="target provider: a shipped preset (openai, anthropic, gemini, ollama, deepseek, "
        "openrouter, groq, ...; docs/CONFIG.md) or a configured name (env HYDRA_TARGET_PROVIDER)",
    )
    p.add_argument("--base-url", dest="base_url", help="base URL of the target provider")
    p.add_argument("--config", help="TOML config file with providers and routes (env HYDRA_CONFIG)")
    p.add_argument(
        "--workers",
        type=_workers,
        help="worker processes, or auto: one per CPU (default 1; bounds are per worker)",
    )
    p.add_argument(
        "--spoof-model",
        dest="spoof_model",
        help="model name reported to Anthropic clients (env HYDRA_SPOOF_MODEL)",
    )
    p.add_argument(
        "--impl",
        dest="implementation",
        choices=("auto", "native", "python"),
        help="transducer implementation (env HYDRA_PROXY_IMPL)",
    )
    p.add_argument(
        "--continuation",
        choices=("auto", "always", "never"),
        help="continuation suffix for Chat clients (env HYDRA_CONTINUATION; default auto: Zed, "
        "opencode, Qwen Code, or requests with x-hydra-continuation: 1)",
    )
    p.add_argument(
        "--provider-streams",
        dest="provider_streams",
        type=int,
        help="concurrent upstream exchanges per provider and worker; past it requests queue "
        "fairly by session (env HYDRA_PROVIDER_STREAMS; default 0: unbounded)",
    )
    p.add_argument(
        "--key-streams",
        dest="key_streams",
        type=int,
        help="concurrent upstream exchanges per client key and worker (env HYDRA_KEY_STREAMS; "
        "default 0: unbounded)",
    )
    p.add_argument(
        "--insecure-no-auth",
        dest="insecure_no_auth",
        action="store_true",
        default=None,
        help="allow binding a non-loopback address without HYDRA_PROXY_KEYS",
    )
    p.add_argument(
        "--no-mock",
        dest="no_mock",
        action="store_true",
        help="never start the embedded mock upstream",
    )
    p.add_argument(
        "--log-level",
        dest="log_level",
        default="info",
        choices=("debug", "info", "warning", "error"),
    )


def _wants_mock(settings: Settings) -> bool:
    """No route, and the target provider needs a key that is not set."""
    provider = settings.providers[settings.target_provider]
    return not settings.routes and provider.needs_key and not provider.api_keys()


def _on_mock(settings: Settings, url: str) -> Settings:
    """`settings` with the target provider served by the embedded mock at `url`."""
    provider = settings.providers[settings.target_provider]
    base = url + ("/v1" if provider.kind == "chat" else "")
    providers = dict(settings.providers)
    providers[provider.name] = dataclasses.replace(
        provider, base_url=base, api_key_env=None, api_key_envs=(), keyless=True
    )
    return dataclasses.replace(settings, providers=providers)


@contextlib.contextmanager
def _mock_if_needed(
    settings: Settings, explicit_base_url: bool, allowed: bool
) -> Iterator[tuple[Settings, Callable[[Settings], Settings] | None]]:
    """The settings to serve, and what a reload does to the settings it reads: with the
    embedded mock, the mock again while the provider still has no key."""
    provider = settings.providers[settings.target_provider]
    if not allowed or explicit_base_url or not _wants_mock(settings):
        yield settings, None
        return
    from .mock import MockServer

    with MockServer() as mock:
        log.warning(
            "No %s is set: serving from the embedded MOCK upstream at %s (canned replies, "
            "not a real model). Set %s or --base-url to use a real provider.",
            provider.api_key_env,
            mock.url,
            provider.api_key_env,
        )
        url = mock.url

        def adjust(new: Settings) -> Settings:
            return _on_mock(new, url) if _wants_mock(new) else new

        yield _on_mock(settings, url), adjust


def _serve(args: argparse.Namespace) -> int:
    import os

    logs.setup(args.log_level)  # every line escaped: clients' text cannot forge one
    flags = {
        k: v for k, v in vars(args).items() if k not in ("command", "no_mock", "log_level", "run")
    }
    env = environment()
    from .team import live_config

    try:
        settings = live_config.load_settings(flags, env)  # the file, the live config over it
    except ConfigError as exc:
        return _config_error(exc)
    # Every check a SIGHUP reload runs too: client keys, exposure, signing key, transducers.
    try:
        check_startup(settings, os.environ)
    except ConfigError as exc:
        return _config_error(exc)
    impl = select(settings.implementation)
    busy = check_port_free(settings.host, settings.port)
    if busy is not None:
        print(f"hydra-proxy: {busy}", file=sys.stderr)
        return 2
    from .cluster import unreachable

    store_down = unreachable(settings)
    if store_down is not None and settings.on_store_failure == "closed":
        print(
            f"hydra-proxy: {store_down}; not starting (on_store_failure = closed)", file=sys.stderr
        )
        return 1
    if store_down is not None:
        log.warning("%s; starting on this replica's own bounds until it answers", store_down)
    log.info(
        "hydra-proxy %s: transducers %s, target provider %s",
        __version__,
        impl.name,
        settings.target_provider,
    )
    from .server.transport.run import serve

    explicit = bool(args.base_url) or any(
        env.get(f"HYDRA_{name.upper()}_BASE_URL") for name in ("openai", "anthropic", "gemini")
    )
    with _mock_if_needed(settings, explicit, not args.no_mock) as (effective, adjust):
        try:
            for warning in require_keys(effective):
                log.warning("%s", warning)
        except ConfigError as exc:
            return _config_error(exc)
        from .team.service import key_mode

        log.info("keys: %s", key_mode(effective, os.environ))
        log.info("listening on http://%s:%d", effective.host, effective.port)
        serve(effective, log_level=args.log_level, adjust=adjust)
    return 0


def _config_error(exc: ConfigError) -> int:
    count = len(exc.problems)
    title = "configuration error" if count == 1 else f"{count} configuration errors"
    print(f"hydra-proxy: {title}, not starting:\n{exc}", file=sys.stderr)
    return 2


def _config_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "config",
        help="check a configuration",
        description="Work with the configuration (docs/CONFIG.md).",
    )
    actions = p.add_subparsers(dest="action", required=True)
    check = actions.add_parser(
        "check",
        help="validate the config and print the resolved routes and providers",
        description=(
            "Validate the configuration as `serve` would (file, environment, "
            "~/.hydramcp/.env) and print the resolved routes and providers, keys masked. "
            "Exits 2 when anything is wrong."
        ),
    )
    check.add_argument("--config", help="TOML config file (env HYDRA_CONFIG)")
    check.add_argument("--provider", help="target provider (env HYDRA_TARGET_PROVIDER)")


def _config(args: argparse.Namespace) -> int:
    from .team import live_config

    flags = {"config": args.config, "provider": args.provider}
    env = environment()
    try:
        settings = load(flags, env)
        try:  # the live config over the file, as a start reads it
            stored = live_config.read(settings.usage_ledger)
        except Exception as exc:  # the store away: the file alone
            print(f"warning: cannot read the live config: {exc}")
            stored = None
        if stored is not None and stored.version:
            settings = load(flags, env, stored)
        warnings = require_keys(settings)
        problems = [*missing_extras(settings), *admin_key_problems(os.environ)]
        if problems:
            raise ConfigError(problems)
    except ConfigError as exc:
        return _config_error(exc)
    print(describe(settings))
    busy = check_port_free(settings.host, settings.port)
    print(f"note: {busy}" if busy else f"port {settings.port} on {settings.host}: free")
    for warning in warnings:
        print(f"warning: {warning}")
    print("config OK")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hydra-proxy",
        description="A translating LLM proxy: Claude Code on any OpenAI-compatible model, OpenAI clients on Claude.",
    )
    parser.add_argument("--version", action="version", version=f"hydra-proxy {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (add, command) in COMMANDS.items():
        add(sub)
        sub.choices[name].set_defaults(run=command)
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)


# The subcommands whose module is imported only when chosen (a `serve` never loads them):
# name -> (module, one-line help). Each module has DESCRIPTION, add_arguments and run.
_DELEGATED: dict[str, tuple[str, str]] = {
    "mock": ("mock.cli", "run the embedded mock upstream (OpenAI, Anthropic, Gemini APIs)"),
    "usage": ("usage.cli", "the usage report: tokens and cost per model, route, key or day"),
    "keys": ("team.cli", "named client keys: budgets, rate limits, model rights"),
    "audit": ("team.audit_cli", "the audit log: who changed which key, team or setting, and when"),
}


def _delegated(
    name: str,
) -> tuple[
    Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None],
    Callable[[argparse.Namespace], int],
]:
    module_name, help_text = _DELEGATED[name]

    def module() -> Any:
        return importlib.import_module(f".{module_name}", __package__)

    def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        command = module()
        command.add_arguments(sub.add_parser(name, help=help_text, description=command.DESCRIPTION))

    def run(args: argparse.Namespace) -> int:
        code: int = module().run(args)
        return code

    return add, run


# Subcommand -> (add its parser, run it). A new subcommand is one more entry.
COMMANDS: dict[
    str,
    tuple[
        Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None],
        Callable[[argparse.Namespace], int],
    ],
] = {
    "serve": (_serve_parser, lambda args: _serve(args)),
    "config": (_config_parser, lambda args: _config(args)),
    **{name: _delegated(name) for name in _DELEGATED},
}


if __name__ == "__main__":
    sys.exit(main())
