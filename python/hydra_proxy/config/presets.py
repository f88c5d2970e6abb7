"""The provider presets that ship in ``hydra_proxy/data/providers.toml``: one table per
provider, its quirks as columns, every one usable by name without a config
(``--provider deepseek``). A config's ``[providers.NAME]`` starts from one
(`providers.build_provider`).
"""

from __future__ import annotations

import sys
from functools import cache
from importlib import resources
from typing import Any

from .schema import PROVIDER

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["preset_row", "presets"]

# Columns only the shipped table uses (the others are config.schema.PROVIDER's).
_PRESET_ONLY = ("base_url_env", "keyless")


@cache
def presets() -> dict[str, dict[str, Any]]:
    """The shipped preset table, by provider name."""
    text = resources.files("hydra_proxy").joinpath("data/providers.toml").read_text("utf-8")
    table = tomllib.loads(text)
    for name, row in table.items():
        unknown = set(row) - set(PROVIDER) - set(_PRESET_ONLY)
        if unknown:  # a packaging bug, not a user error
            raise RuntimeError(f"providers.toml [{name}]: unknown columns {sorted(unknown)}")
    return table


def preset_row(name: str) -> dict[str, Any] | None:
    row = presets().get(name)
    if row is None:
        return None
    return {**row, "preset": name, "_base_url_from_preset": True}
