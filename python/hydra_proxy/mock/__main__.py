"""``python -m hydra_proxy.mock``: the mock upstream without the rest of the CLI."""

from __future__ import annotations

import argparse
import sys

from .cli import add_arguments, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hydra_proxy.mock",
        description="Mock LLM upstream speaking OpenAI Chat Completions and Anthropic Messages.",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
